import json

import httpx
import pytest

from benchpack.adapters import ADAPTER_IDS, AdapterRequest, get_adapter
from benchpack.adapters.base import StreamTrace, compute_timing
from benchpack.adapters.openai_chat import OpenAIChatAdapter, chat_completions_url
from benchpack.errors import ConfigError

URL = "http://llm.test/v1/chat/completions"


def sse(*objs) -> bytes:
    return b"".join(b"data: " + (o if isinstance(o, bytes) else json.dumps(o).encode()) + b"\n\n" for o in objs)


def delta(**fields):
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": None}]}


def finish(reason="stop", **extra):
    return {"choices": [{"index": 0, "delta": {}, "finish_reason": reason}], **extra}


USAGE = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15,
         "prompt_tokens_details": {"cached_tokens": 8}}


def adapter_for(reply, seen=None):
    """An adapter whose HTTP goes to `reply(request)`; `seen` collects request bodies."""
    def handler(request: httpx.Request) -> httpx.Response:
        if seen is not None:
            seen.append(json.loads(request.content))
        return reply(request)
    return OpenAIChatAdapter(client=httpx.Client(transport=httpx.MockTransport(handler)))


def streaming(*pieces: bytes, status=200):
    return lambda request: httpx.Response(status, headers={"content-type": "text/event-stream"},
                                          content=iter(pieces))


def req(**overrides):
    fields = dict(model="m", prompt="hello", endpoint=URL, temperature=0.0, max_tokens=32, stream=True)
    fields.update(overrides)
    return AdapterRequest(**fields)


def test_it_reads_a_stream_with_every_awkward_shape_real_servers_send():
    body = (sse(delta(role="assistant", content=None)) + b": keep-alive\n\n" + sse(delta(content=""))
            + sse(delta(content="Hel")) + sse(delta(content="lo"), delta(content="!"))
            + sse(finish(timings={"prompt_n": 4, "cache_n": 8, "predicted_n": 3}))
            + sse({"choices": [], "usage": USAGE}) + sse(b"[DONE]"))
    pieces = [body[i:i + 7] for i in range(0, len(body), 7)]  # events split across reads
    result = adapter_for(streaming(*pieces)).run(req())
    assert result.ok, result.error
    assert result.output_text == "Hello!"
    assert result.tokens == {"prompt": 12, "output": 3, "cached_prompt": 8, "source": "usage"}
    assert result.backend == {"prompt_n": 4, "cache_n": 8, "predicted_n": 3}
    assert result.response_payload[-1] == "[DONE]"
    assert result.timing["ttft_s"] is not None and result.timing["tpot_s"] is not None


def test_it_sends_stream_options_include_usage_in_include_mode():
    seen = []
    adapter_for(streaming(sse(delta(content="x"), finish(), b"[DONE]")), seen).run(req(openai_stream_usage="include"))
    assert seen[0]["stream"] is True
    assert seen[0]["stream_options"] == {"include_usage": True}


def test_it_leaves_stream_options_out_in_omit_mode_and_keeps_the_stream():
    seen = []
    result = adapter_for(streaming(sse(delta(content="x"), finish(), b"[DONE]")), seen).run(req(openai_stream_usage="omit"))
    assert "stream_options" not in seen[0] and seen[0]["stream"] is True
    assert result.ok and result.output_text == "x"
    assert result.tokens == {"prompt": None, "output": None, "cached_prompt": None, "source": None}
    assert result.timing["decode_tps"] is None and result.timing["ttft_s"] is not None


def test_it_reports_a_rejected_stream_option_as_a_failed_row_without_retrying():
    seen = []
    rejection = {"error": {"message": "Unrecognized request argument supplied: stream_options", "code": 400}}
    result = adapter_for(lambda r: httpx.Response(400, json=rejection), seen).run(req())
    assert len(seen) == 1
    assert not result.ok
    assert result.error == "HTTP 400: Unrecognized request argument supplied: stream_options"
    assert result.response_payload == rejection


def test_it_sends_no_stream_options_for_non_streaming_requests():
    seen = []
    adapter_for(lambda r: httpx.Response(200, json={"choices": [{"message": {"content": "hi"}}]}), seen).run(req(stream=False))
    assert seen[0]["stream"] is False and "stream_options" not in seen[0]


def test_it_builds_the_documented_request_body_with_extra_fields():
    seen = []
    adapter_for(streaming(sse(finish(), b"[DONE]")), seen).run(req(extra_body={"cache_prompt": False}))
    assert seen[0] == {"model": "m", "messages": [{"role": "user", "content": "hello"}], "temperature": 0.0,
                       "max_tokens": 32, "stream": True, "stream_options": {"include_usage": True},
                       "cache_prompt": False}


