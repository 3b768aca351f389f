"""One run, every surface, the same figures.

A real `benchpack run` against the scripted endpoint goes through the CLI, a
bundle, an upload, validation and approval; then each case's decode figure
(1/tpot_s, benchpack.results.metrics) and TTFT are read back from the CLI
summary, `report --json`, `compare --json`, `registry query`, the run page,
the leaderboard (page and API) and the run API. Every JSON value is the same
number, and every page shows the digits the metric registry prints for it.
Counts too: systems per board (home page = board = API), runs, answered and
correct. Runs on SQLite and, with DATABASE_URL, on PostgreSQL.
"""

from __future__ import annotations

import json
import shutil

import pytest

from benchpack import cli
from benchpack.bundles.archives import pack_archive
from benchpack.bundles.create import create_bundle
from benchpack.refserver.server import RefServer
from benchpack.results.metrics import metric
from registry_site.catalogue.models import PublishedRun
from registry_site.catalogue.templatetags.catalogue import sig
from submissions import states
from tests.service.vouch import approve

pytestmark = pytest.mark.django_db

REPLY = ("The capital of France is Paris. It sits on the Seine, and this scripted answer is long enough "
         "for a decode rate to mean something.")
FIGURES = ("decode_rate", "ttft_s")


def _json(capsys, *argv) -> object:
    assert cli.main([*argv]) == 0
    return json.loads(capsys.readouterr().out)


def _run(tmp_path, capsys, endpoint: str, model: str):
    out = tmp_path / "results" / "scripted-sweep"
    assert cli.main(["run", "runtime-sweep", "--adapter", "openai-chat", "--model", model,
                     "--endpoint", endpoint, "--out", str(out), "--lanes", "base"]) == 0
    return out, capsys.readouterr().out


def test_every_surface_shows_the_same_figure_for_every_case(tmp_path, capsys, submit, operator, client,
                                                            django_capture_on_commit_callbacks):
    with RefServer(responses=[REPLY], ttft_s=0.01, itl_s=0.002) as server:
        run_dir = _run(tmp_path, capsys, server.openai_url, "scripted-model")
    assert "Scripted endpoint — demo data" in run_dir[1]  # the CLI says what it is (issue 32 item 8)
    run = _check_every_surface(run_dir, tmp_path, capsys, submit, operator, client, django_capture_on_commit_callbacks)
    assert run.plausibility_status == "unchecked"  # a scripted endpoint is never judged as a model


@pytest.mark.real_server
@pytest.mark.slow
def test_a_real_llama_server_run_reads_the_same_everywhere_and_is_plausible(
        llama_server, tmp_path, capsys, submit, operator, client, django_capture_on_commit_callbacks):
    run_dir = _run(tmp_path, capsys, llama_server.chat_url, llama_server.model)
    run = _check_every_surface(run_dir, tmp_path, capsys, submit, operator, client, django_capture_on_commit_callbacks)
    assert run.plausibility_status == "plausible", run.plausibility
    assert run.plausibility["rows"] == {"plausible": 9, "implausible": 0, "unchecked": 0}


