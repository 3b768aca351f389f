"""A cached hit learns the catalogue generation without SQL on PostgreSQL, and still never outlives a change by
more than the documented bound (registry_site/catalogue/generation.py; issue 34 item 4).

Real commits (transactional_db): the listener is another connection and sees only committed rows. Each test
asserts what holds on the database the suite runs on: on PostgreSQL the LISTEN/NOTIFY listener, on SQLite the
row read by every request (no listener is started there).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection, transaction
from django.http import JsonResponse
from django.test.utils import CaptureQueriesContext
from django.urls import path

from registry_site.catalogue import generation

ROOT = Path(__file__).resolve().parents[3]
URL = "/leaderboards/generation-test/"
RENDERS: list[int] = []
LAG_S = 5.0


def counted_view(request):
    RENDERS.append(1)
    return JsonResponse({"render": len(RENDERS)})


urlpatterns = [path(URL.lstrip("/"), counted_view)]
pytestmark = [pytest.mark.urls(__name__), pytest.mark.django_db(transaction=True)]

# A separate process commits a bump through the real code path; it prints CLOCK_MONOTONIC (shared by every
# process on Linux) right after its commit.
BUMP_ELSEWHERE = """
import json, time, django
django.setup()
from django.db import transaction
from registry_site.catalogue.generation import bump, read_generation
with transaction.atomic():
    bump()