def test_it_omits_unset_temperature_and_max_tokens():
    seen = []
    adapter_for(streaming(sse(finish(), b"[DONE]")), seen).run(req(temperature=None, max_tokens=None))
    assert "temperature" not in seen[0] and "max_tokens" not in seen[0]


def test_it_maps_cached_tokens_from_usage_to_cached_prompt_in_non_streaming_mode():
    payload = {"choices": [{"message": {"role": "assistant", "content": "Paris."}, "finish_reason": "stop"}],
               "usage": USAGE}
    result = adapter_for(lambda r: httpx.Response(200, json=payload)).run(req(stream=False))
    assert result.ok and result.output_text == "Paris."
    assert result.tokens == {"prompt": 12, "output": 3, "cached_prompt": 8, "source": "usage"}
    assert result.timing["ttft_s"] is None and result.timing["prefill_tps"] is None
    assert result.timing["decode_tps"] is None and result.timing["total_tps"] is not None
    assert result.response_payload == payload


def test_it_takes_counts_from_llama_server_timings_when_usage_is_absent():
    body = sse(delta(content="a"), finish(timings={"prompt_n": 5, "cache_n": 7, "predicted_n": 1}), b"[DONE]")
    result = adapter_for(streaming(body)).run(req(openai_stream_usage="omit"))
    assert result.tokens == {"prompt": 12, "output": 1, "cached_prompt": 7, "source": "timings"}
    assert result.backend["prompt_n"] == 5


def test_it_collects_reasoning_separately_and_counts_it_for_ttft_any_only():
    body = sse(delta(reasoning_content="think "), delta(reasoning_content="more"), delta(content="answer"),
               finish(), {"choices": [], "usage": USAGE}, b"[DONE]")
    result = adapter_for(streaming(*[body[i:i + 40] for i in range(0, len(body), 40)])).run(req())
    assert result.reasoning_text == "think more"
    assert result.output_text == "answer"
    assert result.timing["ttft_any_s"] <= result.timing["ttft_s"]


