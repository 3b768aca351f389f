"""The metric registry: every figure Benchpack shows or ranks, defined once.

Each figure has a name (the key in JSON output and in the service's columns),
a label (what a page or table prints), a unit, a direction (which way is
better), its formula in words, which rows it applies to, whether boards may
rank by it, and how its value is read from a `run.jsonl` row. The CLI
summary, `report`, `compare`, the local registry and the service take their
figures and labels from here; docs/measurement.md's formula table is
generated from it (`formula_table()`, tested equal).

`decode_rate` is *the* decode figure: 1 / tpot_s, the rate over the gaps
between tokens. The seed's `decode_tps` (output ÷ (wall − TTFT)) counts the
first token in the numerator but not its time, an n/(n−1) bias that depends
on the answer's length; it stays in rows for compatibility, is always
labelled by its formula, and is never ranked.
"""

from __future__ import annotations

import math
from typing import Any, Callable

# msgspec.Struct, not @dataclass: a dataclass compiles its generated methods from source text in every
# process (~0.4 ms a class); a Struct is built in C (docs/measurement.md, "Issue 34 item 2: stop 43").
import msgspec

HIGHER = "higher"
LOWER = "lower"


def _path(row: dict, dotted: str) -> Any:
    value: Any = row
    for part in dotted.split("."):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return value


def decode_rate_of(row: dict) -> float | None:
    """1 / tpot_s of one row; None when the row has no positive TPOT."""
    tpot = _number(_path(row, "timing.tpot_s"))
    return 1 / tpot if tpot is not None and tpot > 0 else None


class Metric(msgspec.Struct, frozen=True):
    name: str
    label: str
    unit: str
    direction: str | None  # HIGHER, LOWER, or None (a count: not better either way)
    formula: str
    applies_to: str  # which rows carry it
    rankable: bool
    digits: int  # decimals when a table prints it
    read: Callable[[dict], Any]  # the value of one run.jsonl row

    def value(self, row: dict) -> float | int | None:
        return _number(self.read(row))

    def display(self, value: Any) -> str:
        """The digits a table shows for a value of this figure ("—" when there is none)."""
        value = _number(value)
        return "—" if value is None else f"{value:.{self.digits}f}"

    @property
    def heading(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label


def _at(dotted: str) -> Callable[[dict], Any]:
    return lambda row: _path(row, dotted)


def _pass(row: dict) -> float | None:
    scoring = row.get("scoring") if isinstance(row.get("scoring"), dict) else {}
    passed = scoring.get("passed")
    return None if not isinstance(passed, bool) else float(passed)


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("ttft_s", "TTFT", "s", LOWER,
           "first visible content chunk's arrival − request start (client clock)",
           "streamed rows with visible content", True, 3, _at("timing.ttft_s")),
    Metric("tpot_s", "TPOT", "s", LOWER,
           "(last token chunk − first token chunk) ÷ (output tokens − 1)",
           "streamed rows with 2+ output tokens", True, 4, _at("timing.tpot_s")),
    Metric("decode_rate", "decode", "tok/s", HIGHER,
           "1 ÷ TPOT",
           "streamed rows with 2+ output tokens", True, 1, decode_rate_of),
    Metric("prefill_tps", "prefill", "tok/s", HIGHER,
           "prompt tokens ÷ TTFT (only when the server evaluated the prompt: not served from its cache)",
           "streamed rows with a prompt count, prompt not cached", True, 1, _at("timing.prefill_tps")),
    Metric("wall_s", "wall", "s", LOWER,
           "last byte of the response − request start",
           "every row", True, 3, _at("timing.wall_s")),
    Metric("total_tps", "total", "tok/s", HIGHER,
           "output tokens ÷ wall",
           "rows with an output count", False, 1, _at("timing.total_tps")),
    Metric("decode_tps", "output ÷ (wall − TTFT)", "tok/s", HIGHER,
           "output tokens ÷ (wall − TTFT) — legacy seed figure, biased by n/(n−1); never ranked",
           "streamed rows (kept for the seed format's compatibility)", False, 1, _at("timing.decode_tps")),
    Metric("output_tokens", "output", "tokens", None,
           "completion tokens the server reports (usage), else counted chunks",
           "rows with an output count", False, 0, _at("tokens.output")),
    Metric("pass_rate", "pass rate", "", HIGHER,
           "tasks passed ÷ tasks scored, counted over every run behind the figure (never a median of "
           "runs' own rates), with a 95 % Wilson interval",
           "answered rows of scored packs", True, 2, _pass),
    # An external agent's session, measured by the proxy over every model request the agent made
    # (`agent_session`, docs/agents.md): the speed a coding agent actually saw while solving the task.
    Metric("time_to_solution_s", "time to solution", "s", LOWER,
           "agent started → agent exited, per task (the agent's own tool and test time included, the verifier's not)",
           "repo-task rows an external agent solved through the measuring proxy", True, 1,
           _at("agent_session.time_to_solution_s")),
    Metric("agent_decode_rate", "agent decode", "tok/s", HIGHER,
           "1 ÷ the median TPOT over the agent's streamed turns (agent_session.decode_tps_p50)",
           "repo-task rows whose agent streamed 2+ tokens in a turn", True, 1, _at("agent_session.decode_tps_p50")),
    Metric("agent_ttft_s", "agent TTFT", "s", LOWER,
           "median TTFT over the agent's streamed turns (agent_session.ttft_p50_s)",
           "repo-task rows whose agent streamed a turn", True, 3, _at("agent_session.ttft_p50_s")),
    Metric("agent_turns", "turns", "", None,
           "model requests the agent made in its session, through the proxy",
           "repo-task rows an external agent solved through the measuring proxy", False, 0,
           _at("agent_session.turns")),
)}
# The figures of an agent's session, in the order every surface shows them beside the pass rate.
AGENT_METRICS = ("agent_decode_rate", "agent_ttft_s", "time_to_solution_s")

