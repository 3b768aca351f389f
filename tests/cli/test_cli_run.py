"""`benchpack run` end to end: real adapters over real HTTP against the reference server."""

import json
from pathlib import Path
import socket

import pytest

from benchpack import cli

from benchpack.run import runner
from benchpack.refserver.server import RefServer
from benchpack.results.resultdir import load_result_dir, read_rows
from tests.run.test_runner_support import ScriptedAdapter, chat_case, write_pack

CONTAINS_PARIS = '[scoring]\nmode = "contains"\nexpected = "Paris"\n'


@pytest.fixture(scope="module")
def server():
    with RefServer(responses=["Paris is the capital of France."], ttft_s=0.005, itl_s=0.001) as srv:
        yield srv


@pytest.fixture
def fresh_server(server):
    server.reset()
    server.configure(scenario="ok", responses=["Paris is the capital of France."])
    return server


def run_cli(*args):
    return cli.main(["run", *map(str, args)])


def pack_dir(tmp_path, cases=("capital", "city"), **kwargs):
    kwargs.setdefault("scoring", CONTAINS_PARIS)
    return write_pack(tmp_path / "pack", [chat_case(c) for c in cases], **kwargs)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_it_runs_a_pack_over_http_and_exits_zero(tmp_path, fresh_server, capsys):
    out = tmp_path / "out"
    code = run_cli(pack_dir(tmp_path), "--adapter", "openai-chat", "--model", "ref-model",
                   "--endpoint", fresh_server.openai_url, "--out", out, "--host-label", "bench-1")
    assert code == 0
    result = load_result_dir(out)
    assert [r["case"] for r in result.rows] == ["capital", "city"]
    assert all(r["ok"] and r["scoring"] == {"mode": "contains", "passed": True} for r in result.rows)
    assert all(r["tokens"]["output"] and r["timing"]["wall_s"] > 0 for r in result.rows)
    assert result.rows[0]["endpoint"] == fresh_server.openai_url
    assert result.hardware["hostname"] == "bench-1"
    assert json.loads((out / "raw/capital.request.json").read_text())["model"] == "ref-model"
    stdout = capsys.readouterr().out
    assert "[1/2] capital rep 1/1 ok" in stdout and "[2/2] city rep 1/1 ok" in stdout
    assert "| capital | openai-chat | ref-model | yes |" in (out / "summary.md").read_text()


def test_it_streams_from_ollama_with_repetitions_and_warmups(tmp_path, fresh_server):
    out = tmp_path / "out"
    code = run_cli(pack_dir(tmp_path, ("capital",), warmup=1, repetitions=2, stream=True),
                   "--adapter", "ollama-generate", "--model", "m", "--endpoint", fresh_server.ollama_url,
                   "--out", out)
    assert code == 0
    rows = read_rows(out / "run.jsonl")
    assert [r["repetition"] for r in rows] == [1, 2]
    names = sorted(p.name for p in (out / "raw").iterdir())
    assert names == ["capital.rep-001.request.json", "capital.rep-001.response.json",
                     "capital.rep-002.request.json", "capital.rep-002.response.json",
                     "capital.warmup-001.request.json", "capital.warmup-001.response.json"]
    # The warmup really went to the endpoint: three streamed generate requests in all.
    log = fresh_server.log()
    assert [(e["path"], e["body"]["stream"]) for e in log] == [("/api/generate", True)] * 3
    assert all(r["timing"]["ttft_s"] is not None for r in rows)


@pytest.mark.parametrize("scenario", ["http-500", "close-mid-stream"])
def test_it_exits_one_and_keeps_going_when_the_endpoint_fails(tmp_path, fresh_server, scenario):
    fresh_server.configure(scenario=scenario)
    out = tmp_path / "out"
    code = run_cli(pack_dir(tmp_path, stream=True), "--adapter", "openai-chat", "--model", "m",
                   "--endpoint", fresh_server.openai_url, "--out", out)
    assert code == 1
    rows = read_rows(out / "run.jsonl")
    assert len(rows) == 2 and not any(r["ok"] for r in rows)
    assert all(r["error"] for r in rows)


def test_it_records_an_unreachable_endpoint_as_failed_rows(tmp_path):
    out = tmp_path / "out"
    code = run_cli(pack_dir(tmp_path), "--adapter", "openai-chat", "--model", "m",
                   "--endpoint", f"http://127.0.0.1:{closed_port()}/v1", "--out", out)
    assert code == 1
    assert [r["ok"] for r in read_rows(out / "run.jsonl")] == [False, False]