def test_it_counts_tool_call_deltas_as_tokens_for_ttft_any():
    call = {"index": 0, "id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    body = sse(delta(tool_calls=[call]), finish("tool_calls"), b"[DONE]")
    result = adapter_for(streaming(body)).run(req())
    assert result.ok and result.output_text == ""
    assert result.timing["ttft_any_s"] is not None and result.timing["ttft_s"] is None


def test_it_reports_an_unreachable_endpoint_as_a_failed_result():
    result = OpenAIChatAdapter().run(req(endpoint="http://127.0.0.1:9/v1", timeout_s=5))
    assert not result.ok
    assert result.error.startswith("cannot connect to http://127.0.0.1:9/v1/chat/completions")
    assert result.timing["wall_s"] >= 0 and result.timing["ttft_s"] is None


def test_it_keeps_partial_text_when_the_stream_breaks():
    def pieces():
        yield sse(delta(content="par"), delta(content="tial"))
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")
    result = adapter_for(lambda r: httpx.Response(200, content=pieces())).run(req())
    assert not result.ok
    assert "connection closed mid-stream after 2 events" in result.error
    assert result.output_text == "partial"
    assert len(result.response_payload) == 2


def test_it_fails_a_stream_that_ends_without_done_or_finish_reason():
    result = adapter_for(streaming(sse(delta(content="x")))).run(req())
    assert not result.ok and "without [DONE]" in result.error and result.output_text == "x"


def test_it_fails_on_an_error_event_inside_the_stream():
    body = sse(delta(content="x"), {"error": {"message": "context too long", "code": 500}})
    result = adapter_for(streaming(body)).run(req())
    assert not result.ok and "context too long" in result.error


def test_it_fails_on_a_malformed_event():
    result = adapter_for(streaming(b"data: {not json\n\n")).run(req())
    assert not result.ok and result.error.startswith("malformed stream event")


def test_it_stops_reading_at_an_error_event_even_if_the_server_keeps_the_stream_open():
    def pieces():
        yield sse(delta(content="x"))
        yield sse({"error": {"message": "out of memory", "code": 500}})
        raise AssertionError("read past the error event")
    result = adapter_for(lambda r: httpx.Response(200, content=pieces())).run(req())
    assert not result.ok and "out of memory" in result.error and result.output_text == "x"


def test_it_reports_a_malformed_event_before_a_later_break_of_the_connection():
    def pieces():
        yield sse(delta(content="x")) + b"data: {not json\n\n"
        raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")
    result = adapter_for(lambda r: httpx.Response(200, content=pieces())).run(req())
    assert not result.ok and result.error.startswith("malformed stream event") and result.output_text == "x"


def test_it_stamps_each_event_with_the_arrival_of_the_read_that_carried_it():
    reads = [sse(delta(role="assistant")), sse(delta(content="a")), sse(delta(content="b"), delta(content="c")),
             sse(finish(), {"choices": [], "usage": USAGE}, b"[DONE]")]
    result, trace = adapter_for(streaming(*reads)).run_traced(req())
    assert result.ok and result.output_text == "abc" and trace.chunks == 4
    assert len(trace.content_times) == 3 and trace.content_times[1] == trace.content_times[2]
    assert trace.content_times[0] <= trace.content_times[1] <= trace.end


def test_it_pauses_the_garbage_collector_only_while_the_request_is_on_the_wire():
    import gc

    seen = []

    def reply(request):
        seen.append(gc.isenabled())
        return streaming(sse(delta(content="x"), finish(), b"[DONE]"))(request)
    assert adapter_for(reply).run(req()).ok
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        adapter_for(reply).run(req())
        assert not gc.isenabled()  # a caller that turned it off keeps it off
    finally:
        gc.enable()


@pytest.mark.parametrize("endpoint, url", [
    ("http://h:1/v1/chat/completions", "http://h:1/v1/chat/completions"),
    ("http://h:1/v1", "http://h:1/v1/chat/completions"),
    ("http://h:1/v1/", "http://h:1/v1/chat/completions"),
    ("http://h:1", "http://h:1/v1/chat/completions"),
    ("http://h:1/openai/deployments/x/chat", "http://h:1/openai/deployments/x/chat"),
])
def test_it_resolves_the_endpoint_to_a_chat_completions_url(endpoint, url):
    assert chat_completions_url(endpoint) == url


def test_it_applies_the_documented_timing_formulas():
    trace = StreamTrace(start=10.0, first_byte=10.05, end=12.0,
                        content_times=[10.5, 11.0, 11.5], token_times=[10.2, 10.5, 11.0, 11.5])
    timing = compute_timing(trace, output_tokens=5, prompt_tokens=100, streamed=True)
    assert timing["wall_s"] == pytest.approx(2.0)
    assert timing["ttft_s"] == pytest.approx(0.5)
    assert timing["ttfb_s"] == pytest.approx(0.05)
    assert timing["ttft_any_s"] == pytest.approx(0.2)
    assert timing["prefill_tps"] == round(100 / 0.5, 4)
    assert timing["decode_tps"] == round(5 / 1.5, 4)
    assert timing["total_tps"] == round(5 / 2.0, 4)
    # Reasoning tokens are part of the output count, so the span covers them too.
    assert timing["tpot_s"] == pytest.approx((11.5 - 10.2) / 4)


def test_it_leaves_tpot_null_below_two_output_tokens():
    trace = StreamTrace(start=0.0, end=1.0, content_times=[0.5], token_times=[0.5])
    assert compute_timing(trace, 1, 3, streamed=True)["tpot_s"] is None


def test_it_knows_every_adapter_and_rejects_others():
    from benchpack.commands.run import ADAPTER_CHOICES

    assert ADAPTER_IDS == ("openai-chat", "ollama-generate", "anthropic-messages", "openai-responses")
    assert ADAPTER_CHOICES == ADAPTER_IDS  # the CLI offers exactly the registered ones
    assert {get_adapter(i).id for i in ADAPTER_IDS} == set(ADAPTER_IDS)
    with pytest.raises(ConfigError, match="unknown adapter 'vllm'"):
        get_adapter("vllm")


def test_it_stops_at_an_error_event_over_a_real_connection_the_server_keeps_open():
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    release = threading.Event()

    def serve():
        conn, _ = listener.accept()
        with conn, listener:
            conn.recv(65536)
            events = sse(delta(content="x"), {"error": {"message": "out of memory"}})
            conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n" % (len(events), events))
            release.wait(60)  # and then says nothing more

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    result = OpenAIChatAdapter().run(req(endpoint=f"http://127.0.0.1:{listener.getsockname()[1]}", timeout_s=60))
    still_open = server.is_alive()  # it returned while the server was still holding the stream open
    release.set()
    assert not result.ok and "out of memory" in result.error and result.output_text == "x"
    assert still_open


def test_it_reports_the_model_the_server_named_and_why_it_stopped():
    body = (sse({**delta(content="Hi"), "model": "served-alias"}) + sse({**finish("length"), "model": "served-alias"})
            + sse({"choices": [], "usage": USAGE}) + sse(b"[DONE]"))
    streamed = adapter_for(streaming(body)).run(req(model="typo-name"))
    assert streamed.served_model == "served-alias" and streamed.finish_reason == "length"
    payload = {"model": "other", "choices": [{"message": {"content": "x"}, "finish_reason": "stop"}], "usage": USAGE}
    plain = adapter_for(lambda r: httpx.Response(200, json=payload)).run(req(stream=False))
    assert plain.served_model == "other" and plain.finish_reason == "stop"
    assert plain.timing["rate_source"] is None and streamed.timing["rate_source"] == "client"
