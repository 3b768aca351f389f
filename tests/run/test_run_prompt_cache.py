"""Cold prompts, server probes, served models, completeness, --repetitions and
exit codes: `benchpack run` end to end over HTTP against the scripted
endpoint, which simulates llama-server's prompt cache (or Ollama's) and
describes itself the way the real servers do."""

from __future__ import annotations

import json
import re

import pytest

from benchpack import cli
from benchpack.results.cache_state import CACHED, COLD, group_cache_state, row_cache_state
from benchpack.reporting.compare import compare_runs
from benchpack.refserver.server import RefServer
from benchpack.results.resultdir import load_result_dir, read_rows
from benchpack.results.run_metadata import effective
from tests.run.test_runner_support import chat_case, write_pack

LLAMA_PROPS = {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 4,
               "model_path": "/home/someone/models/SmolLM2-135M-Instruct.Q4_1.gguf",
               "model_alias": "smollm2-135m", "build_info": "b6100-abcdef0"}
PROMPT = "One two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen."
NONCE_LINE = re.compile(r"^\[nonce \d{20}\]\n")


@pytest.fixture(scope="module")
def server():
    with RefServer(responses=["Paris is the capital."], ttft_s=0.02, itl_s=0.001) as srv:
        yield srv


@pytest.fixture
def llama(server):
    server.reset()
    server.configure(prompt_cache=True, props=LLAMA_PROPS, models=["smollm2-135m"], scenario="ok",
                     responses=["Paris is the capital."], ollama_show=None, ollama_version=None, ollama_ps=None)
    return server


def sweep(tmp_path, *, policy=None, warmup=1, repetitions=3, scoring=""):
    root = write_pack(tmp_path / "pack", [chat_case("short", PROMPT)], warmup=warmup, repetitions=repetitions,
                      stream=True, scoring=scoring)
    if policy:
        manifest = root / "benchpack.toml"
        manifest.write_text(manifest.read_text().replace("[defaults]\n", f'[defaults]\nprompt_cache = "{policy}"\n'))
    return root


def run(*args) -> int:
    return cli.main(["run", *map(str, args)])


def test_a_repeated_prompt_is_served_from_the_cache_and_compare_never_shows_it_as_a_rate(tmp_path, llama):
    out = tmp_path / "warm"
    assert run(sweep(tmp_path), "--adapter", "openai-chat", "--model", "smollm2-135m",
               "--endpoint", llama.url, "--out", out) == 0
    rows = read_rows(out / "run.jsonl")
    # The warmup put the prompt in the cache; every measured row reused all of it but the last token.
    assert all(r["tokens"]["cached_prompt"] == r["tokens"]["prompt"] - 1 for r in rows)
    assert all(r["prompt_cache"] == {"policy": "server-default", "cache_prompt_param": None, "nonce": None}
               for r in rows)
    assert group_cache_state(rows) == CACHED
    comparison = compare_runs([load_result_dir(out), load_result_dir(out)])
    assert comparison.cases[0].parity == "cached" and comparison.cases[0].runs[0].medians["prefill_tps"] is None


def test_cold_prompts_get_a_unique_nonce_line_and_cache_prompt_false_on_llama_server(tmp_path, llama):
    out = tmp_path / "cold"
    assert run(sweep(tmp_path, policy="cold"), "--adapter", "openai-chat", "--model", "smollm2-135m",
               "--endpoint", llama.url, "--out", out) == 0
    rows = read_rows(out / "run.jsonl")
    bodies = [entry["body"] for entry in llama.log() if entry["path"] == "/v1/chat/completions"]
    assert len(bodies) == 4  # the warmup is cold too
    contents = [b["messages"][0]["content"] for b in bodies]
    assert all(NONCE_LINE.match(c) and c.endswith(PROMPT) for c in contents)
    assert len(set(contents)) == 4
    assert all(b["cache_prompt"] is False for b in bodies)
    nonces = [r["prompt_cache"]["nonce"] for r in rows]
    assert len(set(nonces)) == 3 and all(re.fullmatch(r"[0-9a-f]{16}", n) for n in nonces)
    assert all(r["prompt_cache"]["policy"] == "cold" and r["prompt_cache"]["cache_prompt_param"] is False for r in rows)
    assert all(r["tokens"]["cached_prompt"] == 0 and row_cache_state(r) == COLD for r in rows)
    # The request in raw/ is the one that was sent, nonce and all.
    raw = json.loads((out / rows[0]["raw"]["request_path"]).read_text())
    assert int(raw["messages"][0]["content"][7:27]) == int(nonces[0], 16)
    comparison = compare_runs([load_result_dir(out), load_result_dir(out)])
    assert comparison.cases[0].parity == "comparable"
    assert comparison.cases[0].runs[0].medians["prefill_tps"] > 0


