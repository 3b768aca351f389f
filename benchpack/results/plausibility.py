"""Plausibility bounds: is a row's speed physically possible on the hardware it names?

Decode on one stream is memory-bound: every generated token reads the
weights once (all of them for a dense model, the active experts' for a
mixture of experts), so no decode rate can exceed the memory bandwidth
divided by the bytes read per token. Prefill is compute-bound: a prompt
token costs at least 2 × parameters FLOPs, so no prefill rate can exceed
the peak FLOP/s divided by that. Both bounds are loose (peak figures from
`benchpack.results.chips`, the model's bytes as a floor on what a token
reads) — and still catch every fabricated or mislabelled number that
matters, which is off by multiples, not by percent.

Per row, one `Verdict`:

* `plausible`: every figure the row has sits under its bound;
* `implausible`: a figure exceeds its bound, named with the factor —
  "decode 3.1× the bandwidth limit of Apple M2 Pro";
* `unchecked`: the bound could not be computed, and why (no model size, a
  chip not in the table, a scripted endpoint, speculative decoding the
  server reported). Unchecked is not plausible: the service asks an
  operator for a written reason to publish it, as for implausible.

A run is implausible when any row is; `unchecked` is shown, never hidden.
An implausible row makes a submission invalid for publication unless an
operator overrides it with a written reason (the service records that as
an event). The model's size comes from what the server reported at run
time (llama-server `/v1/models` meta `n_params`/`size`, Ollama `/api/show`),
which the runner keeps apart from the user's values in run-metadata.json's
`benchpack.server_reported`; failing that, from the parameter count in the
model's name ("7B", "135M") and its quantization's bits per weight. Hardware
limits come from the chip table (`benchpack.results.chips`), never from the
submission. A model whose weights do not fit in the machine's memory is
implausible unless the run declares offloading (`runtime.offload`).
docs/measurement.md says which evidence each bound rests on and who could
forge it.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any, Iterable

from benchpack.results import chips
from benchpack.results.metrics import decode_rate_of

PLAUSIBLE = "plausible"
IMPLAUSIBLE = "implausible"
UNCHECKED = "unchecked"
VERDICTS = (PLAUSIBLE, IMPLAUSIBLE, UNCHECKED)

# Runtimes that are not a model: a scripted endpoint's speed is whatever its script says.
SCRIPTED_RUNTIMES = ("benchpack-refserver", "refserver", "scripted", "demo")

# Bits per weight by quantization (the smallest of a family, so bytes are a floor).
_QUANT_BITS = (
    (r"IQ1", 1.56), (r"(?:IQ2|Q2)", 2.06), (r"(?:IQ3|Q3)", 3.06), (r"(?:IQ4|Q4|MXFP4|NVFP4|INT4|4BIT)", 4.0),
    (r"Q5", 5.0), (r"Q6", 6.0), (r"(?:Q8|INT8|FP8|8BIT)", 8.0), (r"(?:F16|BF16|FP16)", 16.0), (r"(?:F32|FP32)", 32.0),
)
# Without any quantization, the smallest weights anyone ships (IQ1) keep the bound an upper bound.
_FLOOR_BITS = 1.56
_MOE_NAMES = re.compile(r"mixtral|\bmoe\b|-moe|gpt-oss|deepseek-(?:v2|v3|r1)|olmoe|qwen\d?-?\d*.*-a\d+(?:\.\d+)?b|"
                        r"llama-?4|scout|maverick|glm-4\.5|kimi|dbrx|arctic|jamba|\d+x\d+b", re.IGNORECASE)
_ACTIVE = re.compile(r"-A(\d+(?:\.\d+)?)B\b", re.IGNORECASE)
_PARAMS = re.compile(r"(?<![A-Za-z0-9.])(\d+(?:\.\d+)?)\s*([BM])(?![A-Za-z])", re.IGNORECASE)


@dataclass(frozen=True)
class Verdict:
    status: str  # PLAUSIBLE | IMPLAUSIBLE | UNCHECKED
    reason: str
    factor: float | None = None  # the largest measured ÷ bound among the checked figures
    figure: str | None = None  # which figure gave that factor: "decode" | "prefill"

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ModelSize:
    params: float  # parameters read per token (active ones for a mixture of experts)
    bytes: float  # bytes of weights read per token
    source: str
    total_bytes: float | None = None  # every weight: what must fit in memory


@dataclass(frozen=True)
class Platform:
    name: str
    bandwidth_gbs: float
    peak_tflops: float
    source: str


# ---------------------------------------------------------------- model size


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        return None
    return float(value)


def _bits(*texts: Any) -> float | None:
    for text in texts:
        if isinstance(text, str) and text:
            for pattern, bits in _QUANT_BITS:
                if re.search(pattern, text, re.IGNORECASE):
                    return bits
    return None


def _params_from_name(name: str) -> float | None:
    found = [float(n) * (1e9 if unit.upper() == "B" else 1e6) for n, unit in _PARAMS.findall(name)]
    return max(found) if found else None


def _section(value: Any, name: str) -> dict:
    found = value.get(name) if isinstance(value, dict) else None
    return found if isinstance(found, dict) else {}


def server_reported(metadata: dict | None) -> dict:
    """`benchpack.server_reported`: what the server said about itself, recorded by the runner apart from
    the user's values (`benchpack.run.metadata.server_reported`). The only evidence a bound takes from
    run metadata; everything else in the file is the submitter's claim."""
    return _section(_section(metadata, "benchpack"), "server_reported")


