"""Incremental Server-Sent Events parser over raw bytes.

Network reads do not line up with events: one read can hold half an event,
or several events at once. `SSEParser.feed()` takes whatever bytes arrived
and returns the events that are now complete, carrying partial lines and
partial events over to the next call.

Follows the WHATWG rules that matter for LLM servers: lines end in LF, CRLF
or CR (a CRLF may be split across reads), `data:` lines of one event are
joined with LF, one space after the colon is dropped, lines starting with
`:` are comments (keep-alives), a blank line dispatches the event.

It stays on bytes end to end (json.loads reads bytes) because per-chunk
client CPU is part of what the runner promises to keep small.
"""

from __future__ import annotations

import re
from itertools import repeat
from typing import NamedTuple, Sequence

_LF = b"\n"
_CR = b"\r"
_BOM = b"\xef\xbb\xbf"


def _whole_data_events(reads: list[bytes], first: int) -> tuple[list[bytes], list[int]] | None:
    """When the reads hold only whole single-line `data: ` events: their data and the read each came from.

    Reads are numbered from `first`. Every step is one C-level call over
    the whole batch; only reads holding several events are visited one by one.
    """
    if not all(map(bytes.endswith, reads, repeat(b"\n\n"))):
        return None
    counts = list(map(bytes.count, reads, repeat(b"\n\n")))
    events = sum(counts)
    joined = b"".join(reads)
    # Every LF belongs to a blank-line pair and every pair but the last is
    # followed by "data: ": the reads are whole events of one data line
    # each, and a read ends where an event ends.
    if (joined.count(_LF) != 2 * events or not joined.startswith(b"data: ")
            or joined.count(b"\n\ndata: ") != events - 1 or _CR in joined):
        return None
    index = list(range(first, first + len(reads)))
    if events != len(reads):
        several = [j for j, n in enumerate(counts) if n != 1] if max(counts) > 255 else \
            [m.start() for m in _NOT_ONE.finditer(bytes(counts))]
        for j in reversed(several):  # from the back, so earlier positions stay put
            index[j:j + 1] = [first + j] * counts[j]
    return joined[6:-2].split(b"\n\ndata: "), index


_NOT_ONE = re.compile(rb"[^\x01]")


class SSEEvent(NamedTuple):
    # A tuple: built in C, no per-instance dict, cheap at one per token.
    data: bytes
    event: str | None = None
    id: str | None = None


class SSEParser:
    __slots__ = ("_tail", "_data", "_event", "_id", "_skip_lf", "_started", "_clean", "comments")

    def __init__(self) -> None:
        self._tail = b""  # bytes after the last complete line
        self._data: bytes | None = None  # data of the event being assembled
        self._event: str | None = None
        self._id: str | None = None
        self._skip_lf = False  # the previous read ended in CR; a leading LF belongs to it
        self._started = False
        # Nothing carried over between reads (no tail, no half-built event,
        # no pending CR) and the BOM check done: the fast path may run.
        self._clean = False
        self.comments = 0  # keep-alive / comment lines seen

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        # Fast path for the usual read: whole `data: ` events, LF line ends,
        # nothing pending. Same result as the general path, a fraction of the work.
        if self._clean and chunk[-2:] == b"\n\n" and chunk[:6] == b"data: " and _CR not in chunk:
            if chunk.find(_LF) == len(chunk) - 2:  # exactly one event
                return [SSEEvent(chunk[6:-2], None, self._id)]
            events = []
            for block in chunk[:-2].split(b"\n\n"):
                if block[:6] != b"data: " or _LF in block:
                    break
                events.append(SSEEvent(block[6:], None, self._id))
            else:
                return events
        events = self._feed(chunk)
        self._clean = self._started and not self._tail and self._data is None and self._event is None \
            and not self._skip_lf
        return events

    def feed_reads(self, reads: list[bytes]) -> tuple[list[bytes], Sequence[int]]:
        """Feed many reads at once: the data of every event they complete, and for each the index of its read.

        For readers that keep only `data` (event names and ids are tracked
        but not returned). When the reads hold only whole single-line
        `data: ` events with LF line ends, as streaming servers write them,
        the batch is checked and split by a handful of C-level calls instead
        of one Python-level pass per read; otherwise it is the same as
        `feed` per read. The stream's first read, which settles the parser
        state, always goes through `feed`.
        """
        datas: list[bytes] = []
        index: list[int] = []
        i = 0
        while i < len(reads) and not self._clean:  # the stream's first read(s): BOM check, state to settle
            self._feed_one(reads[i], i, datas, index)
            i += 1
        bulk = _whole_data_events(reads[i:], i) if len(reads) - i > 1 else None
        if bulk is not None:
            datas += bulk[0]
            index += bulk[1]
            i = len(reads)
        for j in range(i, len(reads)):
            self._feed_one(reads[j], j, datas, index)
        return datas, index

    def _feed_one(self, read: bytes, i: int, datas: list[bytes], index: list[int]) -> None:
        for event in self.feed(read):
            datas.append(event.data)
            index.append(i)

    def _feed(self, chunk: bytes) -> list[SSEEvent]:
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == _LF:
                chunk = chunk[1:]
        if not self._started and chunk:
            self._started = True
            if chunk.startswith(_BOM):
                chunk = chunk[3:]
        if _CR in chunk:
            if chunk[-1:] == _CR:
                self._skip_lf = True
            chunk = chunk.replace(b"\r\n", _LF).replace(_CR, _LF)
        if self._tail:
            chunk = self._tail + chunk
        end = chunk.rfind(_LF)
        if end < 0:
            self._tail = chunk
            return []
        self._tail = chunk[end + 1:]
        events: list[SSEEvent] = []
        for line in chunk[:end].split(_LF):
            self._line(line, events)
        return events

    def close(self) -> list[SSEEvent]:
        """End of stream: finish a last line and event that lacked their terminators.

        The standard discards an undispatched event at end of stream; servers
        that end with `data: [DONE]\\n` and no blank line are common enough
        that dropping it would turn a good run into an error.
        """
        events: list[SSEEvent] = []
        if self._tail:
            self._line(self._tail, events)
            self._tail = b""
        self._line(b"", events)
        return events

    def _line(self, line: bytes, events: list[SSEEvent]) -> None:
        if not line:
            if self._data is not None:
                events.append(SSEEvent(self._data, self._event, self._id))
            self._data = None
            self._event = None
            return
        if line.startswith(b"data:"):
            value = line[6:] if line[5:6] == b" " else line[5:]
            self._data = value if self._data is None else self._data + _LF + value
            return
        if line[0] == 58:  # ":" comment, servers use it for keep-alives
            self.comments += 1
            return
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":  # "data" with no colon: an empty data line
            self._data = b"" if self._data is None else self._data + _LF
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        elif name == b"id" and b"\0" not in value:
            self._id = value.decode("utf-8", "replace")
        # "retry" and unknown fields carry nothing a benchmark needs.