def test_a_server_without_the_cache_switch_gets_the_nonce_but_no_unknown_field(tmp_path, llama):
    llama.configure(props=None, models=None)  # a generic OpenAI-compatible server
    out = tmp_path / "generic"
    assert run(sweep(tmp_path, policy="cold"), "--adapter", "openai-chat", "--model", "m",
               "--endpoint", llama.openai_url, "--out", out) == 0
    bodies = [e["body"] for e in llama.log() if e["path"] == "/v1/chat/completions"]
    assert all("cache_prompt" not in b and NONCE_LINE.match(b["messages"][0]["content"]) for b in bodies)
    rows = read_rows(out / "run.jsonl")
    # Only the nonce line's opening word can match the previous prompt (as a chat template's
    # opening tokens do on a real server): the row is cold.
    assert all(r["prompt_cache"]["cache_prompt_param"] is None and r["tokens"]["cached_prompt"] <= 1 for r in rows)
    assert group_cache_state(rows) == COLD


def test_the_prompt_cache_policy_can_be_set_on_the_command_line(tmp_path, llama):
    out = tmp_path / "cli-cold"
    assert run(sweep(tmp_path), "--adapter", "openai-chat", "--model", "smollm2-135m", "--endpoint", llama.url,
               "--out", out, "--prompt-cache", "cold") == 0
    rows = read_rows(out / "run.jsonl")
    assert all(r["prompt_cache"]["policy"] == "cold" for r in rows)
    assert rows[0]["run_plan"]["prompt_cache_source"] == "--prompt-cache"


def test_ollama_cold_prompts_are_cold_by_construction(tmp_path, llama):
    llama.configure(props=None, models=None)
    out = tmp_path / "ollama"
    assert run(sweep(tmp_path, policy="cold"), "--adapter", "ollama-generate", "--model", "m",
               "--endpoint", llama.url, "--out", out) == 0
    bodies = [e["body"] for e in llama.log() if e["path"] == "/api/generate"]
    assert all(NONCE_LINE.match(b["prompt"]) and "cache_prompt" not in b for b in bodies)
    rows = read_rows(out / "run.jsonl")
    assert all(r["tokens"]["cached_prompt"] is None and row_cache_state(r) == COLD for r in rows)


def test_llama_server_props_become_runtime_config_and_the_served_model_is_recorded(tmp_path, llama, capsys):
    declared = tmp_path / "meta.json"
    declared.write_text(json.dumps({"runtime": {"config": {"threads": 1, "context_size": 8192}},
                                    "notes": "two cores"}))
    out = tmp_path / "props"
    assert run(sweep(tmp_path, repetitions=1, warmup=0), "--adapter", "openai-chat", "--model", "smolm2",
               "--endpoint", f"{llama.url}/v1", "--out", out, "--run-metadata", declared) == 0
    metadata = json.loads((out / "run-metadata.json").read_text())
    # The user's object is kept as given (the seed's contract) ...
    assert metadata["runtime"] == {"config": {"threads": 1, "context_size": 8192}}
    # ... and the runner's view is beside it. The scripted endpoint imitating llama-server is read like
    # llama-server (config, version) but recorded under its own name: a run against it is demo data
    # wherever its bundle goes. The server's values win; the file fills what the server does not report.
    runtime = metadata["benchpack"]["reported"]["runtime"]
    assert runtime["name"] == "benchpack-refserver" and runtime["version"] == "b6100-abcdef0"
    assert runtime["config"] == {"context_size": 4096, "parallel_slots": 4, "threads": 1}
    assert runtime["config_source"] == "llama-server /props + run-metadata file"
    assert effective(metadata)["runtime"] == runtime
    assert metadata["model"] == {"requested": "smolm2", "served": "smollm2-135m",
                                 "file": "SmolLM2-135M-Instruct.Q4_1.gguf"}  # no model section given: the runner's
    assert metadata["complete"] is True and metadata["notes"] == "two cores"
    assert any("context_size is 8192, the server reports 4096" in w for w in metadata["warnings"])
    [row] = read_rows(out / "run.jsonl")
    assert row["model"] == "smolm2" and row["model_served"] == "smollm2-135m"
    assert row["warnings"] == [{"code": "model-mismatch",
                                "message": "asked for model 'smolm2', the server served 'smollm2-135m'"}]
    assert row["endpoint"] == f"{llama.url}/v1/chat/completions"  # the URL requested, not the argument
    err = capsys.readouterr().err
    assert "warning: asked for model 'smolm2', the server served 'smollm2-135m'" in err


