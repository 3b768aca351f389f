from hypothesis import given, settings
from hypothesis import strategies as st

from benchpack.adapters.sse import SSEEvent, SSEParser


def feed_all(pieces):
    parser = SSEParser()
    events = []
    for piece in pieces:
        events.extend(parser.feed(piece))
    events.extend(parser.close())
    return events, parser


def test_it_returns_one_event_per_blank_line_terminated_block():
    events, _ = feed_all([b'data: {"a":1}\n\ndata: [DONE]\n\n'])
    assert [e.data for e in events] == [b'{"a":1}', b"[DONE]"]


def test_it_holds_a_partial_event_until_its_blank_line_arrives():
    parser = SSEParser()
    assert parser.feed(b'data: {"a"') == []
    assert parser.feed(b":1}\n") == []
    assert parser.feed(b"\n") == [SSEEvent(b'{"a":1}')]


def test_it_counts_keepalive_comments_and_emits_no_event_for_them():
    events, parser = feed_all([b": keep-alive\n\n: ping\n\ndata: x\n\n"])
    assert [e.data for e in events] == [b"x"]
    assert parser.comments == 2


def test_it_joins_multiple_data_lines_with_newlines():
    events, _ = feed_all([b"data: one\ndata: two\ndata:three\n\n"])
    assert events == [SSEEvent(b"one\ntwo\nthree")]


def test_it_accepts_crlf_and_cr_line_endings_even_when_crlf_is_split():
    events, _ = feed_all([b"data: a\r", b"\n\r", b"\ndata: b\r\r"])
    assert [e.data for e in events] == [b"a", b"b"]


def test_it_keeps_event_names_and_ids():
    events, _ = feed_all([b"event: error\nid: 7\ndata: {}\n\n"])
    assert events == [SSEEvent(b"{}", "error", "7")]


def test_it_finishes_a_last_event_that_lacks_its_blank_line_on_close():
    events, _ = feed_all([b"data: [DONE]"])
    assert [e.data for e in events] == [b"[DONE]"]


def test_it_strips_a_leading_byte_order_mark():
    events, _ = feed_all([b"\xef\xbb\xbfdata: x\n\n"])
    assert [e.data for e in events] == [b"x"]


# --- any split of a valid stream yields the same events ---------------------

_text = st.text(alphabet=st.characters(blacklist_characters="\r\n\x00", blacklist_categories=("Cs",)), max_size=20)
_event = st.fixed_dictionaries({
    "data": st.lists(_text, min_size=1, max_size=3),
    "name": st.none() | st.from_regex(r"[a-z]{1,8}", fullmatch=True),
    "comment": st.booleans(),
})


def _encode(events, newline: bytes) -> bytes:
    out = b""
    for ev in events:
        if ev["comment"]:
            out += b": keep-alive" + newline
        if ev["name"]:
            out += b"event: " + ev["name"].encode() + newline
        for line in ev["data"]:
            out += b"data: " + line.encode() + newline
        out += newline
    return out


@settings(max_examples=150, deadline=None)
@given(events=st.lists(_event, min_size=1, max_size=8), newline=st.sampled_from([b"\n", b"\r\n", b"\r"]),
       cuts=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_it_yields_the_same_events_for_every_way_the_bytes_are_split(events, newline, cuts):
    stream = _encode(events, newline)
    points = sorted({c % (len(stream) + 1) for c in cuts})
    pieces = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)])]
    whole, _ = feed_all([stream])
    split, _ = feed_all(pieces)
    assert split == whole
    assert [e.data for e in whole] == ["\n".join(ev["data"]).encode() for ev in events]
    assert [e.event for e in whole] == [ev["name"] for ev in events]


# --- feed_reads: the batch path gives what feed gives, read by read ------------

def feed_each(reads):
    parser, datas, index = SSEParser(), [], []
    for i, read in enumerate(reads):
        for event in parser.feed(read):
            datas.append(event.data)
            index.append(i)
    return datas, index


def feed_batches(reads, first):
    parser = SSEParser()
    head_datas, head_index = parser.feed_reads(reads[:first])
    tail_datas, tail_index = parser.feed_reads(reads[first:])
    return head_datas + tail_datas, list(head_index) + [first + i for i in tail_index]


_line = st.text(alphabet=st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=12)


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(_line, min_size=1, max_size=10), odd=st.lists(st.sampled_from([
    b": keep-alive\n\n", b"data: two\ndata: lines\n\n", b"data: a\r\n\r\n", b"data: half", b"\n\n",
    b"event: x\ndata: named\n\n", b"data: a\n\ndata: b\n\n", b"data:nospace\n\n", b"\xef\xbb\xbfdata: bom\n\n"]),
    max_size=3), positions=st.lists(st.integers(0, 20), max_size=3), first=st.integers(0, 14))
def test_it_gives_the_same_events_and_reads_in_batches_as_one_read_at_a_time(lines, odd, positions, first):
    reads = [b"data: " + line.encode() + b"\n\n" for line in lines]  # one event per read, as servers write
    for piece, pos in zip(odd, positions):
        reads.insert(pos % (len(reads) + 1), piece)
    assert feed_batches(reads, min(first, len(reads))) == feed_each(reads)


def test_it_splits_a_batch_of_one_event_per_read_by_read():
    parser = SSEParser()
    parser.feed(b": hello\n\n")
    datas, index = parser.feed_reads([b"data: {}\n\n", b"data: x\n\n", b"data: y\n\ndata: [DONE]\n\n"])
    assert datas == [b"{}", b"x", b"y", b"[DONE]"] and list(index) == [0, 1, 2, 2]