# The figure a board ranks by when the request does not name one, best
# first: decode when every row of the board has it, else TTFT, else the pass
# rate (`board_default`).
DEFAULT_RANK_ORDER = ("decode_rate", "ttft_s", "pass_rate", "wall_s")
RANKABLE = tuple(name for name, m in METRICS.items() if m.rankable)


def pass_rate(passed: int | None, scored: int | None) -> float | None:
    """The one pass rate: tasks passed ÷ tasks scored, over every run pooled (2 of 3 is 0.67
    whether the three tasks came from one run or three). None when nothing was scored."""
    if not scored or passed is None:
        return None
    return passed / scored


def pass_interval(passed: int | None, scored: int | None, z: float = 1.959964) -> tuple[float, float] | None:
    """The 95 % Wilson score interval of `pass_rate`: honest at small counts (1 of 1 is 0.21–1.0,
    not a certain 100 %), never outside 0–1. None when nothing was scored."""
    if not scored or passed is None:
        return None
    p = passed / scored
    denominator = 1 + z * z / scored
    centre = (p + z * z / (2 * scored)) / denominator
    half = z * math.sqrt(p * (1 - p) / scored + z * z / (4 * scored * scored)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def pass_text(passed: int | None, scored: int | None, suspicious: int = 0) -> str:
    """How every surface words a pass rate: "67 % (2 of 3 tasks; 95 % interval 21–94 %)", and, when some of
    the failed tasks were suspicious answers, " · 1 suspicious: introspected the verifier, scored as failed"."""
    rate, interval = pass_rate(passed, scored), pass_interval(passed, scored)
    if rate is None or interval is None:
        return "not scored"
    low, high = (round(x * 100) for x in interval)
    text = (f"{round(rate * 100)} % ({passed} of {scored} task{'s' if scored != 1 else ''}; "
            f"95 % interval {low}–{high} %)")
    return f"{text} · {suspicious_text(suspicious)}" if suspicious else text


def suspicious_text(suspicious: int) -> str:
    """A row's suspicious answers in words (a repo-task verdict `suspicious`: the answer introspects its caller
    or environment, docs/audits.md). They are in the pass rate as failed tasks; this says how many of the
    failures were that, so a cheat never reads as an honest wrong answer. "" when there are none."""
    if not suspicious:
        return ""
    return f"{suspicious} suspicious: introspected the verifier, scored as failed"


def metric(name: str) -> Metric:
    return METRICS[name]


def label(name: str) -> str:
    return METRICS[name].label


def board_default(has_value: Callable[[str], bool]) -> str:
    """The first of DEFAULT_RANK_ORDER every row of a board has (`has_value(name)`), else wall_s."""
    for name in DEFAULT_RANK_ORDER:
        if has_value(name):
            return name
    return "wall_s"


def formula_table() -> str:
    """docs/measurement.md's table of figures, as Markdown (tests compare it with the file)."""
    lines = ["| figure | label | unit | better | formula | rows | ranked |",
             "|--------|-------|------|--------|---------|------|--------|"]
    for m in METRICS.values():
        lines.append(f"| `{m.name}` | {m.label} | {m.unit or '—'} | {m.direction or '—'} | {m.formula} | "
                     f"{m.applies_to} | {'yes' if m.rankable else 'never'} |")
    return "\n".join(lines)


if __name__ == "__main__":  # `python -m benchpack.results.metrics`: the table docs/measurement.md embeds
    print(formula_table())
