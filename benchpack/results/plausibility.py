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
  chip not in the table, a scripted endpoint, a mixture of experts whose
  active share is unknown, speculative decoding).

A run is implausible when any row is; `unchecked` is shown, never hidden.
An implausible row makes a submission invalid for publication unless an
operator overrides it with a written reason (the service records that as
an event). The model's size comes from what the server reported at run
time (llama-server `/v1/models` meta `n_params`/`size`, Ollama `/api/show`),
written to run-metadata.json's `model.params` / `model.size_bytes`, or
from the user's run metadata; failing both, from the parameter count in
the model's name ("7B", "135M") and its quantization's bits per weight.
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


def model_size(metadata: dict | None, model_name: str | None = None) -> ModelSize | str:
    """The weights one decoded token reads, or why they are unknown."""
    model = (metadata or {}).get("model")
    model = model if isinstance(model, dict) else {}
    names = [n for n in (model.get("served"), model.get("file"), model.get("requested"), model_name)
             if isinstance(n, str) and n]
    text = " ".join(names)
    active = _ACTIVE.search(text)
    moe = _MOE_NAMES.search(text) is not None or _number(model.get("expert_count")) not in (None, 1.0)
    params, size = _number(model.get("params")), _number(model.get("size_bytes"))
    source = model.get("size_source") if isinstance(model.get("size_source"), str) else "run metadata"
    if params is None and size is None:
        params = _params_from_name(text)
        source = "the model's name"
        if params is None:
            return "the model's size is unknown (the server did not report it, the run metadata does not give it)"
    if params is not None and size is None:
        bits = _bits(model.get("quantization"), text) or _FLOOR_BITS
        size = params * bits / 8
    if params is None:
        params = size * 8 / 16  # a size alone: at most 16 bits per weight gives the fewest parameters
    share = 1.0
    if moe:
        experts, used = _number(model.get("expert_count")), _number(model.get("expert_used_count"))
        if active:
            share = min(1.0, float(active.group(1)) * 1e9 / params)
        elif experts and used:
            share = used / experts
        else:
            return "a mixture-of-experts model whose active share is unknown: the bytes read per token are unknown"
    return ModelSize(params * share, size * share, source)


# ---------------------------------------------------------------- platform


def _gpu_models(hardware: dict) -> list[str]:
    gpus = hardware.get("gpus") if isinstance(hardware.get("gpus"), list) else []
    return [str(g.get("model")) for g in gpus if isinstance(g, dict) and g.get("model")]


def platform(hardware: dict | None, metadata: dict | None = None) -> Platform | str:
    """The host's memory bandwidth and peak throughput, or why they are unknown."""
    hardware = hardware if isinstance(hardware, dict) else {}
    unified = chips.find_chip(hardware.get("chip"), ("apple", "unified")) or chips.find_chip(
        hardware.get("cpu_model"), ("apple", "unified"))
    if unified:
        return Platform(unified.name, unified.bandwidth_gbs, unified.peak_tflops, unified.source)
    cpu_count = _number(hardware.get("cpu_count")) or 1
    cpu = chips.find_chip(hardware.get("cpu_model"), ("cpu",))
    declared = ((metadata or {}).get("hardware") or {}).get("memory") if isinstance(
        (metadata or {}).get("hardware"), dict) else None
    cpu_bw = None
    cpu_name = None
    if isinstance(declared, dict):
        cpu_bw = chips.memory_bandwidth_gbs(declared.get("type", ""), declared.get("channels"))
        if cpu_bw:
            cpu_name = f"{declared.get('type')} × {declared.get('channels')} channels"
    if cpu_bw is None and cpu:
        cpu_bw, cpu_name = cpu.bandwidth_gbs, cpu.name
    cpu_tflops = cpu_count * chips.CPU_OPS_PER_CORE_TFLOPS
    gpus = []
    for model in _gpu_models(hardware):
        chip = chips.find_chip(model, ("gpu", "apple", "unified"))
        if chip is None:
            return f"GPU {model!r} is not in the chip table"
        gpus.append(chip)
    if gpus:
        gpu_bw = sum(c.bandwidth_gbs for c in gpus)
        names = " + ".join(c.name for c in gpus)
        # A split over GPU and CPU is never faster than its fastest memory; tensor-parallel GPUs at most their sum.
        return Platform(names, max(gpu_bw, cpu_bw or 0.0), sum(c.peak_tflops for c in gpus) + cpu_tflops,
                        "; ".join(sorted({c.source for c in gpus})))
    if cpu_bw is None:
        model = hardware.get("cpu_model") or "unknown"
        return f"CPU {model!r} is not in the chip table and the run metadata names no memory configuration"
    return Platform(cpu_name or "CPU", cpu_bw, cpu_tflops, cpu.source if cpu else chips.JEDEC)


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
    runtime = (metadata or {}).get("runtime")
    runtime = runtime if isinstance(runtime, dict) else {}
    config = runtime.get("config") if isinstance(runtime.get("config"), dict) else {}
    command = runtime.get("server_command") if isinstance(runtime.get("server_command"), str) else ""
    return any("draft" in str(k) for k in config) or re.search(r"(^|\s)(-md|--model-draft|--spec)", command) is not None


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
                speculative: bool = False) -> Verdict:
    if scripted:
        return Verdict(UNCHECKED, scripted)
    if row.get("ok") is not True:
        return Verdict(UNCHECKED, "the row failed: it has no speed to check")
    if isinstance(size, str):
        return Verdict(UNCHECKED, size)
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


def run_row_verdicts(rows: Iterable[dict], hardware: dict | None, metadata: dict | None) -> list[Verdict]:
    """One verdict per row of one run, in row order."""
    scripted = _scripted_reason(metadata)
    speculative = _speculative(metadata)
    rows = list(rows)
    model_name = next((r.get("model") for r in rows if isinstance(r.get("model"), str)), None)
    size = model_size(metadata, model_name)
    host = platform(hardware, metadata)
    return [row_verdict(r, size, host, scripted=scripted, speculative=speculative) for r in rows]


def run_verdict(verdicts: Iterable[Verdict]) -> Verdict:
    """A run's verdict: implausible if any row is (the worst one named), else plausible if
    any row was checked and none was left unchecked for a reason other than failing, else unchecked."""
    verdicts = list(verdicts)
    bad = [v for v in verdicts if v.status == IMPLAUSIBLE]
    if bad:
        worst = max(bad, key=lambda v: v.factor or 0)
        return Verdict(IMPLAUSIBLE, f"{len(bad)} of {len(verdicts)} rows implausible; worst: {worst.reason}",
                       worst.factor, worst.figure)
    good = [v for v in verdicts if v.status == PLAUSIBLE]
    skipped = [v for v in verdicts if v.status == UNCHECKED and not v.reason.startswith("the row failed")]
    if good and not skipped:
        top = max(good, key=lambda v: v.factor or 0)
        return Verdict(PLAUSIBLE, f"{len(good)} rows checked; highest: {top.reason}", top.factor, top.figure)
    if skipped:
        return Verdict(UNCHECKED, skipped[0].reason)
    return Verdict(UNCHECKED, "no row has a speed to check")


def summary(verdicts: Iterable[Verdict]) -> dict:
    """Counts per status plus the run's verdict: what a page or the API shows."""
    verdicts = list(verdicts)
    counts = {status: sum(1 for v in verdicts if v.status == status) for status in VERDICTS}
    return {"verdict": run_verdict(verdicts).to_dict(), "rows": counts}