def _check_every_surface(run_dir, tmp_path, capsys, submit, operator, client, django_capture_on_commit_callbacks):
    out, summary = run_dir
    # report --json: the reference values, per case
    report = _json(capsys, "report", str(out), "--json")
    cases = {c["case"]: c["runs"][0]["medians"] for c in report["comparison"]["cases"]}
    assert set(cases) == {"short", "medium", "long"}
    for case, medians in cases.items():
        for name in FIGURES:
            assert medians[name] is not None, (case, name)

    # compare --json (against a copy of the same run: its first run is this one)
    twin = tmp_path / "results" / "scripted-sweep-copy"
    shutil.copytree(out, twin)
    compared = _json(capsys, "compare", str(out), str(twin), "--json")
    for c in compared["cases"]:
        for name in FIGURES:
            assert c["runs"][0]["medians"][name] == cases[c["case"]][name]

    # the CLI summary printed by `benchpack run`: the registry's digits
    for case, medians in cases.items():
        for name in FIGURES:
            assert metric(name).display(medians[name]) in summary, (case, name)

    # the local registry: registry query
    db = tmp_path / "registry.sqlite"
    assert cli.main(["registry", "import", "--db", str(db), str(out)]) == 0
    capsys.readouterr()
    stats = _json(capsys, "registry", "query", "--db", str(db), "--table", "case-stats")
    for record in stats:
        assert record["median_decode_rate"] == pytest.approx(cases[record["case_id"]]["decode_rate"], rel=1e-12)
        assert record["median_ttft_s"] == pytest.approx(cases[record["case_id"]]["ttft_s"], rel=1e-12)

    # bundle, upload, validation, approval
    bundle = create_bundle([out], tmp_path / "bundle", "self-reported")
    archive = pack_archive(bundle, tmp_path / "scripted-sweep.tar.gz")
    with django_capture_on_commit_callbacks(execute=True):
        submission = submit(archive)
    submission.refresh_from_db()
    assert submission.state == states.QUARANTINED, submission.validation_report
    assert approve(submission.pk, operator) is True
    run = PublishedRun.objects.get(submission=submission)

    # the run API and the run page
    api = client.get(f"/api/v1/runs/{run.pk}/").json()
    page = client.get(f"/runs/{run.pk}/").content.decode()
    for published in api["cases"]:
        medians = cases[published["case"]]
        for name in FIGURES:
            assert published[name] == medians[name], (published["case"], name)
        assert f'<td class="num">{medians["decode_rate"]:.1f}</td>' in page  # floatformat:1 = display()
        assert metric("decode_rate").display(medians["decode_rate"]) in page

    # the leaderboards: API rows, board pages, and how many systems each says it ranks
    home = client.get("/").content.decode()
    assert 'title="runtime-sweep">Chat speed · Short, medium and long prompts</a> <small>1 system</small>' in home
    for case, medians in cases.items():
        board = client.get(f"/api/v1/leaderboards/runtime-sweep/{case}/").json()
        assert board["count"] == 1 and board["board"]["order"] == "decode_rate"
        [row] = board["results"]
        for name in FIGURES:
            assert row[name] == medians[name], (case, name)
        assert row["answered"] == row["rows"] == 3 and row["scored"] is None and row["correct"] is None
        html = client.get(f"/leaderboards/runtime-sweep/{case}/").content.decode()
        assert "1 system, ranked by <strong>decode (tok/s): 1 ÷ TPOT</strong>" in html
        assert f'<td class="num">{sig(medians["decode_rate"])}' in html
    pack_board = client.get("/api/v1/leaderboards/runtime-sweep/").json()
    assert pack_board["count"] == 1 and pack_board["results"][0]["run_count"] == 1
    assert client.get("/api/v1/runs/").json()["count"] == 1
    return run


def test_the_compare_page_and_api_show_each_runs_figures(tmp_path, capsys, submit, operator, client,
                                                         django_capture_on_commit_callbacks):
    """Two runs of one system at different speeds: the compare API and page show each run's medians
    exactly as `report --json` computed them, in the digits the metric registry prints."""
    published, reports = [], []
    for name, itl_s in (("fast", 0.002), ("slow", 0.004)):
        with RefServer(responses=[REPLY], ttft_s=0.01, itl_s=itl_s) as server:
            out = tmp_path / name / "results" / "scripted-sweep"
            assert cli.main(["run", "runtime-sweep", "--adapter", "openai-chat", "--model", "scripted-model",
                             "--endpoint", server.openai_url, "--out", str(out), "--lanes", "base"]) == 0
            capsys.readouterr()
        report = _json(capsys, "report", str(out), "--json")
        reports.append({c["case"]: c["runs"][0]["medians"] for c in report["comparison"]["cases"]})
        published.append(_publish(out, tmp_path / name, "sweep.tar.gz", submit, operator,
                                  django_capture_on_commit_callbacks))

    runs = ",".join(str(r.pk) for r in published)
    api = client.get(f"/api/v1/compare/?runs={runs}").json()
    assert [c["run_id"] for c in api["runs"]] == [r.pk for r in published]
    page = client.get(f"/compare/?runs={runs}").content.decode()
    for line in api["cases"]:
        for column, cell in enumerate(line["cells"]):
            for name in FIGURES:
                expected = reports[column][line["case"]][name]
                assert cell["medians"][name] == pytest.approx(expected, rel=1e-12), (line["case"], column, name)
                assert f'<td class="num">{sig(expected)}' in page or f">{sig(expected)} <small>" in page
    # the slower run is slower on every surface
    slow_decode = [line["cells"][1]["medians"]["decode_rate"] for line in api["cases"]]
    fast_decode = [line["cells"][0]["medians"]["decode_rate"] for line in api["cases"]]
    assert all(s < f for s, f in zip(slow_decode, fast_decode))


