"""Rows whose reads could not place their tokens, counted and explained (docs/measurement.md, "What the
reads could not see").

A row's `timing.placement` is set by the adapter when a network read held more than its timing can say:
every token in one read (`tpot: "one_read"`, `tpot_s` null), or a first read whose TTFT is known only as a
bound (`ttft: "upper"` / `"lower"`), with `reader_late_s`, how long before the read's stamp its bytes can have
started arriving. The run summary, the report and compare print `placement_note`, so no median is read
without knowing how many rows it left out, or took as a bound, and why.
"""

from __future__ import annotations

from typing import Iterable

# msgspec.Struct, not @dataclass: a dataclass compiles its generated methods from source text in every
# process (~0.4 ms a class); a Struct is built in C (docs/measurement.md, "Issue 34 item 2: stop 43").
import msgspec

# A read whose bytes can have arrived at most this long before its stamp was not late: the tokens in it
# were sent together (rundelay.MARGIN_S plus a wake-up).
ON_TIME_S = 0.002


class Unplaced(msgspec.Struct):
    ok: int = 0
    tpot: int = 0  # rows with tpot_s null because every token came in one read
    upper: int = 0  # rows whose ttft_s is an upper bound
    lower: int = 0  # ... a lower bound
    late: list[float] = msgspec.field(default_factory=list)  # reader_late_s of those rows, where measured
    unmeasured: int = 0  # marked rows whose read was not watched


def count(rows: Iterable[dict]) -> Unplaced:
    seen = Unplaced()
    for row in rows:
        if row.get("ok") is not True:
            continue
        seen.ok += 1
        timing = row.get("timing")
        placement = timing.get("placement") if isinstance(timing, dict) else None
        if not isinstance(placement, dict):
            continue
        seen.tpot += placement.get("tpot") == "one_read"
        seen.upper += placement.get("ttft") == "upper"
        seen.lower += placement.get("ttft") == "lower"
        late = placement.get("reader_late_s")
        if isinstance(late, (int, float)) and not isinstance(late, bool):
            seen.late.append(float(late))
        else:
            seen.unmeasured += 1
    return seen


def _why(seen: Unplaced) -> str:
    if not seen.late:
        return "the reader's lateness was not measured (no kernel receive stamps here)"
    low, high = min(seen.late) * 1000, max(seen.late) * 1000
    late = f"the reader was {high:.1f} ms late" if len(seen.late) == 1 or high - low < 0.05 \
        else f"the reader was {low:.1f}–{high:.1f} ms late"
    if high / 1000 <= ON_TIME_S:
        late += ": the server sent the tokens together"
    if seen.unmeasured:
        late += f"; not measured for {seen.unmeasured}"
    return late


def placement_note(rows: Iterable[dict]) -> str | None:
    """One sentence on the rows whose reads could not place their tokens; None when there are none."""
    seen = count(rows)
    parts = []
    if seen.tpot:
        parts.append(f"{seen.tpot} of {seen.ok} ok row{'s' if seen.ok != 1 else ''} "
                     f"{'have' if seen.tpot != 1 else 'has'} no TPOT (every token came in one network read, "
                     "which says nothing about their spacing)")
    bounds = seen.upper + seen.lower
    if bounds:
        kinds = ", ".join(text for n, text in ((seen.upper, f"{seen.upper} at most"),
                                               (seen.lower, f"{seen.lower} at least")) if n)
        parts.append(f"{bounds} row{'s' if bounds != 1 else ''}' TTFT is only a bound ({kinds}: "
                     "the first read held several tokens)")
    if not parts:
        return None
    return "; ".join(parts) + f" — {_why(seen)}."
