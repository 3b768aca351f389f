"""The README's main job: `manage.py demo` brings up the whole registry and
publishes labelled demo data through the real pipeline.

The seeding run is the session's one `manage.py demo` (tests/service/demo.py),
shared with the Ctrl-C and browser-walk tests."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys

import pytest

from tests.service.demo import demo_env
from tests.realserver import missing_files
from tests.service.live import ROOT, free_port

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.xdist_group("demo")]


def test_it_starts_the_registry_and_publishes_demo_data(demo_service, tmp_path):
    seeded = demo_service.seeded()
    stdout = seeded["console"]  # stdout and stderr of the seeding run, up to its banner
    var = seeded["var"]
    assert "demo data: 86 runs published" in stdout
    # The local runner host's worker ran one request end to end and reproduced a seeded run.
    assert "demo run queue: 2 runs published through the local runner host" in stdout
    # ... a re-run of the operator's own upload on this same machine: a match, said not to be independent
    assert re.search(r"demo: run #\d+ re-measured by run #\d+: reproduced, but not an independent reproduction "
                     r"\(reproduced by the same owner[^)]*\) — that needs another owner on another host", stdout), \
        stdout[-3000:]
    assert "(independent" not in stdout
    # Real results beside the scripted ones (issue 32 item 2): the seed's five M5 Max directories, and a real
    # llama-server run on this machine when scripts/llama-server.sh has built it (else one line saying so).
    built = not missing_files()
    assert f"real results: {5 + built} runs published as real measurements (not demo data)" in stdout
    assert ("real run on this machine: smoke-chat against llama-server" in stdout) == built
    assert ("real run on this machine: skipped — llama-server is not built here" in stdout) == (not built)
    assert re.search(r"demo: run #\d+ flagged", stdout)
    boards = re.search(r"leaderboards: http://\S+/leaderboards/ \((\d+) boards over (\d+) packs", stdout)
    assert boards and int(boards.group(2)) == 5, stdout[-3000:]
    login = re.search(r"operator login: (\S+) / (\S+)", stdout)
    assert login and login.group(1) == "operator@benchpack.local"
    # the banner is the last thing printed, and names every port the demo opened
    assert stdout.rstrip().splitlines()[-1].startswith("  Ctrl-C stops"), stdout[-2000:]
    ports = re.search(r"ports: web (\d+), scripted endpoint \(runner host\) (\d+), scripted endpoint \(seeding\) (\d+)",
                      stdout)
    assert ports and all(int(p) > 0 for p in ports.groups())
    # children log to var/log/, not to the console
    assert {p.name for p in (var / "log").iterdir()} >= {"celery-worker.log", "granian.log",
                                                                      "runner-worker.log", "refserver.log"}
    assert "celery@" not in stdout and "HTTP Request" not in stdout

    db = sqlite3.connect(var / "registry.sqlite3")
    published = db.execute(
        "select r.pack_id, count(*), count(distinct r.hardware_class), min(r.is_demo), min(s.state) "
        "from registry_site_publishedrun r join submissions_submission s on s.id = r.submission_id "
        "where r.is_demo group by r.pack_id order by r.pack_id").fetchall()
    assert published == [
        ("desktop-django-wrap", 66, 7, 1, "approved"),  # 57 systems that fit + a timeline of 9 runs
        ("python-regression-fix", 12, 4, 1, "approved"),
        ("runtime-sweep", 3, 3, 1, "approved"),
        ("smoke-chat", 3, 1, 1, "approved"),  # the upload, the run request, the reproduction
        ("tool-json", 4, 4, 1, "approved"),
    ]
    # One coding answer the pack's verifier screened suspicious (issue 31 item 3): its run's case and its system's
    # board row count it apart
    assert db.execute("select r.model, sum(c.suspicious_rows) from registry_site_publishedcase c join "
                      "registry_site_publishedrun r on r.id = c.run_id where c.suspicious_rows > 0 "
                      "group by r.model").fetchall() == [("demo/scripted-coder-7b", 1)]
    assert db.execute("select model, correct, scored, suspicious_answers from registry_site_leaderboardentry "
                      "where suspicious_answers > 0 and \"case\" = ''").fetchall() == [
        ("demo/scripted-coder-7b", 2, 3, 1)]
    # Earned provenance: the seeded uploads come from the demo submitter (self-reported, whatever their
    # bundles claim); the run request was queued by the operator on the operator's host; only the
    # reproduction judge makes a run independently-reproduced.
    earned = db.execute("select pack_id, provenance from registry_site_publishedrun where is_demo").fetchall()
    assert {p for pack, p in earned if pack != "smoke-chat"} == {"self-reported"}
    # smoke-chat: the operator's own upload on this machine, the operator's run request and its re-run of
    # the upload — nothing independently reproduced
    assert {p for pack, p in earned if pack == "smoke-chat"} == {"operator-curated"}
    real = db.execute("select pack_id, pack_version, provenance, plausibility_status, hardware_class "
                      "from registry_site_publishedrun where not is_demo order by id").fetchall()
    assert real[:5] == [
        ("runtime-sweep", "0.1.0", "self-reported", "plausible", "apple-m5-max-64gb"),
        ("smoke-chat", "0.1.0", "self-reported", "plausible", "apple-m5-max-64gb"),
        ("runtime-sweep", "0.1.0", "self-reported", "plausible", "apple-m5-max-64gb"),
        ("smoke-chat", "0.1.0", "self-reported", "plausible", "apple-m5-max-64gb"),
        ("desktop-django-wrap", "0.1.5", "self-reported", "plausible", "apple-m5-max-64gb"),
    ]
    assert [row[:3] for row in real[5:]] == ([("smoke-chat", "0.1.0", "operator-curated")] if built else [])
    # boards of four or more systems on different hardware classes, one over a page of rows
    systems = dict(db.execute("select pack_id, count(distinct system_key) from registry_site_leaderboardentry "
                              "where \"case\" = '' group by pack_id").fetchall())
    assert systems["desktop-django-wrap"] > 50 and systems["runtime-sweep"] >= 3 and systems["tool-json"] >= 4
    assert systems["python-regression-fix"] >= 4
    # the real runs' boards hold no demo row; the scripted ones hold no real row but where a real run on this
    # machine measured the bundled smoke-chat workload
    mixed = db.execute("select distinct pack_id, \"case\" from registry_site_leaderboardentry group by workload_key, "
                       "\"case\" having min(is_demo) = 0 and max(is_demo) = 1").fetchall()
    assert sorted(mixed) == ([("smoke-chat", ""), ("smoke-chat", "capital")] if built else [])
    assert int(boards.group(1)) == db.execute("select count(*) from (select distinct pack_id, \"case\" "
                                              "from registry_site_leaderboardentry)").fetchone()[0]
    requests = db.execute("select state, is_demo from submissions_runrequest").fetchall()
    assert requests == [("finished", 1), ("finished", 1)]
    events = db.execute("select from_state, to_state from submissions_runrequestevent e join submissions_runrequest r "
                        "on r.id = e.request_id where r.reproduction_of_id is null order by e.id").fetchall()
    assert events == [("", "queued"), ("queued", "running"), ("running", "finished")]
    assert db.execute("select verdict, independent from submissions_reproduction").fetchall() == [("reproduced", 0)]
    # the filesystem broker and temporary extraction leave no bundle files behind
    leftovers = [p for p in var.rglob("*") if p.suffix in {".gz", ".zip", ".jsonl"}]
    assert leftovers == []

    # A second start on the same data (a copy: the seeding run may still be serving the other demo tests)
    # seeds nothing, stops after its banner with --exit-after-seed, and prints nothing after the banner.
    again_var = demo_service.copy_of_seeded_var(tmp_path / "again" / "var")
    again = subprocess.run(
        [sys.executable, "manage.py", "demo", "--port", str(free_port()), "--exit-after-seed"],
        cwd=ROOT, env=demo_env(again_var), capture_output=True, text=True, timeout=300,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert "demo data already present" in again.stdout
    assert again.stdout.rstrip().splitlines()[-1].startswith("  Ctrl-C stops"), again.stdout[-2000:]
    assert login.group(2) in again.stdout  # the same operator password is printed again
