"""Limits and throttles count in a shared cache (the database by default), the
client address behind the proxy cannot be chosen with X-Forwarded-For, the
per-user upload limit is atomic, and emails name the configured site."""

from __future__ import annotations

import threading

import pytest
from django.core import mail
from django.core.cache import cache
from django.db import connection


def test_the_default_cache_is_the_database_shared_by_every_process(settings, db):
    assert settings.CACHES["default"]["BACKEND"] == "django.core.cache.backends.db.DatabaseCache"
    cache.set("shared-key", 42)
    with connection.cursor() as cursor:  # the row is in the database, where other processes read it
        cursor.execute("SELECT COUNT(*) FROM benchpack_cache")
        assert cursor.fetchone()[0] >= 1


def test_failed_logins_are_limited_per_address_in_the_shared_cache(client, make_user):
    refused = []
    for attempt in range(11):
        response = client.post("/accounts/login/", {"login": f"nobody{attempt}@example.org", "password": "wrong"})
        refused.append(b"Too many failed login attempts" in response.content)
    assert refused == [False] * 10 + [True]  # "10/m/ip"
    with connection.cursor() as cursor:  # counted in the database cache, not in this process
        cursor.execute("SELECT COUNT(*) FROM benchpack_cache")
        assert cursor.fetchone()[0] >= 1
    cache.clear()  # as after the window: a fresh count
    response = client.post("/accounts/login/", {"login": "nobody@example.org", "password": "wrong"})
    assert b"Too many failed login attempts" not in response.content


def test_a_client_cannot_pick_its_throttle_key_with_x_forwarded_for(settings, rf):
    from rest_framework.throttling import AnonRateThrottle

    throttle = AnonRateThrottle()
    spoofed = rf.get("/api/v1/runs/", HTTP_X_FORWARDED_FOR="203.0.113.7", REMOTE_ADDR="198.51.100.1")
    assert throttle.get_ident(spoofed) == "198.51.100.1"  # local default: NUM_PROXIES = 0
    # behind Traefik (NUM_PROXIES=1) the address Traefik appended wins, not what the client wrote
    from rest_framework.settings import api_settings

    api_settings.NUM_PROXIES = 1
    try:
        behind = rf.get("/api/v1/runs/", HTTP_X_FORWARDED_FOR="203.0.113.7, 198.51.100.9", REMOTE_ADDR="127.0.0.1")
        assert throttle.get_ident(behind) == "198.51.100.9"
    finally:
        api_settings.NUM_PROXIES = settings.REST_FRAMEWORK["NUM_PROXIES"]
    assert settings.ALLAUTH_TRUSTED_PROXY_COUNT == settings.NUM_PROXIES


def test_api_throttles_count_in_the_shared_cache(client, settings, db):
    from rest_framework.settings import api_settings
    from rest_framework.throttling import AnonRateThrottle

    from django.core.cache import cache

    # The cache table is no model: tests that commit (transaction=True) leave their throttle counts in it,
    # and on PostgreSQL a worker's earlier tests had left three.
    cache.clear()
    AnonRateThrottle.THROTTLE_RATES = {**api_settings.DEFAULT_THROTTLE_RATES, "anon": "3/minute"}
    try:
        codes = [client.get("/api/v1/runs/").status_code for _ in range(5)]
    finally:
        AnonRateThrottle.THROTTLE_RATES = api_settings.DEFAULT_THROTTLE_RATES
    assert codes == [200, 200, 200, 429, 429]
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM benchpack_cache WHERE cache_key LIKE '%throttle_anon%'")
        assert cursor.fetchone()[0] == 1


def test_emails_name_the_configured_site_not_example_com(client, settings, db):
    from django.contrib.sites.models import Site
    from django.core.management import call_command

    settings.SITE_URL = "https://registry.benchpack.test"
    call_command("migrate", verbosity=0)  # the post-migrate step names the site
    Site.objects.clear_cache()
    assert Site.objects.get_current().domain == "registry.benchpack.test"
    client.post("/accounts/signup/", {"email": "dora@example.org", "password1": "a long passphrase 1",
                                      "password2": "a long passphrase 1"})
    body = mail.outbox[-1].body
    assert "registry.benchpack.test" in body and "example.com" not in body


@pytest.mark.django_db(transaction=True)
def test_thirty_concurrent_uploads_under_a_limit_of_ten_let_exactly_ten_through(settings, make_user, tmp_path):
    """The count and the insert are one transaction holding the user's row (or,
    on SQLite, the write lock from BEGIN): before, 16 of 30 got through."""
    import gzip
    import os

    from submissions.intake import UploadRefused, receive_upload
    from submissions.models import Submission

    settings.SUBMISSION_RATE_LIMIT_PER_HOUR = 10
    user = make_user("eve@example.org")
    archives = [gzip.compress(os.urandom(64)) for _ in range(30)]  # distinct bytes; never validated here
    outcomes = []
    barrier = threading.Barrier(30)

    def upload(data):
        barrier.wait()
        try:
            receive_upload(user, "b.tar.gz", data)
            outcomes.append(201)
        except UploadRefused as refused:
            outcomes.append(refused.status)
        except Exception as exc:  # noqa: BLE001 - a 500 would show here
            outcomes.append(repr(exc))
        finally:
            connection.close()

    settings.CELERY_TASK_ALWAYS_EAGER = True
    threads = [threading.Thread(target=upload, args=(data,)) for data in archives]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes, key=str) == [201] * 10 + [429] * 20
    assert Submission.objects.filter(submitter=user).count() == 10