def test_it_exits_two_without_writing_anything_for_bad_run_metadata(tmp_path, capsys):
    metadata = tmp_path / "meta.json"
    metadata.write_text('{"runtime": ["llama-server"]}')
    code = run_cli(pack_dir(tmp_path), "--adapter", "openai-chat", "--model", "m",
                   "--endpoint", "http://127.0.0.1:9/v1", "--out", tmp_path / "out", "--run-metadata", metadata)
    assert code == 2
    assert capsys.readouterr().err.strip() == f"{metadata}: runtime: must be a JSON object"
    assert not (tmp_path / "out").exists()


def test_it_exits_two_for_a_used_output_dir_and_a_missing_pack(tmp_path, capsys):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "run.jsonl").write_text("{}\n")
    assert run_cli(pack_dir(tmp_path), "--adapter", "openai-chat", "--model", "m",
                   "--endpoint", "http://127.0.0.1:9/v1", "--out", tmp_path / "out") == 2
    assert run_cli(tmp_path / "no-such-pack", "--adapter", "openai-chat", "--model", "m",
                   "--endpoint", "http://127.0.0.1:9/v1", "--out", tmp_path / "other") == 2
    err = capsys.readouterr().err
    assert "--force" in err and "Traceback" not in err
    assert not (tmp_path / "other").exists()


def test_it_writes_run_metadata_and_shows_it_in_the_summary(tmp_path, fresh_server):
    metadata = tmp_path / "meta.json"
    metadata.write_text(json.dumps({"runtime": {"name": "refserver", "server_command": "python -m benchpack.refserver.server"},
                                    "model": {"quantization": "none"}}))
    out = tmp_path / "out"
    assert run_cli(pack_dir(tmp_path), "--adapter", "openai-chat", "--model", "m", "--endpoint",
                   fresh_server.openai_url, "--out", out, "--run-metadata", metadata) == 0
    assert load_result_dir(out).run_metadata["runtime"]["name"] == "refserver"
    summary = (out / "summary.md").read_text()
    assert "Runtime: `refserver`" in summary and "Server command: `python -m benchpack.refserver.server`" in summary


