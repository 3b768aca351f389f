"""A model of the hardware, so the demo's scripted speeds are ones real machines could reach.

The demo has no lab: its runs are the scripted endpoint, told how fast to answer. Issue 32 found
what hand-picked factors teach (a 70B model decoding 22.5 tok/s on a 16 GB laptop, prefill rising
as the context fills). Here every figure comes from the machine and the model instead:

* **fit**: the weights (parameters × bits per weight ÷ 8, plus 20 % for the KV cache and buffers)
  must fit in what the machine can give a model — VRAM plus RAM less what the OS keeps (a quarter
  of unified memory on Apple silicon, whose GPU may wire at most three quarters). Combinations that
  do not fit are never generated.
* **decode** is memory-bound: each token reads every weight once, from VRAM for the layers that fit
  there and from system RAM for the rest (partial offload), at the *effective* bandwidth (60–80 %
  of the peak), plus a fixed per-token cost (kernel launches, sampling). It falls with depth as the
  KV cache read per token grows: rate(d) = rate(0) ÷ (1 + d ÷ D_decode).
* **prefill** is compute-bound: 2 × parameters FLOPs per prompt token at the effective throughput,
  and each token also attends to the context before it, so the time per prompt token grows with
  its position: t(n) = c × (1 + n ÷ D_prefill), and a prompt of N tokens takes
  c × N + c × N² ÷ (2 D_prefill) (`RefServer`'s `prefill_s_per_token` and
  `prefill_s_per_token_pair`).
* a realistic spread: each system's efficiencies vary ±8 % around the machine's, seeded by its
  name (the same demo every time).

The peaks come from `benchpack.results.chips` (the plausibility bounds' table); the effective
fractions are typical of llama.cpp on each kind of hardware. The demo's rows therefore sit under
the plausibility bounds by construction, and tests/service/test_demo_physics.py checks it.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass

DEMO_OS = "demo profile (scripted endpoint)"
BITS_PER_WEIGHT = 4.85  # Q4_K_M, what most local runs use; the bound's floor for Q4 is 4.0
QUANTIZATION = "Q4_K_M"
OVERHEAD = 1.2  # weights + KV cache, compute buffers


@dataclass(frozen=True)
class Machine:
    """A demo machine: its hardware.json and what a model gets of it."""

    key: str
    title: str  # plain words for the console and docs
    hardware: dict  # hardware.json as the probe would write it
    vram_gb: float  # memory the accelerator can hold weights in (unified: the GPU's share)
    ram_gb: float  # system RAM left for weights that do not fit in VRAM (0 on unified memory)
    fast_bw: float  # effective GB/s of the accelerator (or the unified memory)
    slow_bw: float  # effective GB/s of system RAM (offloaded layers)
    tflops: float  # effective dense throughput for prefill, TFLOP/s
    token_overhead_s: float  # fixed cost per decoded token

    def fits(self, params_b: float) -> bool:
        return weights_gb(params_b) * OVERHEAD <= self.vram_gb + self.ram_gb


def weights_gb(params_b: float) -> float:
    return params_b * BITS_PER_WEIGHT / 8


def _hw(cpu: str, cores: int, ram_gb: int, gpus: list[tuple[str, int]] = (), chip: str | None = None,
        host: str = "") -> dict:
    hardware = {"hostname": host, "cpu_model": cpu, "cpu_count": cores, "ram_mb": ram_gb * 1024,
                "gpus": [{"model": model, "vram_mb": vram * 1024} for model, vram in gpus], "os": DEMO_OS}
    if chip:
        hardware["chip"] = chip
        hardware["gpus"] = [{"model": chip, "vram_mb": None}]
    return hardware


# Effective bandwidths: ~70 % of peak for GPUs and Apple silicon, ~65 % for dual-channel DDR5.
MACHINES: dict[str, Machine] = {m.key: m for m in (
    Machine("laptop", "a laptop · 16 GB · no GPU",
            _hw("Intel Core Ultra 7 155H", 16, 16, host="demo-laptop"),
            vram_gb=0, ram_gb=16 - 6, fast_bw=78, slow_bw=78, tflops=0.9, token_overhead_s=0.0008),
    Machine("gaming-laptop", "a gaming laptop · 32 GB · 8 GB GPU",
            _hw("Intel Core i9-13900HX", 24, 32, [("NVIDIA GeForce RTX 4060 Laptop GPU", 8)], host="demo-gaming-laptop"),
            vram_gb=8 - 1, ram_gb=32 - 6, fast_bw=200, slow_bw=58, tflops=45, token_overhead_s=0.0015),
    Machine("mini", "a Mac mini · M4 Pro · 64 GB",
            _hw("Apple M4 Pro", 14, 64, chip="Apple M4 Pro", host="demo-mini"),
            vram_gb=64 * 0.75, ram_gb=0, fast_bw=215, slow_bw=215, tflops=8.5, token_overhead_s=0.0012),
    Machine("desktop", "a desktop · 64 GB · RTX 4090",
            _hw("AMD Ryzen 9 7950X 16-Core Processor", 32, 64, [("NVIDIA GeForce RTX 4090", 24)], host="demo-desktop"),
            vram_gb=24 - 2, ram_gb=64 - 8, fast_bw=820, slow_bw=62, tflops=150, token_overhead_s=0.0015),
    Machine("studio", "a Mac Studio · M3 Ultra · 192 GB",
            _hw("Apple M3 Ultra", 28, 192, chip="Apple M3 Ultra", host="demo-studio"),
            vram_gb=192 * 0.75, ram_gb=0, fast_bw=600, slow_bw=600, tflops=24, token_overhead_s=0.0012),
    Machine("workstation", "a workstation · 256 GB · 2 × RTX 6000 Ada",
            _hw("AMD Ryzen Threadripper 7970X 32-Cores", 64, 256, [("NVIDIA RTX 6000 Ada Generation", 48)] * 2,
                host="demo-workstation"),
            # layers split across the two cards run one after the other: one card's bandwidth at a time
            vram_gb=2 * 46, ram_gb=256 - 16, fast_bw=760, slow_bw=240, tflops=170, token_overhead_s=0.0018),
    Machine("server", "a server · 512 GB · H100 80 GB",
            _hw("AMD EPYC 9454 48-Core Processor", 96, 512, [("NVIDIA H100 80GB HBM3", 80)], host="demo-server"),
            vram_gb=80 - 4, ram_gb=512 - 32, fast_bw=2500, slow_bw=700, tflops=420, token_overhead_s=0.0016),
)}

# Demo models: (name, billions of parameters). The names carry the size, as real ones do, so the
# plausibility bounds can read it.
MODELS = [("demo/scripted-1b", 1.2), ("demo/scripted-3b", 3.2), ("demo/scripted-7b", 7.6),
          ("demo/scripted-8b", 8.0), ("demo/scripted-14b", 14.8), ("demo/scripted-32b", 32.8),
          ("demo/scripted-70b", 70.6), ("demo/scripted-coder-7b", 7.6), ("demo/scripted-coder-32b", 32.8)]
PARAMS_B = dict(MODELS)

DECODE_DEPTH = 24_000  # tokens of context at which decode has halved (KV reads, attention)
PREFILL_DEPTH = 8_000  # tokens of context at which a prompt token costs twice as much


@dataclass(frozen=True)
class Speed:
    """What the scripted endpoint is told for one system (RefServer configuration)."""

    decode_tps: float  # at depth 0
    prefill_tps: float  # per prompt token at position 0
    ttft_s: float
    itl_s: float
    prefill_s_per_token: float
    prefill_s_per_token_pair: float
    itl_s_per_context_token: float

    def refserver(self) -> dict:
        return {"ttft_s": self.ttft_s, "itl_s": self.itl_s, "prefill_s_per_token": self.prefill_s_per_token,
                "prefill_s_per_token_pair": self.prefill_s_per_token_pair,
                "itl_s_per_context_token": self.itl_s_per_context_token}


def _spread(*names: str) -> random.Random:
    return random.Random(int.from_bytes(hashlib.sha256("|".join(names).encode()).digest()[:8], "big"))


def speed(model: str, machine_key: str, runtime_version: str = "", slowdown: float = 1.0) -> Speed:
    """The modelled speeds of `model` on `machine_key`; ValueError if it does not fit."""
    machine = MACHINES[machine_key]
    params_b = PARAMS_B[model]
    if not machine.fits(params_b):
        raise ValueError(f"{model} ({weights_gb(params_b):.1f} GB of weights) does not fit on {machine.title}")
    rng = _spread(model, machine_key, runtime_version)
    weights = weights_gb(params_b)
    on_fast = min(weights, machine.vram_gb / OVERHEAD) if machine.vram_gb else 0.0
    on_slow = weights - on_fast
    bw_eff = rng.uniform(0.92, 1.08)
    seconds = (on_fast / (machine.fast_bw * bw_eff) if on_fast else 0.0) + \
        (on_slow / (machine.slow_bw * bw_eff) if on_slow else 0.0) + machine.token_overhead_s
    seconds *= slowdown
    # prefill: offloaded layers run on the CPU side at a fraction of the accelerator's throughput
    share_fast = on_fast / weights if machine.vram_gb else 1.0  # no accelerator: the CPU's throughput is the machine's
    flops = machine.tflops * rng.uniform(0.92, 1.08) * (share_fast + (1 - share_fast) * 0.1) * 1e12
    per_token = 2 * params_b * 1e9 / flops
    return Speed(decode_tps=1 / seconds, prefill_tps=1 / per_token, ttft_s=0.0, itl_s=seconds,
                 prefill_s_per_token=per_token, prefill_s_per_token_pair=per_token / PREFILL_DEPTH,
                 itl_s_per_context_token=seconds / DECODE_DEPTH)


def fitting(models=MODELS, machines=MACHINES) -> list[tuple[str, str]]:
    """Every (model, machine) combination whose weights fit."""
    return [(model, key) for model, params_b in models for key, machine in machines.items()
            if machine.fits(params_b)]


# ---------------------------------------------------------------- checks (tests, and the walk over a live demo)

OS_RESERVE_GB = 4.0  # what an operating system keeps for itself, at least


def memory_problem(hardware: dict, metadata: dict | None, model_name: str | None) -> str | None:
    """Why the model's weights (parameters × bits ÷ 8, from what plausibility reads) cannot fit in
    the machine's RAM + VRAM less what the OS keeps; None when they fit or cannot be sized."""
    from benchpack.results import plausibility

    size = plausibility.model_size(metadata, model_name)
    if isinstance(size, str):
        return None
    ram = (hardware.get("ram_mb") or 0) / 1024
    vram = sum((g.get("vram_mb") or 0) / 1024 for g in hardware.get("gpus") or [] if isinstance(g, dict))
    room = ram + vram - max(OS_RESERVE_GB, 0.1 * ram)
    weights = size.bytes / 1e9
    return None if weights <= room else f"{weights:.1f} GB of weights in {room:.1f} GB of memory"