def model_size(metadata: dict | None, model_name: str | None = None) -> ModelSize | str:
    """The weights one decoded token reads, or why they are unknown.

    Evidence, strongest first: the size the server reported (`benchpack.server_reported.model`); else the
    parameter count in the model's name. A size the user's own `model` section claims only ever
    tightens a bound (the larger figure is taken): `params: 1000` makes nothing plausible. The active
    share of a mixture of experts only as the model file states it: the expert counts the server read
    from the file, or an `-A3B` in the file name the server reported; a `-moe` name or expert counts in the
    user's metadata do not loosen the bound (the model is bounded as dense, every weight read per token).
    """
    server = _section(server_reported(metadata), "model")
    user = _section(metadata, "model")
    reported = _section(_section(_section(metadata, "benchpack"), "reported"), "model")
    names = [n for n in (server.get("file"), reported.get("served"), reported.get("file"), user.get("served"),
                         user.get("file"), reported.get("requested"), user.get("requested"), model_name)
             if isinstance(n, str) and n]
    text = " ".join(names)
    params, size = _number(server.get("params")), _number(server.get("size_bytes"))
    source = server.get("size_source") if isinstance(server.get("size_source"), str) else "the server"
    config = _section(server_reported(metadata), "config")
    bits = max([b for b in (_bits(config.get("quantization")), _bits(user.get("quantization")),
                            _bits(reported.get("quantization")), _bits(text)) if b] or [_FLOOR_BITS])
    if params is None and size is None:
        params = _params_from_name(text)
        source = "the model's name"
        if params is None:
            return "the model's size is unknown (the server did not report it and the model's name does not give it)"
        claimed = _number(user.get("params"))
        if claimed and claimed > params:  # a claim may only tighten the bound
            params, source = claimed, "run metadata (larger than the model's name says)"
    if params is not None and size is None:
        size = params * bits / 8
    if params is None:
        params = size * 8 / 16  # a size alone: at most 16 bits per weight gives the fewest parameters
    share = 1.0
    experts, used = _number(server.get("expert_count")), _number(server.get("expert_used_count"))
    active = _ACTIVE.search(server.get("file") or "") if isinstance(server.get("file"), str) else None
    if experts and used and experts > 1:
        share = min(1.0, used / experts)
    elif active:
        share = min(1.0, float(active.group(1)) * 1e9 / params)
    elif _MOE_NAMES.search(text) or _number(user.get("expert_count")) not in (None, 1.0):
        source += "; a mixture of experts by name or claim only, bounded as dense (every weight read per token)"
    return ModelSize(params * share, size * share, source, total_bytes=size)


