"""The reference server in its own process, driven through the real adapters."""

import pytest

from benchpack.adapters import AdapterRequest, get_adapter
from benchpack.refserver.server import RefServer, split_tokens


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
    # The head comes first; on a loaded machine it can come in one read with the first tokens (the same time),
    # and four tokens 0.5 ms apart can come in the read that ends the body (then the first token's time is
    # that read's, the end's too: a row whose reads could not place it, issue 34 item 1)
    assert 0 < result.timing["ttfb_s"] <= result.timing["ttft_s"] <= result.timing["wall_s"]


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


def test_it_serves_many_concurrent_streams_each_on_its_own_script():
    from benchpack.selfcheck import loadtest

    plan = loadtest.LoadPlan(streams=16, rounds=1, tokens=8, ttft_s=(0.05, 0.1), itl_s=(0.01, 0.03), seed=3)
    scripts = plan.scripts()
    client = loadtest.aiohttp_client()
    try:
        with RefServer(responses=scripts, timings=False) as server:
            bodies = [loadtest.request_body(f"load-0-{i}", plan.tokens) for i in range(plan.streams)]
            seen = client(server.openai_url, bodies)
            records = server.log()
    finally:
        client.close()
    assert len(records) == 16 and all(len(s.content_times) == 8 and s.error is None for s in seen)
    spacings = set()
    for record in records:
        planned, sent = record["content_planned"], record["content_times"]
        assert len(planned) == len(sent) == len(record["content_done"]) == 8
        spacing = round((planned[-1] - planned[0]) / 7, 4)
        ttft = round(planned[0] - record["received_at"], 4)
        assert {"tokens": 8, "ttft_s": ttft, "itl_s": spacing} in scripts  # each request got a whole script of its own
        spacings.add(spacing)
        assert all(out >= due for out, due in zip(sent, planned))  # never early
        assert all(after >= out for out, after in zip(sent, record["content_done"]))
    assert len(spacings) > 8  # the streams really ran on different scripts at once
    overlapping = [r for r in records if r["received_at"] < min(x["content_times"][-1] for x in records)]
    assert len(overlapping) == 16  # every request was in flight together


def test_the_load_figures_pair_client_and_server_by_nonce():
    from benchpack.selfcheck import loadtest

    figures = loadtest.LoadFigures()
    records = [{"body": {"messages": [{"content": "load-0-1 say"}]}, "content_times": [1.0, 1.01, 1.02],
                "content_planned": [1.0, 1.01, 1.02], "content_done": [1.0001, 1.0101, 1.0201]},
               {"body": {"messages": [{"content": "load-0-0 say"}]}, "content_times": [2.0, 2.02],
                "content_planned": [2.0, 2.02], "content_done": [2.0, 2.02]}]
    seen = [loadtest.StreamTimes([2.001, 2.0212]), loadtest.StreamTimes([1.002, 1.012, 1.022])]
    loadtest.score_round(records, ["load-0-0", "load-0-1"], seen, figures)
    assert figures.ttft_overhead_s == pytest.approx([0.001, 0.002])
    assert figures.tpot_error_pct == pytest.approx([1.0, 0.0], abs=1e-6)
    assert figures.chunks == 5 and not figures.failures
    loadtest.score_round(records[:1], ["load-0-0"], [loadtest.StreamTimes([], error="boom")], figures)
    assert figures.failures == ["load-0-0: not served"]


def test_a_missing_or_broken_config_is_one_line_not_a_traceback(tmp_path):
    import subprocess
    import sys

    for args, stdin in ((["--config", "-"], ""), (["--config", str(tmp_path / "nope.json")], "")):
        proc = subprocess.run([sys.executable, "-m", "benchpack.refserver.server", "--port", "0", *args], input=stdin,
                              capture_output=True, text=True, timeout=30)
        assert proc.returncode == 1
        assert "Traceback" not in proc.stderr and "not a JSON object of settings" in proc.stderr


def _event_names(url: str, body: dict) -> list[str]:
    import httpx as _httpx

    with _httpx.stream("POST", url, json=body, timeout=10) as response:
        return [line[len("event: "):] for line in response.iter_lines() if line.startswith("event: ")]


def test_it_sends_the_anthropic_and_responses_event_sequences_as_the_real_apis_do():
    from benchpack.refserver.server import RefServer as _RefServer

    script = [{"content": "a b", "tool_calls": [{"name": "f", "arguments": {"x": 1}}]}]
    with _RefServer(responses=script, ttft_s=0.001, itl_s=0.0005) as server:
        messages = _event_names(server.anthropic_url, {"model": "m", "max_tokens": 50, "stream": True,
                                                       "messages": [{"role": "user", "content": "hi"}]})
        responses = _event_names(server.responses_url, {"model": "m", "stream": True, "input": "hi"})
        log = server.log()
    assert messages == ["message_start", "content_block_start", "content_block_delta", "content_block_delta",
                        "content_block_stop", "content_block_start", "content_block_delta", "content_block_delta",
                        "content_block_stop", "message_delta", "message_stop"]
    assert responses == ["response.created", "response.in_progress",
                         "response.output_item.added", "response.content_part.added",
                         "response.output_text.delta", "response.output_text.delta", "response.output_text.done",
                         "response.content_part.done", "response.output_item.done",
                         "response.output_item.added", "response.function_call_arguments.delta",
                         "response.function_call_arguments.delta", "response.function_call_arguments.done",
                         "response.output_item.done", "response.completed"]
    # The log marks every token: 2 text, the call's name, 2 argument pieces ('{"x": ', '1}').
    assert [len(r["token_times"]) for r in log] == [5, 5] and [len(r["tool_times"]) for r in log] == [3, 3]


def test_a_scripted_reply_can_be_picked_by_the_prompt():
    from benchpack.adapters import AdapterRequest, get_adapter
    from benchpack.refserver.server import RefServer as _RefServer

    script = [{"match": "weather", "content": "sunny"}, {"match": "time", "content": "noon"}]
    with _RefServer(responses=script, ttft_s=0.001, itl_s=0.0005) as server:
        adapter = get_adapter("openai-responses")
        answers = [adapter.run(AdapterRequest(model="m", prompt=p, endpoint=server.url)).output_text
                   for p in ("what time is it", "the weather?", "time again")]
    assert answers == ["noon", "sunny", "noon"]
