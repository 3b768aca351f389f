"""What a server says about itself: probes never fail a run, configuration
merges with the run-metadata file, the served model is named."""

from __future__ import annotations

import socket

from benchpack.run import server_info
from benchpack.run.server_info import ServerInfo, merge_config, model_mismatch, parse_ollama_parameters, server_base


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_silent_server_is_a_server_that_did_not_say():
    info = server_info.probe_server("openai-chat", f"http://127.0.0.1:{closed_port()}/v1", "m")
    assert info.runtime_name is None and info.config == {} and not info.honours_cache_prompt
    assert [p["request"] for p in info.probes] == ["GET /props", "GET /v1/models"]
    assert all(p["result"].startswith("no answer") for p in info.probes)


def test_the_api_path_is_taken_off_the_endpoint():
    assert server_base("http://h:1/v1/chat/completions") == "http://h:1"
    assert server_base("http://h:1/v1") == "http://h:1"
    assert server_base("http://h:1/prefix/api/generate") == "http://h:1/prefix"
    assert server_base("http://h:1") == "http://h:1"


def test_ollama_parameters_become_config_keys():
    text = 'num_ctx 8192\nnum_thread 6\nnum_gpu 99\nnum_batch 512\nstop "<|im_end|>"\nnum_ctx oops'
    assert parse_ollama_parameters(text) == {"context_size": 8192, "threads": 6, "gpu_layers": 99, "batch_size": 512}
    assert parse_ollama_parameters(None) == {}


def test_the_servers_values_win_and_the_file_fills_the_rest():
    warnings = []
    server = ServerInfo(config={"context_size": 4096, "parallel_slots": 1}, config_source="llama-server /props")
    merged, source = merge_config(server, {"context_size": 8192, "threads": 2}, warnings.append)
    assert merged == {"context_size": 4096, "parallel_slots": 1, "threads": 2}
    assert source == "llama-server /props + run-metadata file"
    assert warnings == ["run-metadata runtime.config.context_size is 8192, the server reports 4096; "
                        "recorded the server's"]
    assert merge_config(ServerInfo(), {"threads": 2}, warnings.append) == ({"threads": 2}, "run-metadata file")
    assert merge_config(ServerInfo(), None, warnings.append) == ({}, None)


def test_a_model_mismatch_is_named_but_ollamas_latest_tag_is_the_same_model():
    assert model_mismatch("smolm2", "smollm2-135m") == "asked for model 'smolm2', the server served 'smollm2-135m'"
    assert model_mismatch("qwen3", "qwen3:latest") is None
    assert model_mismatch("m", None) is None and model_mismatch("m", "m") is None