def row_problems(rows: list[dict], hardware: dict, metadata: dict | None) -> list[str]:
    """What a run's rows claim that its hardware could not do: the plausibility bounds applied as if
    the rows were a real model's (the scripted endpoint's exemption set aside), and memory fit. A row
    the bounds cannot judge (no size, an unknown chip) is a problem too: the demo must be checkable."""
    from benchpack.results import plausibility

    model_name = next((r.get("model") for r in rows if isinstance(r.get("model"), str)), None)
    size = plausibility.model_size(metadata, model_name)
    host = plausibility.platform(hardware, metadata)
    found = []
    fit = memory_problem(hardware, metadata, model_name)
    if fit:
        found.append(f"{model_name}: {fit}")
    for row in rows:
        if row.get("ok") is not True:
            continue
        verdict = plausibility.row_verdict(row, size, host)
        if verdict.status == plausibility.IMPLAUSIBLE or (
                verdict.status == plausibility.UNCHECKED and "no decode or prefill" not in verdict.reason):
            found.append(f"{model_name} {row.get('case')}: {verdict.status}: {verdict.reason}")
    return found


def depth_problems(rows: list[dict], tolerance: float = 0.05) -> list[str]:
    """Prefill and decode must fall as the context fills: each depth's median at most `tolerance`
    above the shallower one's (timer noise on a busy machine), and the deepest below the shallowest."""
    from benchpack.lanes.aggregate import depth_curves

    found = []
    for case, points in depth_curves(rows).items():
        for figure in ("prefill_tps", "decode_rate"):
            values = [(p["depth_tokens"], p[figure]) for p in points if p[figure] is not None]
            for (d0, a), (d1, b) in zip(values, values[1:]):
                if b > a * (1 + tolerance):
                    found.append(f"{case}: {figure} rises from {a:.1f} at depth {d0} to {b:.1f} at depth {d1}")
            if len(values) >= 2 and not values[-1][1] < values[0][1]:
                found.append(f"{case}: {figure} does not fall from depth {values[0][0]} to {values[-1][0]}")
    return found