def test_ollama_show_and_ps_become_runtime_config(tmp_path, llama):
    llama.configure(props=None, models=None, ollama_version="0.12.3", ollama_models=["qwen3:8b"],
                    ollama_show={"parameters": "num_ctx 8192\nnum_thread 6\nstop \"<|im_end|>\"",
                                 "details": {"quantization_level": "Q4_K_M", "parameter_size": "8.2B",
                                             "family": "qwen3", "format": "gguf"}},
                    ollama_ps=[{"name": "qwen3:8b", "model": "qwen3:8b", "size": 6_000_000_000,
                                "size_vram": 3_000_000_000, "context_length": 8192}])
    out = tmp_path / "ollama-config"
    assert run(sweep(tmp_path, repetitions=1, warmup=0), "--adapter", "ollama-generate", "--model", "qwen3:8b",
               "--endpoint", llama.url, "--out", out) == 0
    runtime = json.loads((out / "run-metadata.json").read_text())["runtime"]
    assert (runtime["name"], runtime["version"]) == ("benchpack-refserver", "0.12.3")  # scripted, imitating Ollama
    assert runtime["config"] == {"context_size": 8192, "threads": 6, "quantization": "Q4_K_M",
                                 "parameter_size": "8.2B", "family": "qwen3", "format": "gguf", "gpu_offload": "50%"}
    assert runtime["config_source"] == "ollama /api/show + /api/ps"


def test_an_interrupted_run_says_so_in_its_metadata_and_exits_130(tmp_path, llama, monkeypatch):
    from benchpack.run import runner

    calls = {"n": 0}
    real = runner._call_adapter

    def interrupt_on_third(adapter, request):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(adapter, request)

    monkeypatch.setattr(runner, "_call_adapter", interrupt_on_third)
    out = tmp_path / "cut"
    assert run(sweep(tmp_path, warmup=0, repetitions=4), "--adapter", "openai-chat", "--model", "smollm2-135m",
               "--endpoint", llama.url, "--out", out) == 130
    metadata = json.loads((out / "run-metadata.json").read_text())
    assert metadata["complete"] is False
    assert metadata["incomplete_reason"] == "interrupted (Ctrl-C) after 2 of 4 executions"
    assert len(read_rows(out / "run.jsonl")) == 2
    assert "**Incomplete run**: interrupted" in (out / "summary.md").read_text()


def test_a_run_killed_outright_reads_as_incomplete(tmp_path, llama, monkeypatch):
    # Nothing runs after a SIGKILL; what is on disk is the metadata written before the first request.
    from benchpack.run import runner

    def killed(*args, **kwargs):
        metadata = json.loads((tmp_path / "killed" / "run-metadata.json").read_text())
        assert metadata["complete"] is False and metadata["incomplete_reason"].startswith("running")
        raise SystemExit("killed")

    monkeypatch.setattr(runner._Run, "execute", killed)
    with pytest.raises(SystemExit):
        run(sweep(tmp_path), "--adapter", "openai-chat", "--model", "m", "--endpoint", llama.url,
            "--out", tmp_path / "killed")
    metadata = json.loads((tmp_path / "killed" / "run-metadata.json").read_text())
    assert metadata["complete"] is False and "SystemExit" in metadata["incomplete_reason"]


