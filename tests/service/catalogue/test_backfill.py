"""Runs published before the keys existed get them (migration 0003, rebuild_leaderboards --keys)."""

import pytest
from django.core.management import call_command

from registry_site.catalogue.models import LeaderboardEntry, PublishedCase, PublishedRun

ENTRY_FIELDS = ("workload_key", "system_key", "case", "run_count", "decode_tps", "decode_tps_min", "answered",
                "correct", "model", "hardware_class", "cache_state")


def _entries():
    return sorted(LeaderboardEntry.objects.values_list(*ENTRY_FIELDS))


def _forget_keys():
    PublishedRun.objects.update(system_key="", system_fields=None, pack_workload_key="")
    PublishedCase.objects.update(workload_key="", workload_fields=None, system_key="", cache_state="")
    LeaderboardEntry.objects.all().delete()


def test_the_rebuild_command_recomputes_keys_and_rows_equal_to_publishing(approve_bundle, make_user):
    approve_bundle("2026-04-29-llama-server-runtime")
    approve_bundle("2026-04-30-llama-server-desktop-django-wrap", user=make_user("bob@example.org"))
    published = _entries()
    assert published
    _forget_keys()
    call_command("rebuild_leaderboards", "--keys", stdout=open("/dev/null", "w"))
    assert _entries() == published


@pytest.mark.django_db(transaction=True)
def test_the_migration_backfills_runs_published_before_it(approve_bundle):
    approve_bundle("2026-04-29-llama-server-runtime")
    published = _entries()
    _forget_keys()
    call_command("migrate", "registry_site", "0002", verbosity=0)
    call_command("migrate", "registry_site", verbosity=0)
    assert _entries() == published
    assert not PublishedCase.objects.filter(workload_key="").exists()
