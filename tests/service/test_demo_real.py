"""Issue 32 item 2: beside its scripted systems the demo publishes real ones — the seed's result directories
measured on an Apple M5 Max, and (when scripts/llama-server.sh has built it) a real llama-server run on this
machine — as what they are: real, self-reported uploads through the same submit → validate → review path as
`benchpack submit`, never labelled demo data. And a re-run by the same owner on the same machine is said to
be one, not an independent reproduction (issue 32 item 5)."""

from __future__ import annotations

import filecmp
from types import SimpleNamespace

import pytest

from registry_site.catalogue.models import LeaderboardEntry, PublishedRun
from registry_site.demo_real import publish, this_machine
from submissions.review import PLAUSIBILITY_OVERRIDE
from tests.data_paths import REAL_RESULTS
from tests.environment import unavailable
from tests.realserver import BUILD_HINT, missing_files

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_demo_reads_byte_for_byte_copies_of_the_repositorys_real_results():
    """The demo reads only what lives beside its code; its copies must stay the test data's bytes."""
    ours = [p.name for p in publish.result_dirs()]
    assert ours == sorted(p.name for p in REAL_RESULTS.iterdir() if p.is_dir()) and len(ours) == 5
    for name in ours:
        compared = filecmp.dircmp(publish.RESULTS / name, REAL_RESULTS / name)
        assert not (compared.left_only or compared.right_only or compared.diff_files), name
        _, mismatch, errors = filecmp.cmpfiles(publish.RESULTS / name, REAL_RESULTS / name, compared.common_files,
                                               shallow=False)
        assert not mismatch and not errors, (name, mismatch, errors)
    assert "Apple M5 Max" in (publish.RESULTS.parent / "README.md").read_text()


def test_the_real_results_are_published_as_real_self_reported_uploads(live_server, operator, client):
    said: list[str] = []
    assert publish.publish_real_results(live_server.url, operator, say=said.append) == 5
    [line] = said
    assert "not demo data" in line and "Apple M5 Max" in line
    runs = list(PublishedRun.objects.filter(submission__submitter__username=publish.REAL_SUBMITTER).order_by("label"))
    assert len(runs) == 5
    assert {(r.is_demo, r.provenance, r.imported_from) for r in runs} == {(False, "self-reported", "")}
    assert sorted({(r.pack_id, r.pack_version) for r in runs}) == [
        ("desktop-django-wrap", "0.1.5"), ("runtime-sweep", "0.1.0"), ("smoke-chat", "0.1.0")]
    # the M5 Max is in the chip table now: every run judged against its bounds, none needing an override
    assert {r.plausibility_status for r in runs} == {"plausible"}
    assert not runs[0].submission.events.filter(reason__startswith=PLAUSIBILITY_OVERRIDE).exists()
    assert {r.accelerator for r in runs} == {"Apple M5 Max"}
    # boards of their own: the seed's runtime-sweep 0.1.0 is not the bundled pack's workload
    sweep = LeaderboardEntry.objects.filter(pack_id="runtime-sweep", case="")
    assert sweep.exists() and not sweep.filter(is_demo=True).exists()
    page = client.get(f"/runs/{runs[0].pk}/").content.decode()
    assert "self-reported" in page and "badge-demo" not in page

    again: list[str] = []
    assert publish.publish_real_results(live_server.url, operator, say=again.append) == 0
    assert again == ["real results already present; skipping"]


def test_without_llama_server_the_demo_says_so_in_one_line(tmp_path, operator):
    script = tmp_path / "llama-server.sh"
    script.write_text(f"echo {tmp_path}/no-such-llama-server; echo {tmp_path}/no-such-model.gguf\n")
    for path in (script, tmp_path / "not-here.sh"):
        said: list[str] = []
        assert this_machine.publish_this_machine("http://127.0.0.1:9", operator, say=said.append, script=path) == 0
        [line] = said
        assert line.startswith("real run on this machine: skipped — llama-server is not built here")
        assert "bash scripts/llama-server.sh builds it once" in line
    assert not PublishedRun.objects.exists()


