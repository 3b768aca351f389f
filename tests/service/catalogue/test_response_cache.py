"""Cached public responses never outlive the data they show (registry_site/catalogue/cache.py)."""

import pytest
from django.test import override_settings
from django.urls import path

from registry_site.catalogue import cache, transitions
from registry_site.catalogue import leaderboard as lb
from registry_site.catalogue.models import CatalogueGeneration, PublishedRun
from registry_site.urls import urlpatterns as site_urls
from rest_framework.response import Response
from rest_framework.throttling import AnonRateThrottle
from rest_framework.views import APIView


def board_view(request):
    """A stand-in for the board page/API: this branch tests the cache, not the pages."""
    from django.http import JsonResponse

    entries = lb.leaderboard_entries(request.GET.get("pack", "runtime-sweep"), "short")
    return JsonResponse({"runs": [e.representative_run_id for e in entries]})


class ThreePerMinute(AnonRateThrottle):
    rate = "3/minute"


class ThrottledBoard(APIView):
    throttle_classes = [ThreePerMinute]

    def get(self, request):
        return Response({"runs": [e.representative_run_id for e in lb.leaderboard_entries("runtime-sweep", "short")]})


def set_cookie_view(request):
    from django.http import HttpResponse

    response = HttpResponse("with a cookie")
    response.set_cookie("something", "1")
    return response


urlpatterns = [
    path("leaderboards/test/", board_view),
    path("leaderboards/cookie/", set_cookie_view),
    path("api/v1/leaderboards/test/", ThrottledBoard.as_view()),
    *site_urls,  # approval reverses the site's URLs
]

pytestmark = pytest.mark.urls(__name__)
ON = override_settings(CATALOGUE_RESPONSE_CACHE=True)


@pytest.fixture
def run(approve_bundle, submitter):
    approve_bundle("2026-04-29-llama-server-runtime", user=submitter)
    return PublishedRun.objects.get()


@ON
def test_a_second_anonymous_get_is_a_hit_with_the_same_body(client, run):
    first = client.get("/leaderboards/test/")
    second = client.get("/leaderboards/test/")
    assert first.json() == second.json() == {"runs": [run.pk]}
    assert "X-Catalogue-Cache" not in first and second["X-Catalogue-Cache"] == "hit"


@ON
def test_a_withdrawal_is_visible_at_once_on_a_cached_url(client, run, submitter):
    assert client.get("/leaderboards/test/").json() == {"runs": [run.pk]}
    assert client.get("/leaderboards/test/")["X-Catalogue-Cache"] == "hit"
    before = CatalogueGeneration.objects.get().value
    assert transitions.withdraw(run.pk, submitter, "wrong model")
    assert CatalogueGeneration.objects.get().value > before
    after = client.get("/leaderboards/test/")
    assert after.json() == {"runs": []} and "X-Catalogue-Cache" not in after


@ON
def test_an_approval_bumps_the_generation(client, run, approve_bundle, make_user):
    client.get("/leaderboards/test/")
    before = CatalogueGeneration.objects.get().value
    approve_bundle("2026-04-28-mlx-lm-runtime", user=make_user("bob@example.org"))
    assert CatalogueGeneration.objects.get().value > before
    assert "X-Catalogue-Cache" not in client.get("/leaderboards/test/")


@ON
def test_logged_in_users_tokens_and_conditional_requests_bypass_it(client, run, submitter):
    client.get("/leaderboards/test/")
    assert client.get("/leaderboards/test/", HTTP_AUTHORIZATION="Token abc").get("X-Catalogue-Cache") is None
    assert client.get("/leaderboards/test/", HTTP_IF_NONE_MATCH='"x"').get("X-Catalogue-Cache") is None
    client.force_login(submitter)
    assert client.get("/leaderboards/test/").get("X-Catalogue-Cache") is None


@ON
def test_responses_that_set_cookies_are_not_kept(client, db):
    client.get("/leaderboards/cookie/")
    assert client.get("/leaderboards/cookie/").get("X-Catalogue-Cache") is None


@ON
def test_a_cached_api_answer_still_counts_against_the_views_throttle(client, run):
    from django.core.cache import cache as django_cache

    django_cache.clear()
    statuses = [client.get("/api/v1/leaderboards/test/").status_code for _ in range(5)]
    assert statuses == [200, 200, 200, 429, 429]


def test_it_is_off_when_the_setting_is(client, run):
    client.get("/leaderboards/test/")
    assert client.get("/leaderboards/test/").get("X-Catalogue-Cache") is None


def test_the_lru_keeps_within_its_byte_budget():
    lru = cache.ResponseLRU(max_bytes=10)
    for key in range(5):
        lru.put(key, ("entry", key), 4)
    assert lru.bytes <= 10 and lru.get(0) is None and lru.get(4) is not None


@ON
def test_a_hit_keeps_the_headers_the_inner_middleware_set(client, run):
    first = client.get("/leaderboards/test/")
    hit = client.get("/leaderboards/test/")
    assert hit["X-Catalogue-Cache"] == "hit"
    assert hit["X-Frame-Options"] == first["X-Frame-Options"]
    assert hit["Content-Type"] == first["Content-Type"]


def test_one_render_per_key_the_others_wait_for_it():
    """Issue 34 item 4: concurrent misses of one key render once; the rest wait for that render's bytes."""
    import threading

    from registry_site.catalogue.cache import SingleFlight

    flight, renders, served = SingleFlight(), [], []
    waiting = threading.Semaphore(0)

    def ask():
        running = flight.claim("key")
        if running is None:
            renders.append(1)
            for _ in range(3):  # a render slow enough for the three others to arrive and wait
                assert waiting.acquire(timeout=10)
            flight.release("key")
        else:
            waiting.release()
            served.append(running.wait(10))

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(renders) == 1 and served == [True, True, True]
    assert flight.claim("key") is None  # released: the next miss renders again
