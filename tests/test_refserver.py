"""The reference server in its own process, driven through the real adapters."""

import pytest

from benchpack.adapters import AdapterRequest, get_adapter
from benchpack.refserver import RefServer, split_tokens


@pytest.fixture(scope="module")
def server():
    with RefServer(ttft_s=0.003, itl_s=0.0005) as srv:
        yield srv


@pytest.fixture
def srv(server):
    server.configure(ttft_s=0.003, itl_s=0.0005, responses=[], scenario="ok", keepalive=False, split_events=False,
                     empty_delta_every=0, role_chunk=True, cached_tokens=0, timings=True)
    server.reset()
    return server


def chat(srv, **overrides):
    fields = dict(model="ref", prompt="one two three four", endpoint=srv.openai_url, stream=True, timeout_s=10)
    fields.update(overrides)
    return get_adapter("openai-chat").run(AdapterRequest(**fields))


def test_it_splits_replies_into_tokens_that_join_back_exactly():
    text = "```diff\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n```\n"
    assert "".join(split_tokens(text)) == text
    assert len(split_tokens("a b  c")) == 3


def test_it_streams_a_scripted_reply_with_every_awkward_shape(srv):
    srv.configure(responses=["Paris is the capital."], keepalive=True, split_events=True, empty_delta_every=1,
                  cached_tokens=2)
    result = chat(srv)
    assert result.ok, result.error
    assert result.output_text == "Paris is the capital."
    assert result.tokens == {"prompt": 4, "output": 4, "cached_prompt": 2, "source": "usage"}
    assert result.backend["cache_n"] == 2
    assert 0 < result.timing["ttfb_s"] < result.timing["ttft_s"] < result.timing["wall_s"]


def test_it_cycles_scripted_replies_for_streamed_and_plain_requests(srv):
    srv.configure(responses=["first", "second"])
    assert chat(srv).output_text == "first"
    assert chat(srv, stream=False).output_text == "second"
    assert chat(srv).output_text == "first"


def test_it_records_its_own_send_times_for_each_token(srv):
    srv.configure(responses=[{"tokens": 5}])
    chat(srv)
    [record] = srv.log()
    assert len(record["content_times"]) == 5
    assert record["received_at"] < record["content_times"][0]
    assert record["content_times"] == sorted(record["content_times"])
    assert record["body"]["stream_options"] == {"include_usage": True}


def test_it_streams_reasoning_before_content(srv):
    # Tokens 20 ms apart: at 0.5 ms a busy machine can deliver both in one read, with one arrival time.
    srv.configure(responses=[{"reasoning": "let me see", "content": "ok"}], itl_s=0.02)
    result = chat(srv)
    assert result.reasoning_text == "let me see" and result.output_text == "ok"
    assert result.tokens["output"] == 4
    assert result.timing["ttft_any_s"] < result.timing["ttft_s"]


def test_it_truncates_at_max_tokens(srv):
    srv.configure(responses=[{"tokens": 50}])
    result = chat(srv, max_tokens=3)
    assert result.tokens["output"] == 3 and result.output_text == " tok0 tok1 tok2"


def test_it_rejects_stream_options_in_that_scenario_and_the_row_carries_the_error(srv):
    srv.configure(scenario="reject-stream-options")
    result = chat(srv)
    assert not result.ok and result.error == "HTTP 400: Unrecognized request argument supplied: stream_options"
    assert len(srv.log()) == 1  # never retried
    assert chat(srv, openai_stream_usage="omit").ok


def test_it_returns_a_server_error_in_that_scenario(srv):
    srv.configure(scenario="http-500")
    result = chat(srv)
    assert not result.ok and result.error == "HTTP 500: scripted internal error"


def test_it_closes_mid_stream_in_that_scenario_and_partial_text_survives(srv):
    srv.configure(scenario="close-mid-stream", close_after=2, responses=["a b c d e"])
    result = chat(srv)
    assert not result.ok and "mid-stream" in result.error
    assert result.output_text == "a b "


def test_it_hangs_in_that_scenario_until_the_client_times_out(srv):
    srv.configure(scenario="hang")
    result = chat(srv, timeout_s=0.3)
    assert not result.ok and result.error.startswith("timed out after 0.3s")


def test_it_serves_ollama_generate_streamed_and_plain(srv):
    srv.configure(responses=["Bonjour le monde"])
    adapter = get_adapter("ollama-generate")
    for stream in (True, False):
        result = adapter.run(AdapterRequest(model="ref", prompt="a b", endpoint=srv.ollama_url, stream=stream,
                                            timeout_s=10))
        assert result.ok, result.error
        assert result.output_text == "Bonjour le monde"
        assert result.tokens == {"prompt": 2, "output": 3, "cached_prompt": None, "source": "native"}
        assert result.backend["eval_count"] == 3 and result.backend["prefill_tps"] > 0


def test_it_refuses_unknown_options():
    with pytest.raises(TypeError, match="unknown RefServer option"):
        RefServer(ttft=1)


def test_a_missing_or_broken_config_is_one_line_not_a_traceback(tmp_path):
    import subprocess
    import sys

    for args, stdin in ((["--config", "-"], ""), (["--config", str(tmp_path / "nope.json")], "")):
        proc = subprocess.run([sys.executable, "-m", "benchpack.refserver", "--port", "0", *args], input=stdin,
                              capture_output=True, text=True, timeout=30)
        assert proc.returncode == 2
        assert "Traceback" not in proc.stderr and "not a JSON object of settings" in proc.stderr