def test_repetitions_on_the_command_line_override_the_pack_and_are_recorded(tmp_path, llama):
    out = tmp_path / "reps"
    assert run(sweep(tmp_path, warmup=0, repetitions=3), "--adapter", "openai-chat", "--model", "smollm2-135m",
               "--endpoint", llama.url, "--out", out, "--repetitions", "5") == 0
    rows = read_rows(out / "run.jsonl")
    assert [r["repetition"] for r in rows] == [1, 2, 3, 4, 5]
    assert rows[0]["run_plan"] == {"warmup": 0, "repetitions": 5, "repetitions_source": "--repetitions",
                                   "prompt_cache": "server-default", "prompt_cache_source": "pack"}
    assert (out / "raw" / "short.rep-005.request.json").is_file()


def test_invalid_repetitions_are_refused_before_anything_is_written(tmp_path, llama, capsys):
    assert run(sweep(tmp_path), "--adapter", "openai-chat", "--model", "m", "--endpoint", llama.url,
               "--out", tmp_path / "never", "--repetitions", "0") == 2
    assert "--repetitions: must be an integer >= 1" in capsys.readouterr().err
    assert not (tmp_path / "never").exists()


CONTAINS_BERLIN = '[scoring]\nmode = "contains"\nexpected = "Berlin"\n'


def test_wrong_answers_are_results_exit_zero_and_are_counted(tmp_path, llama, capsys):
    out = tmp_path / "wrong"
    assert run(sweep(tmp_path, warmup=0, repetitions=2, scoring=CONTAINS_BERLIN), "--adapter", "openai-chat",
               "--model", "smollm2-135m", "--endpoint", llama.url, "--out", out) == 0
    printed = capsys.readouterr().out
    assert "2 rows ran, 0 failed to run, 2 answers failed their check" in printed
    assert "short rep 1: answer failed its check" in printed
    assert run(sweep(tmp_path / "again", warmup=0, repetitions=2, scoring=CONTAINS_BERLIN), "--adapter",
               "openai-chat", "--model", "smollm2-135m", "--endpoint", llama.url, "--out", tmp_path / "strict",
               "--fail-on-check") == 1


def test_a_request_that_failed_to_run_exits_one_and_says_why(tmp_path, llama, capsys):
    llama.configure(scenario="http-500")
    assert run(sweep(tmp_path, warmup=0, repetitions=2), "--adapter", "openai-chat", "--model", "smollm2-135m",
               "--endpoint", llama.url, "--out", tmp_path / "broken") == 1
    printed = capsys.readouterr().out
    assert "2 rows ran, 2 failed to run" in printed
    assert "short rep 2: failed to run: HTTP 500: scripted internal error" in printed


def test_a_user_object_of_the_documented_shape_is_kept_as_given(tmp_path, llama):
    """Issue 18 (the seed's contract): every key and value of the --run-metadata object is in
    run-metadata.json unchanged; the runner's own sections are beside it."""
    given = {
        "runtime": {"name": "llama-server", "version": "b1-local", "server_command": "llama-server -m m.gguf -c 4096",
                    "endpoint": "http://127.0.0.1:8080", "config": {"threads": 2, "context_size": 8192}},
        "model": {"name": "smollm2", "file": "m.gguf", "quantization": "Q4_1", "sha256": "ab" * 32},
        "operating_conditions": {"power": "AC", "background_load": "idle"},
        "notes": "second configuration",
        "tags": ["a", {"b": 1}],
    }
    declared = tmp_path / "meta.json"
    declared.write_text(json.dumps(given))
    out = tmp_path / "given"
    assert run(sweep(tmp_path, repetitions=1, warmup=0), "--adapter", "openai-chat", "--model", "smolm2",
               "--endpoint", f"{llama.url}/v1", "--out", out, "--run-metadata", declared) == 0
    metadata = json.loads((out / "run-metadata.json").read_text())
    assert {k: metadata[k] for k in given} == given
    reported = metadata["benchpack"]["reported"]
    assert reported["model"]["served"] == "smollm2-135m" and reported["model"]["quantization"] == "Q4_1"
    assert reported["runtime"]["config"]["context_size"] == 4096  # what the server runs with
    assert metadata["complete"] is True
