"""Nothing is stored that cannot be served (issue 22 §1): a run whose ids sit at the edges of the identifier
grammar (benchpack/ids.py) goes through the real intake → validation → approval path, then every page and
API route reachable from the site is rendered, following links; none may answer 500, and the run's own
pages and boards answer 200. A case id with '/' never gets that far: validation refuses it."""

from __future__ import annotations

import json
import re
import shutil
from urllib.parse import urljoin, urlsplit

import pytest

from benchpack import ids
from tests.data_paths import REAL_RESULTS

pytestmark = pytest.mark.django_db

BASE = "2026-04-29-llama-server-smoke"
PACK_ID = "Z" + "a_-9" * 31 + "zzz"                     # 128 characters: the longest pack id
LONG_CASE = "A" + "-_9" * 32 + "zzz"                      # 100 characters: the longest case id
MODEL = "org_x/Sub.dir/Qwen2.5-Coder:7b@q4+k=m"        # every model-id character, three segments
RUNTIME = ("LM Studio (beta)", "0.3.1")
MAX_PAGES = 400


def _edge_result(tmp_path, cases: list[str], rate: float | None = 0.25) -> str:
    """The real smoke result (one row) as rows of `cases`, each also at a rate-lane level when `rate`."""
    target = tmp_path / "results" / "edge"
    shutil.copytree(REAL_RESULTS / BASE, target)
    (base,) = [json.loads(line) for line in (target / "run.jsonl").read_text().splitlines() if line.strip()]
    rows = []
    for case in cases:
        for lane in ([None, rate] if rate is not None else [None]):
            row = json.loads(json.dumps(base))
            row.update(pack={"id": PACK_ID, "version": "1.0.0"}, case=case, model=MODEL)
            if lane is not None:
                row["arrival_rate"] = lane  # a lane board key with '/': "<case> @rate=0.25/s"
            rows.append(row)
    (target / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (target / "run-metadata.json").write_text(json.dumps({"runtime": {"name": RUNTIME[0], "version": RUNTIME[1]}}))
    for path in [target, *target.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return "edge"


def _links(response) -> set[str]:
    kind = response.get("Content-Type", "")
    if response.streaming:
        return set()
    if "html" in kind:
        return set(re.findall(r'href="(/[^"#]*)"', response.content.decode()))
    if "json" in kind:
        return {value for value in re.findall(r'"(?:url|run_url|next|previous)":\s*"([^"]+)"', response.content.decode())}
    return set()


def test_every_page_and_api_route_serves_a_run_with_ids_at_the_grammar_edges(client, submit, bundle_archive,
                                                                               operator, tmp_path):
    from submissions import states
    from tests.service.vouch import approve
    from submissions.tasks import validate_submission

    for value, kind in ((PACK_ID, "pack id"), ("0", "case id"), (LONG_CASE, "case id"), (MODEL, "model id"),
                        (RUNTIME[0], "runtime name")):
        assert ids.is_valid(kind, value), (kind, value)
    submission = submit(bundle_archive(_edge_result(tmp_path, ["0", LONG_CASE])))
    assert validate_submission(str(submission.pk)) == states.QUARANTINED, submission.validation_report
    assert approve(submission.pk, operator)
    run = submission.published_runs.get()

    from django.urls import reverse

    must_answer = {
        f"/runs/{run.pk}/", f"/leaderboards/{PACK_ID}/", f"/leaderboards/{PACK_ID}/0/",
        f"/leaderboards/{PACK_ID}/{LONG_CASE}/", f"/leaderboards/{PACK_ID}/0%20@rate=0.25/s/",
        f"/leaderboards/{PACK_ID}/{LONG_CASE}%20@rate=0.25/s/",
        reverse("model_page", args=[MODEL]), reverse("runtime_page", args=[RUNTIME[0]]),
        f"/api/v1/runs/{run.pk}/", f"/api/v1/leaderboards/{PACK_ID}/", f"/api/v1/leaderboards/{PACK_ID}/0/",
        f"/api/v1/leaderboards/{PACK_ID}/0%20@rate=0.25/s/", reverse("api_model", args=[MODEL]),
        reverse("api_runtime", args=[RUNTIME[0]]),
    }
    seeds = {"/", "/leaderboards/", "/models/", "/runtimes/", "/hardware/", "/timelines/", "/api-docs/",
             "/api/v1/runs/", "/api/v1/cases/", "/api/v1/systems/", "/api/v1/leaderboards/", "/api/v1/models/",
             "/api/v1/runtimes/", "/api/v1/hardware-classes/", f"/depth-curves/{PACK_ID}/",
             f"/api/v1/runs/?model={MODEL}", f"/api/v1/cases/?pack={PACK_ID}", *must_answer}
    seen: dict[str, int] = {}
    queue = sorted(seeds)
    while queue and len(seen) < MAX_PAGES:
        url = queue.pop(0)
        if url in seen:
            continue
        response = client.get(url)
        seen[url] = response.status_code
        assert response.status_code < 500, (url, response.content[:500])
        for link in _links(response):
            parts = urlsplit(urljoin("http://testserver" + url, link))
            if parts.netloc not in ("testserver", "") or parts.path.startswith(("/static/", "/admin/", "/accounts/")):
                continue
            if any(step in parts.path for step in ("/withdraw/", "/unpublish/", "/republish/", "/flag/", "/unflag/")):
                continue
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            if target not in seen:
                queue.append(target)
    failing = {url: seen[url] for url in must_answer if seen.get(url) != 200}
    assert not failing, failing
    # the run's pages link its ids, and the links were followed
    assert any(LONG_CASE in url for url in seen if url.startswith("/leaderboards/") and seen[url] == 200)
    assert any("@rate=0.25/s" in url for url in seen if seen[url] == 200)


def test_a_case_id_with_a_slash_is_refused_at_validation_and_every_board_still_serves(client, submit, tmp_path):
    from benchpack.bundles.archives import pack_archive
    from benchpack.bundles.create import create_bundle
    from benchpack.errors import BenchpackError
    from submissions import states
    from submissions.tasks import validate_submission
    from tests.bundles.test_bundles_validate import _rewrite

    source = tmp_path / "results" / _edge_result(tmp_path, ["fix/repo"], rate=None)
    with pytest.raises(BenchpackError, match=r"line 1: row\.case-id: case: not a valid case id \('/' is not allowed\)"):
        create_bundle([source], tmp_path / "refused", "self-reported")
    # An archive made by hand (not by `benchpack`) reaches the registry; its validation refuses it.
    text = (source / "run.jsonl").read_text()
    (source / "run.jsonl").write_text(text.replace('"fix/repo"', '"fixrepo"'))
    bundle = create_bundle([source], tmp_path / "bundle", "self-reported")
    _rewrite(bundle, "runs/edge/run.jsonl", text)
    submission = submit(pack_archive(bundle, tmp_path / "slash.tar.gz"))
    assert validate_submission(str(submission.pk)) == states.INVALID
    submission.refresh_from_db()
    assert "row.case-id" in submission.error_codes()
    for url in ("/leaderboards/", f"/leaderboards/{PACK_ID}/", "/api/v1/leaderboards/"):
        assert client.get(url).status_code < 500, url


@pytest.mark.parametrize("url", ["/leaderboards/smoke-chat/a%2Fb/", "/leaderboards/smoke-chat/a/b/",
                                 "/api/v1/leaderboards/smoke-chat/a/b/", "/models/%2Fetc/", "/runtimes/x%0Ay/",
                                 "/api/v1/models/a//b/"])
def test_urls_outside_the_grammar_are_404_not_500(client, url):
    assert client.get(url).status_code == 404, url