@pytest.mark.real_server
def test_with_llama_server_the_demo_publishes_a_real_run_on_this_machine(live_server, operator, tmp_path):
    if missing_files():
        unavailable(f"real llama-server unavailable; {BUILD_HINT}")  # skips here, fails under CI
    from benchpack.registry.fingerprint import hardware_class
    from benchpack.run.hardware import collect_hardware

    said: list[str] = []
    assert this_machine.publish_this_machine(live_server.url, operator, say=said.append, log_dir=tmp_path) == 1
    [run] = PublishedRun.objects.all()
    assert (run.pack_id, run.runtime_name, run.is_demo) == ("smoke-chat", "llama-server", False)
    assert run.hardware_class == hardware_class(collect_hardware())  # this machine, as probed
    assert run.model_quantization == "Q4_1" and run.ok_count == run.row_count == 1
    assert run.plausibility_status in ("plausible", "unchecked")  # never implausible: it is a real measurement
    assert said == [said[-1]] and said[-1].startswith("real run on this machine: smoke-chat against llama-server (")
    assert "uploaded by the operator, published in" in said[-1]
    again: list[str] = []
    assert this_machine.publish_this_machine(live_server.url, operator, say=again.append) == 0
    assert again == ["real run on this machine already present; skipping"]


def _evidence(independent: bool, reasons: list[str]):
    return SimpleNamespace(independent=independent, reasons=reasons, reproduction_id=88,
                           get_verdict_display=lambda: "Reproduced")


def test_the_console_calls_a_same_owner_re_run_what_it_is():
    from submissions.runqueue.demo import reproduction_words

    same = reproduction_words(1, _evidence(False, ["reproduced by the same owner: the same submitter measured "
                                                   "both"]), 12)
    assert "(independent" not in same and "not an independent reproduction" in same
    assert "the same submitter measured both" in same and "another owner on another host" in same
    assert "(independent: another owner on another host)" in reproduction_words(1, _evidence(True, []), 12)


def test_a_real_board_of_a_version_not_bundled_never_opens_the_packs_page(tmp_path, submit, bundle_archive, operator,
                                                                          client):
    """The seed's real desktop-django-wrap 0.1.5 run (its content is not bundled) is a board of its own; the pack's
    page opens on the bundled 1.0.0's board, even when that one holds demo rows only (real-first stops at the
    version: a visitor is shown what `benchpack run` measures today)."""
    import json
    import shutil

    from registry_site.catalogue import leaderboard as lb
    from submissions.models import Submission
    from submissions.tasks import validate_submission
    from tests.service.vouch import SCRIPTED_REASON, approve

    seed = "2026-04-30-llama-server-desktop-django-wrap"
    today = tmp_path / "results" / "demo-wrap-1.0.0"
    shutil.copytree(REAL_RESULTS / seed, today)
    rows = [json.loads(line) for line in (today / "run.jsonl").read_text().splitlines() if line.strip()]
    for row in rows:
        row["pack"]["version"] = "1.0.0"
    (today / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (today / "run-metadata.json").write_text(json.dumps({"runtime": {"name": "benchpack-refserver"}, "demo": True}))
    for name, demo in ((seed, False), (today.name, True)):
        submission = submit(bundle_archive(name))
        validate_submission(str(submission.pk))
        Submission.objects.filter(pk=submission.pk).update(is_demo=demo)
        assert approve(submission.pk, operator, SCRIPTED_REASON)
    workloads = lb.workloads_of("desktop-django-wrap")
    assert [(w.pack_version, w.demo_only) for w in workloads] == [("1.0.0", True), ("0.1.5", False)]
    [board] = [b for b in lb.boards() if (b["pack_id"], b["case"]) == ("desktop-django-wrap", "")]
    assert board["workloads"] == 2 and board["systems"] == 1
    page = client.get("/leaderboards/desktop-django-wrap/").content.decode()
    assert "1.0.0" in page and "badge-demo" in page