WEATHER_OK = '{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius", "days": 3}}'
TICKET_OK = ('{"name": "create_ticket", "arguments": {"title": "Blank checkout page after release", '
             '"priority": "urgent", "labels": ["bug", "frontend"], "notify_oncall": true}}')
WRONG = '{"name": "convert_currency", "arguments": {}}'


def test_one_pass_rate_on_every_surface(tmp_path, capsys, submit, operator, client,
                                        django_capture_on_commit_callbacks):
    """Issue 32 item 1: three runs of one system, 2/2, 2/2 and 0/2 tasks passed. Every surface says
    4 of 6 = 67 % with the same 95 % Wilson interval (the median of the runs' own rates would say
    100 %), per case 2 of 3; the counts agree between report --json, the run pages, the run API,
    the boards (page and API, pack and case), the answer (page and API) and the model page."""
    from benchpack.results.metrics import pass_interval, pass_text

    for index, replies in enumerate(([WEATHER_OK, TICKET_OK], [WEATHER_OK, TICKET_OK], [WRONG, WRONG])):
        out = tmp_path / f"run{index}" / "tool-json"
        with RefServer(responses=replies) as server:
            assert cli.main(["run", "tool-json", "--adapter", "openai-chat", "--model", "scripted-model",
                             "--endpoint", server.openai_url, "--out", str(out)]) == 0
        capsys.readouterr()
        report = _json(capsys, "report", str(out), "--json")
        expected = 2 if index < 2 else 0
        assert sum(c["runs"][0]["passed"] for c in report["comparison"]["cases"]) == expected, report
        archive = pack_archive(create_bundle([out], tmp_path / f"run{index}" / "bundle", "self-reported"),
                               tmp_path / f"run{index}" / "tool-json.tar.gz")
        with django_capture_on_commit_callbacks(execute=True):
            submission = submit(archive)
        submission.refresh_from_db()
        assert submission.state == states.QUARANTINED, submission.validation_report
        assert approve(submission.pk, operator) is True
        run = PublishedRun.objects.get(submission=submission)
        api = client.get(f"/api/v1/runs/{run.pk}/").json()
        assert sorted(c["passed_rows"] for c in api["cases"]) == ([1, 1] if index < 2 else [0, 0])
        page = client.get(f"/runs/{run.pk}/").content.decode()
        assert page.count(f'<td class="num">{1 if index < 2 else 0}/1</td>') >= 2  # passed/scored per case

    low, high = pass_interval(4, 6)
    text = pass_text(4, 6)
    assert text.startswith("67 % (4 of 6 tasks; 95 % interval ")
    pack = client.get("/api/v1/leaderboards/tool-json/").json()
    [row] = pack["results"]
    assert (row["correct"], row["scored"], row["run_count"]) == (4, 6, 3)
    assert row["pass_rate"] == pytest.approx(4 / 6) and row["pass_interval"] == pytest.approx([low, high])
    assert row["pass_rate_max"] == 1.0 and row["pass_rate_min"] == 0.0  # the runs' own rates stay as the spread
    board = client.get("/leaderboards/tool-json/").content.decode()
    assert '<td class="num">4/6</td><td class="num">67%<br>' in board
    assert f">{low:.0%}–{high:.0%}</span>" in board
    for case in ("weather-lookup", "create-ticket"):
        [case_row] = client.get(f"/api/v1/leaderboards/tool-json/{case}/").json()["results"]
        assert (case_row["correct"], case_row["scored"], case_row["pass_rate"]) == (2, 3, pytest.approx(2 / 3))
        assert '<td class="num">2/3</td><td class="num">67%<br>' in \
            client.get(f"/leaderboards/tool-json/{case}/").content.decode()
    answer = client.get("/api/v1/answer/?work=tool-json&min_pass=60").json()
    [system] = answer["meets"]
    assert (system["correct"], system["scored"]) == (4, 6)
    assert system["pass_rate"] == pytest.approx(4 / 6) and system["pass_interval"] == pytest.approx([low, high])
    assert system["plausibility"] == "unchecked" and "not checked" in system["caveat"]
    assert client.get("/api/v1/answer/?work=tool-json&min_pass=70").json()["meets"] == []  # 67 % < 70 %
    answer_page = client.get("/answer/?work=tool-json&min_pass=60").content.decode()
    assert text in answer_page
    model_page = client.get("/models/scripted-model/").content.decode()
    assert "4/6" in model_page