# ---------------------------------------------------------------- platform


def _gpus(hardware: dict) -> list[dict]:
    gpus = hardware.get("gpus") if isinstance(hardware.get("gpus"), list) else []
    return [g for g in gpus if isinstance(g, dict) and g.get("model")]


def platform(hardware: dict | None, metadata: dict | None = None) -> Platform | str:
    """The host's memory bandwidth and peak throughput from the chip table, or why they are unknown.

    Hardware limits come from the table, never from the submission: at most `chips.MAX_GPUS_PER_MACHINE`
    GPUs add bandwidth (the fastest ones), a CPU platform's declared memory only tightens its entry
    (channels above the platform's count are ignored), and a GPU or — with no GPU — a CPU the table does
    not know leaves the row unchecked.
    """
    hardware = hardware if isinstance(hardware, dict) else {}
    unified = chips.find_chip(hardware.get("chip"), ("apple", "unified")) or chips.find_chip(
        hardware.get("cpu_model"), ("apple", "unified"))
    if unified:
        return Platform(unified.name, unified.bandwidth_gbs, unified.peak_tflops, unified.source)
    cpu_count = _number(hardware.get("cpu_count")) or 1
    cpu = chips.find_chip(hardware.get("cpu_model"), ("cpu",))
    cpu_bw, cpu_name = (cpu.bandwidth_gbs, cpu.name) if cpu else (None, None)
    declared = _section(_section(metadata, "hardware"), "memory")
    if cpu and declared and cpu.channels:
        channels = declared.get("channels")
        if isinstance(channels, int) and not isinstance(channels, bool):
            channels = min(channels, cpu.channels)  # invented channels are ignored, never added
        bandwidth = chips.memory_bandwidth_gbs(declared.get("type", ""), channels)
        if bandwidth and bandwidth < cpu_bw:
            cpu_bw, cpu_name = bandwidth, f"{cpu.name}, {declared.get('type')} × {channels} channels"
    cpu_tflops = cpu_count * chips.CPU_OPS_PER_CORE_TFLOPS
    gpus = []
    for gpu in _gpus(hardware):
        chip = chips.find_chip(str(gpu["model"]), ("gpu", "apple", "unified"))
        if chip is None:
            return f"GPU {gpu['model']!r} is not in the chip table"
        gpus.append(chip)
    if gpus:
        counted = sorted(gpus, key=lambda c: c.bandwidth_gbs, reverse=True)[:chips.MAX_GPUS_PER_MACHINE]
        gpu_bw = sum(c.bandwidth_gbs for c in counted)
        names = " + ".join(c.name for c in counted)
        if len(gpus) > len(counted):
            names += f" (of {len(gpus)} GPUs named; one machine holds at most {chips.MAX_GPUS_PER_MACHINE})"
        # A split over GPU and CPU is never faster than its fastest memory; tensor-parallel GPUs at most their sum.
        return Platform(names, max(gpu_bw, cpu_bw or 0.0), sum(c.peak_tflops for c in counted) + cpu_tflops,
                        "; ".join(sorted({c.source for c in counted})))
    if cpu_bw is None:
        model = hardware.get("cpu_model") or "unknown"
        return f"CPU {model!r} is not in the chip table (and the run names no GPU the table knows)"
    return Platform(cpu_name or "CPU", cpu_bw, cpu_tflops, cpu.source)


# ---------------------------------------------------------------- memory fit

# What the operating system and the runtime keep for themselves: 10 % of RAM, at least 1 GiB.
OS_RESERVE_FRACTION = 0.10
OS_RESERVE_MIN_BYTES = 2**30


def offload_declared(metadata: dict | None) -> bool:
    """`runtime.offload` in the run metadata (true, or a non-empty description such as "mmap from NVMe"):
    the run streamed weights from disk, so they need not fit in memory."""
    value = _section(metadata, "runtime").get("offload")
    return value is True or (isinstance(value, str) and bool(value.strip()))


