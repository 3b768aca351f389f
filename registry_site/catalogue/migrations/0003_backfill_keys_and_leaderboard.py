"""Runs published before the workload/system keys get them, and every leaderboard row is built."""

from django.db import migrations


def forwards(apps, schema_editor):
    from registry_site.catalogue.backfill import backfill_keys
    from registry_site.catalogue.leaderboard import rebuild_all

    run, case, row, entry = (apps.get_model("registry_site", name)
                             for name in ("PublishedRun", "PublishedCase", "PublishedRow", "LeaderboardEntry"))
    if not run.objects.exists():
        return
    backfill_keys(run, case, row)
    rebuild_all(models=(run, case, entry))


class Migration(migrations.Migration):
    dependencies = [
        ("registry_site", "0002_catalogue_keys_status_leaderboard"),
        ("submissions", "0003_runner_hosts_and_requests"),
    ]

    operations = [migrations.RunPython(forwards, migrations.RunPython.noop)]
