"""The README's "CLI in five minutes", end to end (issue 32 item 3): a scripted endpoint that looks like
llama-server with a 4096-token context, `benchpack run runtime-sweep` with every lane (the deeper
depths do not fit and are skipped), a bundle, an upload, validation and approval — and the run is
ranked on the pack's main board (the one /leaderboards/runtime-sweep/ opens with), beside runs that
ran no lanes at all, and its run page says where it is ranked, with links.
"""

from __future__ import annotations

import pytest

from benchpack import cli
from benchpack.bundles.archives import pack_archive
from benchpack.refserver.server import LIKE_LLAMA_SERVER, RefServer
from registry_site.catalogue.models import LeaderboardEntry, PublishedRun
from submissions import states
from tests.service.vouch import approve

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def _publish(tmp_path, capsys, submit, operator, capture, out, *run_args):
    assert cli.main(["run", "runtime-sweep", "--adapter", "openai-chat", *run_args, "--out", str(out)]) == 0
    printed = capsys.readouterr()
    bundle = tmp_path / f"{out.name}-bundle"
    assert cli.main(["registry", "bundle", "create", "--out", str(bundle), "--provenance", "self-reported",
                     str(out)]) == 0
    assert cli.main(["registry", "bundle", "validate", str(bundle)]) == 0
    capsys.readouterr()
    with capture(execute=True):
        submission = submit(pack_archive(bundle, tmp_path / f"{out.name}.tar.gz"))
    submission.refresh_from_db()
    assert submission.state == states.QUARANTINED, submission.validation_report
    assert approve(submission.pk, operator) is True
    return PublishedRun.objects.get(submission=submission), printed


def test_a_readme_run_that_skipped_deep_depths_ranks_on_the_main_board(
        tmp_path, capsys, submit, operator, client, django_capture_on_commit_callbacks):
    capture = django_capture_on_commit_callbacks
    with RefServer(**LIKE_LLAMA_SERVER) as server:
        # two systems that ran the base cases only: on their own they would make the main board
        for model in ("other-a", "other-b"):
            _publish(tmp_path, capsys, submit, operator, capture, tmp_path / "results" / model, "--model", model,
                     "--endpoint", server.url, "--lanes", "base", "--repetitions", "1")
        # the README's command: every lane, a 4096-token context
        run, printed = _publish(tmp_path, capsys, submit, operator, capture, tmp_path / "results" / "ref-a",
                                "--model", "refserver-model", "--endpoint", server.url)
    assert "skip" in (printed.out + printed.err).lower()  # the deeper depths did not fit, and it said so
    depths = {c.case for c in run.cases.all() if "@depth=" in c.case}
    assert depths and not any(c.endswith(("=8192", "=16384", "=32768")) for c in depths), depths

    # the main board (what /leaderboards/runtime-sweep/ opens with) ranks all three systems
    board = client.get("/api/v1/leaderboards/runtime-sweep/").json()
    assert board["board"]["workload"]["key"] == run.pack_workload_key
    assert {r["model"] for r in board["results"]} == {"other-a", "other-b", "refserver-model"}
    assert "refserver-model" in client.get("/leaderboards/runtime-sweep/").content.decode()
    # lanes compared only with like lanes: a depth board holds only the run that ran that depth
    [lane] = LeaderboardEntry.objects.filter(system_key=run.system_key, case__contains="@depth=1024")
    assert LeaderboardEntry.objects.filter(workload_key=lane.workload_key).count() == 1

    # the run page says where the run is ranked, with links that open those boards
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Where this run is ranked" in page
    assert 'href="/leaderboards/runtime-sweep/">runtime-sweep · whole pack</a>: <strong>#' in page
    assert "runtime-sweep · short @depth=1024" in page
    assert client.get("/leaderboards/runtime-sweep/short%20@depth=1024/").status_code == 200
