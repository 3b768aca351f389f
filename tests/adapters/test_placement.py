"""Item 1 of issue 34: a row never claims what its reads could not see. A reply whose tokens all came in
one network read gets `tpot_s: null` and a TTFT marked as a bound, with how late the reader was."""

from benchpack.adapters.base import AdapterRequest, StreamTrace, compute_timing
from benchpack.adapters.ollama_generate import OllamaGenerateAdapter
from benchpack.adapters.openai_chat import OpenAIChatAdapter
from benchpack.refserver.server import RefServer
from benchpack.results.placement import placement_note


def test_a_scripted_burst_gives_no_tpot_and_a_ttft_bound_and_the_note_counts_it():
    adapter = OpenAIChatAdapter()
    try:
        with RefServer(responses=[{"tokens": 6}], ttft_s=0.003, itl_s=0.002, burst=True) as srv:
            results = [adapter.run_traced(AdapterRequest(model="ref", prompt="p", endpoint=srv.openai_url,
                                                         max_tokens=6, stream=True)) for _ in range(2)]
            log = srv.log()
    finally:
        adapter.close()
    rows = []
    for (result, trace), record in zip(results, log):
        assert result.ok and result.tokens["output"] == 6
        # the server wrote every token at once: one send time for all six
        assert len(set(record["content_times"])) == 1 and len(record["content_times"]) == 6
        timing = result.timing
        assert timing["tpot_s"] is None and timing["decode_tps"] is None
        assert timing["placement"]["tpot"] == "one_read" and timing["placement"]["ttft"] == "upper"
        # an upper bound: never before the server sent the first token
        assert timing["ttft_s"] >= record["content_times"][0] - trace.start
        rows.append({"ok": True, "timing": timing})
    note = placement_note(rows)
    assert note.startswith("2 of 2 ok rows have no TPOT") and "TTFT is only a bound (2 at most" in note


def test_a_spaced_reply_has_no_placement():
    """A reply the server really spaced, read on time, is placed by its reads: no mark, a real TPOT.

    The scripted server shares this process: on a saturated machine its sleeps overshoot and it sends late
    tokens together, and the client's reader can itself be late by more than the spacing, so that several
    spaced tokens wait in one buffer. Either is rightly marked; the reader's own lateness is in the mark. So:
    every spaced reply is unmarked or marked with a reader late by more than the spacing, and at least one
    spaced reply in up to four rounds of five is unmarked (a client that marked every reply fails)."""
    unmarked = 0
    for _ in range(4):
        adapter = OpenAIChatAdapter()
        try:
            with RefServer(responses=[{"tokens": 4}], ttft_s=0.003, itl_s=0.004) as srv:
                results = [adapter.run(AdapterRequest(model="ref", prompt="p", endpoint=srv.openai_url, max_tokens=4,
                                                      stream=True)) for _ in range(5)]
                log = srv.log()
        finally:
            adapter.close()
        for result, record in zip(results, log):
            if min(b - a for a, b in zip(record["content_times"], record["content_times"][1:])) < 0.003:
                continue  # the server did not space this one
            placement = result.timing["placement"]
            if placement is None:
                assert result.timing["tpot_s"] > 0.003
                unmarked += 1
            else:
                assert (placement["reader_late_s"] or 0.0) >= 0.003, placement
        if unmarked:
            break
    assert unmarked


def test_ollama_burst_is_marked_too():
    adapter = OllamaGenerateAdapter()
    try:
        with RefServer(responses=[{"tokens": 5}], ttft_s=0.003, itl_s=0.002, burst=True) as srv:
            result = adapter.run(AdapterRequest(model="ref", prompt="p", endpoint=srv.ollama_url, max_tokens=5,
                                                stream=True))
    finally:
        adapter.close()
    assert result.ok and result.timing["tpot_s"] is None and result.timing["placement"]["tpot"] == "one_read"