def memory_fit(hardware: dict | None, size: ModelSize) -> tuple[float, str] | None:
    """Why the weights cannot fit in the machine's memory (RAM + VRAM less the OS's reserve), or None
    when they fit or the machine's memory is unknown."""
    hardware = hardware if isinstance(hardware, dict) else {}
    ram = _number(hardware.get("ram_mb"))
    if ram is None or size.total_bytes is None:
        return None
    ram_bytes = ram * 2**20
    vram = sum(_number(g.get("vram_mb")) or 0.0 for g in _gpus(hardware)[:chips.MAX_GPUS_PER_MACHINE]) * 2**20
    usable = ram_bytes - max(OS_RESERVE_MIN_BYTES, OS_RESERVE_FRACTION * ram_bytes) + vram
    if size.total_bytes <= usable:
        return None
    return size.total_bytes / usable, (f"memory {size.total_bytes / usable:.1f}× what the machine holds: weights of "
            f"{size.total_bytes / 1e9:,.1f} GB in {usable / 1e9:,.1f} GB (RAM + VRAM less the OS's reserve), "
            f"and the run declares no offloading (runtime.offload)")


# ---------------------------------------------------------------- verdicts


def _scripted_reason(metadata: dict | None) -> str | None:
    runtime = (metadata or {}).get("runtime")
    name = runtime.get("name") if isinstance(runtime, dict) else None
    if isinstance(name, str) and name.lower() in SCRIPTED_RUNTIMES:
        return f"a scripted endpoint ({name}): its speed is its script's, not a model's"
    if (metadata or {}).get("demo") is True:
        return "a demo run: its figures are made up"
    return None


def _speculative(metadata: dict | None) -> bool:
    """Speculative decoding only with the server's word: a key naming a draft model in the configuration
    the server reported (`benchpack.server_reported.config`). A user's config or server command is a claim."""
    config = _section(server_reported(metadata), "config")
    return any("draft" in str(k).lower() and v not in (None, False, "", 0) for k, v in config.items())


def _prefill_rate(row: dict) -> float | None:
    timing = row.get("timing") if isinstance(row.get("timing"), dict) else {}
    tokens = row.get("tokens") if isinstance(row.get("tokens"), dict) else {}
    ttft, prompt, cached = _number(timing.get("ttft_s")), _number(tokens.get("prompt")), tokens.get("cached_prompt")
    if ttft is None or prompt is None:
        return None
    cached = _number(cached) or 0.0
    evaluated = prompt - cached
    return evaluated / ttft if evaluated > 0 else None


def _fmt(factor: float) -> str:
    return f"{factor:.1f}" if factor < 100 else f"{factor:,.0f}"


def row_verdict(row: dict, size: ModelSize | str, host: Platform | str, *, scripted: str | None = None,
                speculative: bool = False, misfit: tuple[float, str] | None = None) -> Verdict:
    if scripted:
        return Verdict(UNCHECKED, scripted)
    if row.get("ok") is not True:
        return Verdict(UNCHECKED, "the row failed: it has no speed to check")
    if isinstance(size, str):
        return Verdict(UNCHECKED, size)
    if misfit:  # no speed is possible for a model the machine cannot hold
        return Verdict(IMPLAUSIBLE, misfit[1], round(misfit[0], 3), "memory")
    if isinstance(host, str):
        return Verdict(UNCHECKED, host)
    timing = row.get("timing") if isinstance(row.get("timing"), dict) else {}
    checks: list[tuple[str, float, float, str]] = []  # (figure, measured, bound, what bounds it)
    decode_bound = host.bandwidth_gbs * 1e9 / size.bytes
    rates = [r for r in (decode_rate_of(row), _number(timing.get("decode_tps")), _number(timing.get("total_tps")))
             if r is not None]
    if rates and not speculative:
        checks.append(("decode", max(rates), decode_bound, "bandwidth limit"))
    prefill = _prefill_rate(row)
    if prefill is not None and host.peak_tflops > 0:
        checks.append(("prefill", prefill, host.peak_tflops * 1e12 / (2 * size.params), "compute limit"))
    if not checks:
        why = "speculative decoding (a draft model) lifts the bandwidth bound" if speculative else \
            "the row has no decode or prefill figure to check"
        return Verdict(UNCHECKED, why)
    figure, measured, bound, what = max(checks, key=lambda c: c[1] / c[2])
    factor = measured / bound
    if factor > 1.0:
        return Verdict(IMPLAUSIBLE, f"{figure} {_fmt(factor)}× the {what} of {host.name} "
                                    f"({measured:,.1f} tok/s measured, at most {bound:,.1f} possible)",
                       round(factor, 3), figure)
    return Verdict(PLAUSIBLE, f"{figure} at {factor:.0%} of the {what} of {host.name}", round(factor, 3), figure)