@pytest.mark.bubblewrap
def test_suspicious_answers_count_the_same_on_every_surface(tmp_path, capsys, submit, operator, client,
                                                           django_capture_on_commit_callbacks):
    """Issue 31 item 3: three real runs of one system on the coding pack, their answers judged by the pack's own
    verifier in the sandbox: the known-good fix (passed), the same fix with a line reading the interpreter's
    flags (suspicious, never passed) and a reply without a diff (failed). Every surface says 1 of 3 passed and
    1 suspicious: the CLI summary, the run page and API, the boards (page, API and CSV, pack and case), the
    coding view, the system page and API, the model page and the answer (page and API)."""
    from benchpack.results.metrics import pass_text
    from registry_site.catalogue.pages.board_rows import SUSPICIOUS_TITLE
    from registry_site.demo_data import _coding_replies, suspicious_fix

    pack, case = "python-regression-fix", "fix-prerelease-order"
    good, no_diff = _coding_replies()
    runs = []
    for index, reply in enumerate((good, suspicious_fix(good), no_diff)):
        out = tmp_path / f"run{index}" / pack
        with RefServer(responses=[reply]) as server:
            assert cli.main(["run", pack, "--adapter", "openai-chat", "--model", "scripted-model",
                             "--endpoint", server.openai_url, "--out", str(out)]) == 0
        summary = capsys.readouterr().out
        [row] = [json.loads(line) for line in (out / "run.jsonl").read_text().splitlines()]
        assert row["repo_task"]["status"] == ("passed", "suspicious", "failed")[index], row["repo_task"]
        assert row["scoring"]["passed"] is (index == 0)
        if index == 1:
            assert "1 of them suspicious" in summary and "versionkit/version.py:61: interpreter flags" in summary
        runs.append(_publish(out, tmp_path / f"run{index}", f"{pack}.tar.gz", submit, operator,
                             django_capture_on_commit_callbacks))
    assert len({run.system_key for run in runs}) == 1

    counts = [client.get(f"/api/v1/runs/{run.pk}/").json()["suspicious_answers"] for run in runs]
    assert counts == [0, 1, 0]
    assert "1 answer introspected the verifier" in client.get(f"/runs/{runs[1].pk}/").content.decode()
    cell = f'<td class="num">1/3<br><span class="suspicious" title="{SUSPICIOUS_TITLE}">1 suspicious</span></td>'
    words = pass_text(1, 3, 1)
    for api_url, page_url in ((f"/api/v1/leaderboards/{pack}/", f"/leaderboards/{pack}/"),
                              (f"/api/v1/leaderboards/{pack}/{case}/", f"/leaderboards/{pack}/{case}/")):
        [row] = client.get(api_url).json()["results"]
        assert (row["correct"], row["scored"], row["suspicious_answers"], row["run_count"]) == (1, 3, 1, 3)
        assert row["pass_rate"] == pytest.approx(1 / 3)
        csv_text = client.get(api_url, {"format": "csv"}).content.decode()
        header, values = csv_text.splitlines()[:2]
        assert dict(zip(header.split(","), values.split(",")))["suspicious_answers"] == "1"
        board = client.get(page_url).content.decode()
        assert cell in board and "suspicious-note" in board
    coding = client.get("/leaderboards/coding/", {"pack": pack}).content.decode()
    assert cell in coding and "1/3 correct over 3 run(s)" in coding
    assert words in client.get(f"/systems/{runs[0].system_key}/").content.decode()
    [entry] = client.get(f"/api/v1/systems/{runs[0].system_key}/").json()["entries"]
    assert (entry["correct"], entry["scored"], entry["suspicious_answers"]) == (1, 3, 1)
    assert cell in client.get("/models/scripted-model/").content.decode()
    [system] = client.get("/api/v1/answer/", {"work": "coding", "min_pass": "30"}).json()["meets"]
    assert (system["correct"], system["scored"], system["suspicious_answers"]) == (1, 3, 1)
    assert words in client.get("/answer/", {"work": "coding", "min_pass": "30"}).content.decode()


def _publish(out, work, archive_name, submit, operator, capture_on_commit) -> PublishedRun:
    """A result directory bundled as self-reported, uploaded, validated (its on-commit task run) and approved."""
    archive = pack_archive(create_bundle([out], work / "bundle", "self-reported"), work / archive_name)
    with capture_on_commit(execute=True):
        submission = submit(archive)
    submission.refresh_from_db()
    assert submission.state == states.QUARANTINED, submission.validation_report
    assert approve(submission.pk, operator) is True
    return PublishedRun.objects.get(submission=submission)