committed = time.monotonic()
print(json.dumps({"committed": committed, "value": read_generation()}))
"""


def postgres() -> bool:
    return connection.vendor == "postgresql"


def commit_bump() -> None:
    with transaction.atomic():
        generation.bump()


def bump_in_another_process() -> dict:
    """Its commit time and value, as soon as it prints them (before the child's interpreter exits)."""
    settings_dict = connection.settings_dict
    if postgres():
        url = (f"postgres://{settings_dict['USER']}@{settings_dict['HOST'] or '127.0.0.1'}:"
               f"{settings_dict['PORT'] or 5432}/{settings_dict['NAME']}")
    else:
        url = f"sqlite:///{settings_dict['NAME']}"
    environ = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "registry_site.settings_test",
               "PYTHONUNBUFFERED": "1"}
    child = subprocess.Popen([sys.executable, "-c", BUMP_ELSEWHERE], cwd=ROOT, env=environ, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    line = child.stdout.readline()
    if not line:
        child.wait(timeout=60)
        raise AssertionError(child.stderr.read()[-2000:])
    child.stdout.close()
    child.stderr.close()
    child.wait(timeout=60)
    return json.loads(line)


def wait_until(predicate, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def fresh_listener():
    """This process's listener once it has read the committed generation (None on SQLite)."""
    listener = generation._listener()
    if listener is not None:
        committed = generation.read_generation()
        connection.close()  # this thread's snapshot must not matter to what follows
        wait_until(lambda: listener.fresh_value() == committed)
    return listener


def is_hit(response) -> bool:
    return response.get("X-Catalogue-Cache") == "hit"


@pytest.fixture
def listening(settings):
    settings.CATALOGUE_RESPONSE_CACHE = True
    settings.CATALOGUE_GENERATION_LISTEN = True
    generation.reset_listener()
    RENDERS.clear()
    commit_bump()  # the row exists and is committed: the listener (another connection) can read it
    yield settings
    generation.reset_listener()


def test_a_cached_hit_runs_no_sql_once_the_listener_has_the_generation(client, listening):
    assert not is_hit(client.get(URL))
    listener = fresh_listener()
    with CaptureQueriesContext(connection) as queries:
        hit = client.get(URL)
    assert is_hit(hit)
    if postgres():
        assert [q["sql"] for q in queries.captured_queries] == []  # was one: the generation read
        assert listener is not None and listener.connected.is_set()
    else:  # SQLite has no notifications: the row is read, as before
        assert listener is None and len(queries.captured_queries) == 1


def test_a_bump_committed_by_another_process_is_seen_by_notification(client, listening):
    """The bound is set to a minute (a heartbeat every 15 s), so neither a heartbeat read nor the fallback can
    be what brings the change: on PostgreSQL only NOTIFY can, within LAG_S here (milliseconds when idle; the
    margin is for a loaded machine)."""
    listening.CATALOGUE_GENERATION_MAX_STALE_MS = 60_000
    generation.reset_listener()
    client.get(URL)
    fresh_listener()
    assert is_hit(client.get(URL))
    bumped = bump_in_another_process()
    while True:
        with CaptureQueriesContext(connection) as queries:
            response = client.get(URL)
        if not is_hit(response):
            seen = time.monotonic()
            break
        assert time.monotonic() - bumped["committed"] < LAG_S, f"the cached response outlived the change by {LAG_S} s"
        assert len(queries.captured_queries) == (0 if postgres() else 1)
    assert response.json() == {"render": 2}
    assert seen - bumped["committed"] < LAG_S
    assert is_hit(client.get(URL))  # cached again, under the new generation


def test_requests_read_the_row_while_the_listener_is_down(client, listening):
    client.get(URL)
    listener = fresh_listener()
    if not postgres():
        assert listener is None
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [listener.backend_pid])
    wait_until(lambda: not listener.connected.is_set())
    # A change committed while nobody listens (no NOTIFY reaches this process)
    with connection.cursor() as cursor:
        cursor.execute('UPDATE "registry_site_cataloguegeneration" SET value = value + 1 WHERE id = 1')
    client.get(URL)  # rendered under the new generation, read from the row
    with CaptureQueriesContext(connection) as queries:
        hit = client.get(URL)
    assert is_hit(hit) and len(queries.captured_queries) == 1  # the fallback's row read
    assert RENDERS == [1, 1]  # the change was seen: one render per generation
    wait_until(lambda: listener.connected.is_set())  # back after RECONNECT_S
    fresh_listener()
    with CaptureQueriesContext(connection) as queries:
        assert is_hit(client.get(URL))
    assert queries.captured_queries == []


def test_a_value_older_than_the_bound_is_not_used(monkeypatch, listening):
    """Whatever the database: a listener whose last read started more than max_stale_s ago (a lost connection
    not noticed yet, a thread starved of CPU) is not trusted; the request reads the row."""
    stale = generation.GenerationListener({}, max_stale_s=2.0)  # never started: nothing refreshes it
    monkeypatch.setattr(generation, "_LISTENER", stale)
    committed = generation.read_generation()
    stale.state = (committed - 1, time.monotonic() - 2.5)
    with CaptureQueriesContext(connection) as queries:
        assert generation.current_generation() == committed
    assert len(queries.captured_queries) == 1
    stale.state = (committed - 1, time.monotonic() - 1.5)  # within the bound: trusted, no SQL
    with CaptureQueriesContext(connection) as queries:
        assert generation.current_generation() == committed - 1
    assert queries.captured_queries == []


def test_the_committing_process_uses_its_bump_at_once(monkeypatch, listening):
    listener = generation.GenerationListener({}, max_stale_s=60.0)  # no thread: only on_commit can move it
    monkeypatch.setattr(generation, "_LISTENER", listener)
    committed = generation.read_generation()
    listener.state = (committed, time.monotonic())
    with transaction.atomic():
        generation.bump()
        assert generation.current_generation() == committed  # not before the commit
    assert generation.current_generation() == committed + 1
    with pytest.raises(RuntimeError), transaction.atomic():
        generation.bump()
        raise RuntimeError("rolled back")
    assert generation.current_generation() == committed + 1


def test_bumps_at_one_instant_into_a_database_without_the_row_all_commit():
    # A flushed database has no generation row (migration 0004 makes it). Processes refreshing at once each
    # bumped it; when bump read "no row" and then created it, all but one failed on its primary key. One
    # INSERT … ON CONFLICT makes the first create it and the rest add to it.
    import threading

    from django.db import close_old_connections

    from registry_site.catalogue.models import CatalogueGeneration

    CatalogueGeneration.objects.all().delete()
    start, errors = threading.Barrier(4), []

    def bump_in_own_transaction():
        try:
            start.wait(5)
            with transaction.atomic():
                generation.bump()
        except Exception as exc:  # noqa: BLE001 - the test reports whatever a bump raised
            errors.append(exc)
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=bump_in_own_transaction) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    assert CatalogueGeneration.objects.get(pk=1).value == 2 + 3  # created at 2, then three bumps