def run_model_name(rows: Iterable[dict]) -> str | None:
    """The model name a run's bounds read: the first row's that is a string."""
    return next((r.get("model") for r in rows if isinstance(r.get("model"), str)), None)


@dataclass(frozen=True)
class RunBounds:
    """What every row of one run is judged against: a function of its hardware, metadata and model name
    only, so runs that share those can share it (`run_bounds`)."""

    size: ModelSize | str
    host: Platform | str
    misfit: tuple[float, str] | None
    scripted: str | None
    speculative: bool


def run_bounds(hardware: dict | None, metadata: dict | None, model_name: str | None) -> RunBounds:
    size = model_size(metadata, model_name)
    misfit = None if isinstance(size, str) or offload_declared(metadata) else memory_fit(hardware, size)
    return RunBounds(size, platform(hardware, metadata), misfit, _scripted_reason(metadata), _speculative(metadata))


def run_row_verdicts(rows: Iterable[dict], hardware: dict | None, metadata: dict | None,
                     bounds: RunBounds | None = None) -> list[Verdict]:
    """One verdict per row of one run, in row order. `bounds`: `run_bounds` of this run's hardware, metadata
    and model name, when the caller already has them (publishing many runs of one system)."""
    rows = list(rows)
    if bounds is None:
        bounds = run_bounds(hardware, metadata, run_model_name(rows))
    return [row_verdict(r, bounds.size, bounds.host, scripted=bounds.scripted, speculative=bounds.speculative,
                        misfit=bounds.misfit) for r in rows]


def _rows(count: int) -> str:
    return f"{count} row" if count == 1 else f"{count} rows"


def run_verdict(verdicts: Iterable[Verdict]) -> Verdict:
    """A run's verdict: implausible if any row is (the worst one named), else plausible if
    any row was checked and none was left unchecked for a reason other than failing, else unchecked."""
    verdicts = list(verdicts)
    bad = [v for v in verdicts if v.status == IMPLAUSIBLE]
    if bad:
        worst = max(bad, key=lambda v: v.factor or 0)
        return Verdict(IMPLAUSIBLE, f"{len(bad)} of {_rows(len(verdicts))} implausible; worst: {worst.reason}",
                       worst.factor, worst.figure)
    good = [v for v in verdicts if v.status == PLAUSIBLE]
    skipped = [v for v in verdicts if v.status == UNCHECKED and not v.reason.startswith("the row failed")]
    if good and not skipped:
        top = max(good, key=lambda v: v.factor or 0)
        return Verdict(PLAUSIBLE, f"{_rows(len(good))} checked; highest: {top.reason}", top.factor, top.figure)
    if skipped:
        return Verdict(UNCHECKED, skipped[0].reason)
    return Verdict(UNCHECKED, "no row has a speed to check")


def summary(verdicts: Iterable[Verdict]) -> dict:
    """Counts per status plus the run's verdict: what a page or the API shows."""
    verdicts = list(verdicts)
    counts = {status: sum(1 for v in verdicts if v.status == status) for status in VERDICTS}
    return {"verdict": run_verdict(verdicts).to_dict(), "rows": counts}
