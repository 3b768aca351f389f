"""`/api/v1/runs/`'s date filters and publication order (h45d, issue 34 item 4) select and order exactly as before.

`since`/`until` became ranges on `published_at` (a day's bounds in UTC) instead of a `__date` cast of every
row, and `?order=(-)published` gained a tie-break by id in the same direction. Over a small import whose runs
are re-dated onto UTC midnights, a microsecond either side of them and midday — several runs at each instant,
so publication times tie — with two runs unpublished: for every since/until pair around those days, alone and
with each equality filter, in every publication order, the API's runs (all pages) and `count` equal a
reference queryset over the runs that filters by the `__date` lookups the list used before and sorts by
(published_at, id).
"""

from __future__ import annotations

import datetime as dt
import io
import itertools

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from registry_site.catalogue import transitions
from registry_site.catalogue.models import PublishedRun

pytestmark = pytest.mark.django_db
IMPORT = ("--cases", "160", "--systems", "6", "--seed", "3", "--rows-per-case", "2", "--batch-runs", "30")
FIRST_DAY = dt.date(2026, 3, 1)
DAYS = 3


def _midnight(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time.min, tzinfo=dt.timezone.utc)


def instants() -> list[dt.datetime]:
    """UTC midnights, a microsecond before and after each, and midday: the instants a day's bounds cut between."""
    tick = dt.timedelta(microseconds=1)
    found = []
    for offset in range(DAYS + 1):
        midnight = _midnight(FIRST_DAY + dt.timedelta(days=offset))
        found += [midnight - tick, midnight, midnight + tick, midnight + dt.timedelta(hours=12)]
    return found


@pytest.fixture
def dated_catalogue(operator):
    call_command("seed_catalogue", *IMPORT, stdout=io.StringIO())
    runs = list(PublishedRun.objects.order_by("pk"))
    at = instants()
    assert len(runs) >= 2 * len(at)  # every instant held by two runs or more: publication times tie
    for index, run in enumerate(runs):
        # Not in id order: a tie-break by id is then visible in the answer, not implied by publication order.
        PublishedRun.objects.filter(pk=run.pk).update(published_at=at[(index * 7) % len(at)])
    for run in runs[3:5]:
        assert transitions.unpublish(run.pk, operator, "a duplicate")
    return runs


def reference(query: dict) -> list[int]:
    """The run ids the list answers for `query`, as today's code selects them (the `__date` lookups) and in
    the order the list gives: newest id first by default, else (published_at, id) in the asked direction."""
    runs = PublishedRun.objects.public()
    for name, value in query.items():
        if name == "since":
            runs = runs.filter(published_at__date__gte=value)
        elif name == "until":
            runs = runs.filter(published_at__date__lte=value)
        elif name == "imported":  # only `exclude` is asked here
            runs = runs.filter(imported_from="")
        elif name != "order":
            runs = runs.filter(**{"pack_id" if name == "pack" else name: value})
    order = query.get("order")
    if order == "-published":
        return list(runs.order_by("-published_at", "-id").values_list("id", flat=True))
    if order == "published":
        return list(runs.order_by("published_at", "id").values_list("id", flat=True))
    return list(runs.order_by("-id").values_list("id", flat=True))


def answered(client, query: dict, page_size: int) -> tuple[int, list[int]]:
    """The list's count and every run id it answers for `query`, page after page."""
    ids, page, count = [], 1, None
    while True:
        cache.clear()  # the throttle's counts: hundreds of requests from one address
        response = client.get("/api/v1/runs/", {**query, "page_size": str(page_size), "page": str(page)})
        assert response.status_code == 200, (query, page, response.content[:300])
        body = response.json()
        assert count in (None, body["count"]), query
        count = body["count"]
        ids += [run["id"] for run in body["results"]]
        if not body["next"]:
            return count, ids
        page += 1


def date_queries() -> list[dict]:
    days = [FIRST_DAY + dt.timedelta(days=offset) for offset in range(-1, DAYS + 2)]
    queries = [{"since": str(day)} for day in days] + [{"until": str(day)} for day in days]
    queries += [{"since": str(first), "until": str(last)} for first, last in itertools.product(days, days)
                if (last - first).days in (-1, 0, 2)]
    return queries + [{"since": "0001-01-01"}, {"until": "9999-12-31"}, {"since": "9999-12-31"},
                      {"until": "0001-01-01"}]


def test_date_filters_and_publication_order_answer_as_the_reference(client, dated_catalogue):
    public = PublishedRun.objects.public()
    run = public.order_by("pk").first()
    filters = [{}, {"pack": run.pack_id}, {"model": run.model},
               {"hardware_class": run.hardware_class, "runtime": run.runtime},
               {"provenance": run.provenance}, {"imported": "exclude"}, {"pack": run.pack_id, "model": run.model}]
    times = list(public.values_list("published_at", flat=True))
    assert len(set(times)) < len(times)  # ties among public runs
    checked = nonempty = 0
    for dates, extra, order in itertools.product(date_queries(), filters, (None, "-published", "published")):
        query = {**dates, **extra, **({"order": order} if order else {})}
        expected = reference(query)
        # Some in pages of 5: where each page's cut falls must follow the same order too.
        count, ids = answered(client, query, 5 if checked % 9 == 0 else 500)
        assert (count, ids) == (len(expected), expected), query
        checked += 1
        nonempty += bool(expected)
    assert checked == len(date_queries()) * 7 * 3 and nonempty > checked // 3


def test_a_day_is_its_utc_bounds(client, dated_catalogue):
    """The bounds themselves: a run at a UTC midnight is of that day; a microsecond before it, of the day before."""
    day = FIRST_DAY + dt.timedelta(days=1)
    at_midnight = set(PublishedRun.objects.public().filter(published_at=_midnight(day)).values_list("id", flat=True))
    before = set(PublishedRun.objects.public().filter(published_at=_midnight(day) - dt.timedelta(microseconds=1))
                 .values_list("id", flat=True))
    assert at_midnight and before
    _, on_the_day = answered(client, {"since": str(day), "until": str(day)}, 500)
    assert at_midnight <= set(on_the_day) and not before & set(on_the_day)
    _, day_before = answered(client, {"until": str(day - dt.timedelta(days=1))}, 500)
    assert before <= set(day_before) and not at_midnight & set(day_before)


def test_date_filters_are_ranges_on_published_at(client, dated_catalogue):
    """No cast of published_at to a date in the list's SQL (an index on published_at serves a range, not a cast)."""
    cache.clear()
    with CaptureQueriesContext(connection) as captured:
        response = client.get("/api/v1/runs/", {"since": str(FIRST_DAY), "until": str(FIRST_DAY), "order": "-published"})
    assert response.status_code == 200
    listing = [q["sql"] for q in captured.captured_queries if "published_at" in q["sql"] and "WHERE" in q["sql"]]
    assert listing
    for sql in listing:
        where = sql.split("WHERE", 1)[1]
        assert "published_at\" >= " in where and "published_at\" < " in where, sql
        assert "::date" not in where and "cast_date" not in where.lower() and "AT TIME ZONE" not in where, sql