def test_it_exits_130_on_ctrl_c_and_keeps_the_rows_done(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(runner, "_resolve_adapter", lambda options: ScriptedAdapter({3: KeyboardInterrupt}))
    out = tmp_path / "out"
    code = run_cli(pack_dir(tmp_path, ("a", "b", "c", "d")), "--adapter", "openai-chat", "--model", "m",
                   "--endpoint", "http://127.0.0.1:9/v1", "--out", out)
    assert code == 130
    assert [r["case"] for r in read_rows(out / "run.jsonl")] == ["a", "b"]
    assert "interrupted" in capsys.readouterr().err


def test_it_replaces_a_previous_result_with_force(tmp_path, fresh_server):
    out = tmp_path / "out"
    args = [pack_dir(tmp_path), "--adapter", "openai-chat", "--model", "m",
            "--endpoint", fresh_server.openai_url, "--out", out]
    assert run_cli(*args) == 0
    assert run_cli(*args) == 2
    assert run_cli(*args, "--force") == 0
    assert len(read_rows(out / "run.jsonl")) == 2


BUNDLED = Path(__file__).resolve().parents[2] / "benchpacks"


@pytest.mark.bubblewrap
@pytest.mark.parametrize("answer, passed", [("known-good.md", True), ("corrupt-context.md", False)])
def test_it_runs_a_bundled_repo_task_pack_through_the_real_executor(tmp_path, fresh_server, answer, passed):
    pack = BUNDLED / "patch-from-failure"
    fresh_server.configure(responses=[(pack / "audit" / "fix-split-bill" / answer).read_text()])
    out = tmp_path / "out"
    code = run_cli("patch-from-failure", "--adapter", "openai-chat", "--model", "m",
                   "--endpoint", fresh_server.openai_url, "--out", out)
    assert code == 0
    [row] = read_rows(out / "run.jsonl")
    assert row["scoring"] == {"mode": "verify-script", "passed": passed}
    assert row["repo_task"]["status"] == ("passed" if passed else "failed")
    assert row["workspace"]["path"] == "workspace/fix-split-bill/rep-001"
    assert (out / row["patch"]["path"]).exists()
    assert "| fix-split-bill | openai-chat | m | yes |" in (out / "summary.md").read_text()


def test_without_out_it_writes_results_date_host_label_like_the_seed(tmp_path, fresh_server, monkeypatch, capsys):
    import datetime

    monkeypatch.chdir(tmp_path)
    pack = pack_dir(tmp_path)
    code = run_cli(pack, "--adapter", "openai-chat", "--model", "ref-model", "--endpoint", fresh_server.openai_url,
                   "--host-label", "bench box/1")
    assert code == 0
    out = tmp_path / "results" / f"{datetime.date.today().isoformat()}-bench-box-1"
    assert len(read_rows(out / "run.jsonl")) == 2
    assert f"results in {Path('results') / out.name}" in capsys.readouterr().out
    # a second run the same day is a new result in the next free directory, not an error on --out
    code = run_cli(pack, "--adapter", "openai-chat", "--model", "ref-model", "--endpoint", fresh_server.openai_url,
                   "--host-label", "bench box/1")
    assert code == 0
    second = out.with_name(out.name + "-2")
    assert len(read_rows(second / "run.jsonl")) == 2 and len(read_rows(out / "run.jsonl")) == 2
    assert f"results in {Path('results') / second.name}" in capsys.readouterr().out


def test_run_help_shows_an_example(capsys):
    with pytest.raises(SystemExit):
        run_cli("--help")
    text = capsys.readouterr().out
    assert "example" in text and "benchpack run smoke-chat --adapter openai-chat" in text


def test_the_default_out_uses_the_hostname_without_a_host_label(monkeypatch):
    from benchpack.commands.run import default_out

    monkeypatch.setattr(socket, "gethostname", lambda: "gpu-01.lab")
    assert default_out(None, today="2026-12-02") == Path("results/2026-12-02-gpu-01.lab")


def test_an_older_bundled_version_runs_by_id_at_version(tmp_path, fresh_server):
    out = tmp_path / "out"
    code = run_cli("runtime-sweep@1.0.0", "--adapter", "openai-chat", "--model", "ref-model",
                   "--endpoint", fresh_server.openai_url, "--out", out, "--repetitions", "1")
    assert code == 0
    rows = read_rows(out / "run.jsonl")
    assert {(r["pack"]["id"], r["pack"]["version"]) for r in rows} == {("runtime-sweep", "1.0.0")}
    assert sorted(r["case"] for r in rows) == ["long", "medium", "short"]


@pytest.fixture
def path_without_git(tmp_path, monkeypatch):
    """PATH as it is, less git: a directory of links to every other program on it."""
    import os
    import shutil

    bin_dir = tmp_path / "bin-without-git"
    bin_dir.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            target = Path(directory) / name
            if name.startswith("git") or (bin_dir / name).exists() or not os.access(target, os.X_OK):
                continue
            (bin_dir / name).symlink_to(target)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert shutil.which("git") is None
    return bin_dir


@pytest.mark.parametrize("sandbox", [pytest.param([], marks=pytest.mark.bubblewrap, id="bubblewrap"),
                                     pytest.param(["--unsandboxed"], marks=pytest.mark.no_sandbox, id="none")])
def test_a_repo_task_without_git_writes_a_failed_row_naming_git(tmp_path, fresh_server, path_without_git, capsys,
                                                               sandbox):
    pack = BUNDLED / "patch-from-failure"
    fresh_server.configure(responses=[(pack / "audit" / "fix-split-bill" / "known-good.md").read_text()])
    out = tmp_path / "out"
    code = run_cli("patch-from-failure", "--adapter", "openai-chat", "--model", "m",
                   "--endpoint", fresh_server.openai_url, "--out", out, *sandbox)
    [row] = read_rows(out / "run.jsonl")
    # A failed row naming the tool (the seed's contract); the request itself succeeded, so `ok` stays true and
    # the run goes on (issue 9 §9, tests/repo_task/test_repo_task_integration.py).
    assert row["scoring"] == {"mode": "verify-script", "passed": False}
    assert row["repo_task"]["status"] == "error"
    assert row["repo_task"]["failure_reason"] == "git is not on PATH: the fenced diff could not be applied"
    assert row["sandbox"] == ("none" if sandbox else "bubblewrap")
    assert code == 0
    text = capsys.readouterr().out
    assert ("- fix-split-bill: could not be checked: git is not on PATH: the fenced diff could not be applied"
            in text)
