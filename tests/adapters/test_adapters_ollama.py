import json

import httpx
import pytest

from benchpack.adapters import AdapterRequest
from benchpack.adapters.ollama_generate import OllamaGenerateAdapter, generate_url

FINAL = {"model": "m", "response": "", "done": True, "done_reason": "stop", "total_duration": 900_000_000,
         "load_duration": 1_000, "prompt_eval_count": 20, "prompt_eval_duration": 100_000_000,
         "eval_count": 4, "eval_duration": 200_000_000}


def ndjson(*objs) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objs)


def adapter_for(reply, seen=None):
    def handler(request):
        if seen is not None:
            seen.append((str(request.url), json.loads(request.content)))
        return reply(request)
    return OllamaGenerateAdapter(client=httpx.Client(transport=httpx.MockTransport(handler)))


def req(**overrides):
    fields = dict(model="m", prompt="hi", endpoint="http://ollama.test:11434", temperature=0.2, max_tokens=64,
                  stream=True)
    fields.update(overrides)
    return AdapterRequest(**fields)


def test_it_maps_options_and_posts_to_api_generate():
    seen = []
    adapter_for(lambda r: httpx.Response(200, json=FINAL), seen).run(req(stream=False))
    url, body = seen[0]
    assert url == "http://ollama.test:11434/api/generate"
    assert body == {"model": "m", "prompt": "hi", "stream": False, "options": {"temperature": 0.2, "num_predict": 64}}


def test_it_merges_extra_options_into_the_options_object():
    seen = []
    adapter_for(lambda r: httpx.Response(200, json=FINAL), seen).run(
        req(stream=False, extra_body={"options": {"num_ctx": 8192}, "keep_alive": "5m"}))
    body = seen[0][1]
    assert body["options"] == {"temperature": 0.2, "num_predict": 64, "num_ctx": 8192}
    assert body["keep_alive"] == "5m"


def test_it_reads_ndjson_split_anywhere_and_maps_native_counters():
    body = ndjson({"response": "Hel", "done": False}, {"response": "lo", "done": False},
                  {"thinking": "hmm", "done": False}, FINAL)
    pieces = [body[i:i + 9] for i in range(0, len(body), 9)]
    result = adapter_for(lambda r: httpx.Response(200, content=iter(pieces))).run(req())
    assert result.ok, result.error
    assert result.output_text == "Hello" and result.reasoning_text == "hmm"
    assert result.tokens == {"prompt": 20, "output": 4, "cached_prompt": None, "source": "native"}
    assert result.backend["prompt_eval_duration"] == 100_000_000
    assert result.backend["prefill_tps"] == 200.0  # 20 tokens / 0.1 s, Ollama's own clock
    assert result.backend["decode_tps"] == 20.0    # 4 tokens / 0.2 s
    assert result.timing["ttft_s"] is not None
    assert result.timing["decode_tps"] == round(4 / (result.timing["wall_s"] - result.timing["ttft_s"]), 4)
    assert result.response_payload[-1]["done"] is True


def test_it_reads_a_non_streamed_reply():
    result = adapter_for(lambda r: httpx.Response(200, json={**FINAL, "response": "Paris"})).run(req(stream=False))
    assert result.ok and result.output_text == "Paris"
    assert result.timing["ttft_s"] is None and result.timing["total_tps"] is not None


def test_it_reports_ollama_errors_with_their_message():
    result = adapter_for(lambda r: httpx.Response(404, json={"error": "model 'm' not found"})).run(req())
    assert not result.ok and result.error == "HTTP 404: model 'm' not found"


def test_it_fails_a_stream_that_never_says_done_and_keeps_the_text():
    result = adapter_for(lambda r: httpx.Response(200, content=ndjson({"response": "half", "done": False}))).run(req())
    assert not result.ok and "without a done=true line" in result.error
    assert result.output_text == "half"


def test_it_reports_an_unreachable_server():
    result = OllamaGenerateAdapter().run(req(endpoint="http://127.0.0.1:9", timeout_s=5))
    assert not result.ok and result.error.startswith("cannot connect to http://127.0.0.1:9/api/generate")


@pytest.mark.parametrize("endpoint", ["http://h:11434", "http://h:11434/", "http://h:11434/api/generate"])
def test_it_accepts_a_base_url_or_the_full_generate_url(endpoint):
    assert generate_url(endpoint) == "http://h:11434/api/generate"


def test_it_stops_reading_at_an_error_line_even_if_the_server_keeps_the_stream_open():
    def pieces():
        yield ndjson({"response": "par", "done": False})
        yield ndjson({"error": "out of memory"})
        raise AssertionError("read past the error line")
    result = adapter_for(lambda r: httpx.Response(200, content=pieces())).run(req())
    assert not result.ok and "out of memory" in result.error and result.output_text == "par"


def test_it_stamps_each_line_with_the_arrival_of_the_read_that_completed_it():
    wire = ndjson({"response": "a", "done": False}, {"response": "b", "done": False}, FINAL)
    cut = wire.index(b"\n") + 5  # the second line arrives split over two reads
    result, trace = adapter_for(lambda r: httpx.Response(200, content=iter([wire[:cut], wire[cut:]]))).run_traced(req())
    assert result.ok and result.output_text == "ab" and trace.chunks == 2
    assert len(trace.content_times) == 2 and trace.content_times[0] <= trace.content_times[1] <= trace.end


def test_a_plain_response_fills_prefill_and_decode_from_ollamas_own_counters_tagged_native():
    result = adapter_for(lambda r: httpx.Response(200, json={**FINAL, "response": "Paris"})).run(req(stream=False))
    assert result.ok
    # 20 prompt tokens in 0.1 s, 4 output tokens in 0.2 s: Ollama's clock, not the client's.
    assert (result.timing["prefill_tps"], result.timing["decode_tps"]) == (200.0, 20.0)
    assert result.timing["rate_source"] == "native"
    assert result.timing["ttft_s"] is None and result.timing["total_tps"] is not None
    assert result.served_model == "m" and result.finish_reason == "stop"


def test_a_streamed_response_keeps_the_clients_own_rates():
    body = ndjson({"response": "Par", "done": False}, {"response": "is", "done": False}, FINAL)
    result = adapter_for(lambda r: httpx.Response(200, content=iter([body]))).run(req())
    assert result.timing["rate_source"] == "client"
    assert result.timing["prefill_tps"] != 200.0