def test_compute_timing_marks_one_read_and_a_clamped_first_read():
    one = StreamTrace(start=1.0, end=1.06, content_times=[1.05] * 4, earliest={1.05: 1.01})
    timing = compute_timing(one, 4, 10, streamed=True)
    assert timing["tpot_s"] is None and timing["decode_tps"] is None
    assert timing["placement"]["ttft"] == "upper" and timing["placement"]["tpot"] == "one_read"
    assert abs(timing["placement"]["reader_late_s"] - 0.04) < 1e-9
    assert abs(timing["ttft_s"] - 0.05) < 1e-9  # the read's stamp: the first token came no later
    # First read of three woken on time by a burst: TTFT is the run-delay bound, a lower bound.
    clamped = StreamTrace(start=1.0, end=1.08, content_times=[1.05, 1.05, 1.05, 1.06, 1.07, 1.08],
                          earliest={1.05: 1.0475})
    timing = compute_timing(clamped, 6, 10, streamed=True)
    assert timing["placement"]["ttft"] == "lower" and timing["placement"]["tpot"] is None
    assert abs(timing["placement"]["reader_late_s"] - 0.0025) < 1e-9
    assert abs(timing["ttft_s"] - 0.0475) < 1e-9 and timing["tpot_s"] is not None
    # One token in one read is a placed figure; so is an unwatched late first read spread at its spacing.
    assert compute_timing(StreamTrace(start=1.0, end=1.05, content_times=[1.05]), 1, 10, True)["placement"] is None
    late = StreamTrace(start=1.0, end=1.08, content_times=[1.05, 1.05, 1.05, 1.06, 1.07, 1.08])
    assert compute_timing(late, 6, 10, streamed=True)["placement"] is None


def _text_then_call(tool_follows_content: bool) -> dict:
    # One read at 10 ms held the text's three chunks and the call's first three; the call's last fragment
    # came 1 ms later. Placed from its own spacing alone, the call's first chunk would be 2 ms before the read.
    trace = StreamTrace(start=0.0, end=0.012)
    first_read, later = 0.010, 0.011
    if tool_follows_content:
        trace.content_times += [first_read] * 3
    for now in (first_read, first_read, first_read, later):
        trace.add_tool_chunk(now)
    if not tool_follows_content:
        trace.content_times += [first_read] * 3
    trace.token_times = sorted(trace.content_times + trace.tool_times)
    return compute_timing(trace, 7, 10, streamed=True)


def test_a_call_that_followed_text_is_never_placed_before_the_text():
    timing = _text_then_call(tool_follows_content=True)
    assert timing["ttft_tool_s"] >= timing["ttft_s"] == 0.010
    assert timing["ttft_any_s"] <= timing["ttft_s"]


def test_a_call_that_came_first_keeps_its_own_placement():
    timing = _text_then_call(tool_follows_content=False)
    assert abs(timing["ttft_tool_s"] - 0.008) < 1e-9 and timing["ttft_tool_s"] < timing["ttft_s"]
    assert timing["ttft_any_s"] <= timing["ttft_tool_s"]


def test_a_late_first_read_is_never_placed_before_the_head_or_the_request():
    # Four chunks in the first read at 30 ms, the last 20 ms after: by that spacing alone the first chunk
    # would be placed at -30 ms, before the request was sent (seen at 64 streams on a loaded machine).
    chunks = [0.030] * 4 + [0.050]
    head_apart = compute_timing(StreamTrace(start=0.0, first_byte=0.001, end=0.06, content_times=chunks), 5, 10,
                                streamed=True)
    head_with_them = compute_timing(StreamTrace(start=0.0, first_byte=0.030, end=0.06, content_times=chunks), 5, 10,
                                    streamed=True)
    for timing in (head_apart, head_with_them):  # the read's stamp, as for a reply in one read: never flattering
        assert timing["ttft_s"] == 0.030 and timing["placement"]["ttft"] == "upper"
    assert head_apart["ttfb_s"] == 0.001 and head_with_them["ttfb_s"] == 0.030
    # watched (the reader's run delay known), the bound is the later of that and the head
    watched = compute_timing(StreamTrace(start=0.0, first_byte=0.001, end=0.06, content_times=chunks,
                                         earliest={0.030: -0.5}), 5, 10, streamed=True)
    assert watched["ttft_s"] == 0.001 and watched["placement"]["ttft"] == "lower"
    # spaced as the stream is spaced, the placement stands
    spaced = compute_timing(StreamTrace(start=0.0, first_byte=0.001, end=0.06, content_times=[0.030] * 2 + [0.031]),
                            3, 10, streamed=True)
    assert abs(spaced["ttft_s"] - 0.029) < 1e-9 and spaced["placement"] is None
    # the head in the same read as those chunks: never after the first token placed before that read
    with_head = compute_timing(StreamTrace(start=0.0, first_byte=0.030, end=0.06, content_times=[0.030] * 2 + [0.031]),
                               3, 10, streamed=True)
    assert with_head["ttfb_s"] == with_head["ttft_s"] and abs(with_head["ttft_s"] - 0.029) < 1e-9
