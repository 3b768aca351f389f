"""The registry's one question: which model + runtime + machine is fast enough and correct enough
for my work?

A question fixes the kind of work (a pack, or "coding": every bundled pack with repo tasks), and
any of: a minimum decode rate, a maximum time to the first token, a minimum pass rate, a hardware
class, a memory budget. The answer is every system whose whole-pack leaderboard row meets all of
it, ranked, each with its evidence (runs, spread, reproduced or not, the runs' plausibility verdicts); and when nothing does, the rows that came closest and by how
much they missed. The page (`registry_site.catalogue.pages.answer`) and the API (`registry_site.catalogue.api.answer`)
both call `answer`; rules and examples: docs/answer.md.

Speed, for a row whose runs had an external agent solve the tasks through the measuring proxy, is the
agent's own (metrics.AGENT_METRICS: decode and TTFT over the agent's turns, the medians the boards show
in their agent columns); for any other row it is the runner's request (decode_rate, ttft_s). Each
candidate says which (`speed_basis`).

Candidates are leaderboard rows (one system on one whole-pack workload, over its public runs), with
the rankings' demo rule: demo rows leave once real rows exist for the same workload. A figure that
was not measured (a pack without pass/fail scoring, a row without a decode rate) never meets a
condition on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from benchpack.results import metrics as metric_registry
from benchpack.results.plausibility import IMPLAUSIBLE, PLAUSIBLE, UNCHECKED
from registry_site.catalogue.leaderboard import PLAUSIBILITY_TIER
from registry_site.catalogue.models import LeaderboardEntry
from registry_site.catalogue.pack_words import pack_words

CODING = "coding"
CLOSEST = 3  # rows shown as "came closest" when nothing meets the question
MAX_ROWS = 200  # systems answered; the rest are counted
_RAM = re.compile(r"(\d+)gb$")


class QuestionError(ValueError):
    """A question the catalogue cannot answer; `param` names the parameter at fault."""

    def __init__(self, param: str, message: str):
        super().__init__(f"{param}: {message}")
        self.param = param
        self.message = message


# The numeric parameters' bounds (low, high, what): the view refuses outside them, the API schema states them.
NUMBER_BOUNDS = {
    "min_decode": (0, 1e6, "tokens per second"),
    "max_ttft": (0, 1e4, "seconds to the first token"),
    "min_pass": (0, 100, "a percentage of tasks passed"),
    "max_memory_gb": (0, 1e5, "GB of memory"),
}


@dataclass(frozen=True)
class Question:
    work: str  # a pack id, or CODING
    min_decode_tps: float | None = None
    max_ttft_s: float | None = None
    min_pass_rate: float | None = None  # 0..1
    hardware_class: str | None = None
    max_memory_gb: float | None = None

    PARAMS = ("work", "min_decode", "max_ttft", "min_pass", "hardware_class", "max_memory_gb")

    @classmethod
    def from_params(cls, params) -> "Question":
        """From request parameters (strings; blank = unset). `min_pass` is a percentage (0–100)."""

        def text(name):
            value = params.get(name)
            return str(value).strip() if value is not None and str(value).strip() else None

        def number(name, low, high, what):
            raw = text(name)
            if raw is None:
                return None
            try:
                value = float(raw)
            except ValueError:
                raise QuestionError(name, f"{raw[:40]!r} is not a number ({what})") from None
            if not low <= value <= high:
                raise QuestionError(name, f"{raw[:40]} is outside {low:g}–{high:g} ({what})")
            return value

        work = text("work")
        if work is None:
            raise QuestionError("work", 'is required: a pack id, or "coding"')
        passed = number("min_pass", *NUMBER_BOUNDS["min_pass"])
        return cls(work=work, min_decode_tps=number("min_decode", *NUMBER_BOUNDS["min_decode"]),
                   max_ttft_s=number("max_ttft", *NUMBER_BOUNDS["max_ttft"]),
                   min_pass_rate=None if passed is None else passed / 100,
                   hardware_class=text("hardware_class"),
                   max_memory_gb=number("max_memory_gb", *NUMBER_BOUNDS["max_memory_gb"]))

    @property
    def asks_anything(self) -> bool:
        return any(v is not None for v in (self.min_decode_tps, self.max_ttft_s, self.min_pass_rate))


@dataclass
class Miss:
    """One condition a row does not meet, in words, and how far off it is (0 = met, 1 = unknown)."""

    text: str
    gap: float


@dataclass
class Candidate:
    entry: LeaderboardEntry
    misses: list[Miss] = field(default_factory=list)

    @property
    def meets(self) -> bool:
        return not self.misses

    @property
    def shortfall(self) -> float:
        return sum(m.gap for m in self.misses)

    @property
    def memory_gb(self) -> int | None:
        return memory_gb(self.entry.hardware_class)

    @property
    def pass_rate(self) -> float | None:
        return pass_rate(self.entry)

    @property
    def speed_basis(self) -> str:
        return speed_basis(self.entry)

    @property
    def decode(self) -> float | None:
        """The decode rate the question is judged on (see `speed_basis`)."""
        return decode_of(self.entry)

    @property
    def ttft(self) -> float | None:
        return ttft_of(self.entry)

    @property
    def plausibility(self) -> dict:
        """plausibility status -> runs behind the row (stored on the leaderboard row)."""
        return self.entry.plausibility_runs or {}

    @property
    def plausibility_verdict(self) -> str:
        """implausible if any run behind the row is; plausible if every run is; else unchecked."""
        return self.entry.plausibility or UNCHECKED

    @property
    def plausibility_text(self) -> str:
        return self.entry.plausibility_text

    @property
    def caveat(self) -> str:
        """What the row says when its figures meet the question but were never shown plausible: an
        unchecked or implausible row is never counted as meeting a condition silently (issue 30 item 5)."""
        if self.plausibility_verdict == PLAUSIBLE:
            return ""
        if self.plausibility_verdict == IMPLAUSIBLE:
            return ("its figures are implausible for its hardware (published on an operator's override): "
                    "they may not be real")
        return ("its figures were not checked against its hardware (plausibility unchecked): "
                "nothing shows they are possible")


@dataclass
class Answer:
    question: Question
    packs: list[str]
    meets: list[Candidate]
    closest: list[Candidate]
    considered: int  # rows that passed the hardware filters
    total_meeting: int
    checked_meeting: int = 0  # of those, rows whose every run was judged plausible

    @property
    def nothing_meets(self) -> bool:
        return not self.meets


def pass_rate(entry: LeaderboardEntry) -> float | None:
    """Tasks passed over tasks scored, across every run behind the row: the metric registry's one
    pass rate, the same figure the boards and the API show."""
    return metric_registry.pass_rate(entry.correct, entry.scored)


AGENT, REQUEST = "agent", "request"


def speed_basis(entry: LeaderboardEntry) -> str:
    """"agent" when the row's runs measured an agent's turns (its decode and TTFT are the agent's), else
    "request" (the runner's own request per case)."""
    return AGENT if entry.agent_decode_rate is not None or entry.agent_ttft_s is not None else REQUEST


def decode_of(entry: LeaderboardEntry) -> float | None:
    return entry.agent_decode_rate if speed_basis(entry) == AGENT else entry.decode_rate


def ttft_of(entry: LeaderboardEntry) -> float | None:
    return entry.agent_ttft_s if speed_basis(entry) == AGENT else entry.ttft_s


def memory_gb(hardware_class: str) -> int | None:
    """The RAM bucket at the end of a hardware class ("…+64gb", "apple-m5-max-128gb")."""
    found = _RAM.search(hardware_class or "")
    return int(found.group(1)) if found else None


def coding_packs() -> frozenset[str]:
    from registry_site.catalogue.pages.leaderboards import coding_pack_ids

    return coding_pack_ids()


def packs_for(work: str) -> list[str]:
    """The packs a kind of work covers; QuestionError if none has public results."""
    known = set(LeaderboardEntry.objects.filter(case="").values_list("pack_id", flat=True).distinct())
    if work == CODING:
        return sorted(known & coding_packs())
    if work not in known:
        choices = ", ".join(sorted(known)[:20]) or "none yet"
        raise QuestionError("work", f"{work[:60]!r} has no public results; one of: coding, {choices}")
    return [work]


def work_choices() -> list[str]:
    """What the form offers: "coding" first, then every pack with a whole-pack board, ordered by the
    kind of work and title a visitor reads in the list (registry_site.catalogue.pack_words)."""
    packs = set(LeaderboardEntry.objects.filter(case="").values_list("pack_id", flat=True).distinct())
    return [CODING, *sorted(packs, key=lambda p: (pack_words(p).label.lower(), p))]


def _misses(entry: LeaderboardEntry, q: Question) -> list[Miss]:
    misses = []
    who = "the agent " if speed_basis(entry) == AGENT else ""
    decode, ttft = decode_of(entry), ttft_of(entry)
    if q.min_decode_tps is not None:
        if decode is None:
            misses.append(Miss("decode rate not measured", 1.0))
        elif decode < q.min_decode_tps:
            gap = (q.min_decode_tps - decode) / q.min_decode_tps if q.min_decode_tps else 0.0
            misses.append(Miss(f"{who}decodes {decode:.1f} tok/s, {gap:.0%} below {q.min_decode_tps:g}", gap))
    if q.max_ttft_s is not None:
        if ttft is None:
            misses.append(Miss("time to first token not measured", 1.0))
        elif ttft > q.max_ttft_s:
            gap = (ttft - q.max_ttft_s) / q.max_ttft_s if q.max_ttft_s else 1.0
            misses.append(Miss(f"{who}first token after {ttft:.2f} s, {gap:.0%} over {q.max_ttft_s:g} s",
                               min(gap, 1.0)))
    if q.min_pass_rate is not None:
        rate = pass_rate(entry)
        if rate is None:
            misses.append(Miss("not scored pass/fail", 1.0))
        elif rate < q.min_pass_rate:
            # a failure that was a suspicious answer (it introspected the verifier) is said, not hidden in the rate
            suspicious = f" ({entry.suspicious_answers} of the failures suspicious)" if entry.suspicious_answers else ""
            misses.append(Miss(f"passes {rate:.0%} of tasks{suspicious}, below {q.min_pass_rate:.0%}",
                               q.min_pass_rate - rate))
    return misses


def _sort_key(candidate: Candidate, q: Question):
    e = candidate.entry
    # Correct enough first when correctness was asked for, then fastest decode, then quickest first token.
    passed = -(pass_rate(e) or 0.0) if q.min_pass_rate is not None else 0.0
    # Checked rows first: an unchecked row with an invented GPU never heads the answer.
    decode, ttft = decode_of(e), ttft_of(e)
    return (PLAUSIBILITY_TIER.get(candidate.plausibility_verdict, 1), passed, -(decode or 0.0),
            ttft if ttft is not None else float("inf"), e.pk)


def answer(q: Question) -> Answer:
    """The systems that meet every condition of `q`, best first, or the closest ones when none does."""
    packs = packs_for(q.work)
    entries = LeaderboardEntry.objects.filter(case="", pack_id__in=packs).demo_left_out()
    if q.hardware_class:
        entries = entries.filter(hardware_class=q.hardware_class)
    candidates = [Candidate(e, _misses(e, q)) for e in entries.defer("workload_fields", "system_fields")]
    if q.max_memory_gb is not None:
        candidates = [c for c in candidates if c.memory_gb is not None and c.memory_gb <= q.max_memory_gb]
    meets = sorted((c for c in candidates if c.meets), key=lambda c: _sort_key(c, q))
    closest = [] if meets else sorted(candidates, key=lambda c: (c.shortfall, _sort_key(c, q)))[:CLOSEST]
    checked = sum(1 for c in meets if c.plausibility_verdict == PLAUSIBLE)
    return Answer(question=q, packs=packs, meets=meets[:MAX_ROWS], closest=closest, considered=len(candidates),
                  total_meeting=len(meets), checked_meeting=checked)
