"""A synthetic, clearly labelled catalogue for scale measurements (`manage.py seed_catalogue`).

Every run is fake and says so: the submissions are demo submissions of the
user `synthetic-catalogue@benchpack.local`, every model id starts with
`synthetic/`, run metadata carries `"synthetic": true` and a note, and every
stored row carries `"synthetic": true`. The packs and cases are the bundled
ones (their real case hashes and request settings), so workload keys are
complete and the leaderboards group the data as they would real results.

Shape: a few hundred systems (model family x size x quantization x runtime
x runtime version x hardware class); runs spread over 180 days, each runtime
version appearing later than the one before it, so regression timelines have
history. One runtime version of one runtime (llama.cpp b6300 on CUDA) decodes
~15 % slower than the versions around it: a planted step for the change
detection to find. Values are deterministic for a given --seed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
from array import array
from dataclasses import dataclass, field

from benchpack.packs import case_content
from benchpack.registry import fingerprint as fp

SYNTHETIC_SUBMITTER = "synthetic-catalogue@benchpack.local"
SYNTHETIC_FINGERPRINT = {"synthetic": True, "note": "generated; not a comparability fingerprint"}
NOTE = "Synthetic catalogue (manage.py seed_catalogue): generated numbers, not a measurement."
DAYS = 180
# (family, size in billions of parameters)
MODELS = [("qwen2.5", 0.5), ("qwen2.5", 1.5), ("qwen2.5", 7), ("llama3.1", 8), ("llama3.2", 3), ("mistral", 7),
          ("gemma2", 9), ("phi3.5", 3.8), ("qwen2.5-coder", 7), ("deepseek-coder-v2", 16)]
QUANTIZATIONS = {"Q4_K_M": 1.0, "Q8_0": 0.62, "F16": 0.36}
# (runtime, versions oldest first)
RUNTIMES = [("llama.cpp", ["b6000", "b6100", "b6200", "b6300", "b6400"]), ("ollama", ["0.5.7", "0.6.2", "0.7.0"]),
            ("mlx-lm", ["0.24.0", "0.25.1"]), ("vllm", ["0.8.4", "0.9.0"])]
# (hardware.json, relative decode speed)
HARDWARE = [
    ({"chip": "Apple M2 Pro", "cpu_model": "Apple M2 Pro", "ram_mb": 32768, "gpus": [{"model": "Apple M2 Pro"}],
      "os": "macOS 15.5"}, 1.0),
    ({"chip": "Apple M4 Max", "cpu_model": "Apple M4 Max", "ram_mb": 65536, "gpus": [{"model": "Apple M4 Max"}],
      "os": "macOS 15.5"}, 2.1),
    ({"cpu_model": "AMD Ryzen 9 7950X 16-Core Processor", "ram_mb": 64219,
      "gpus": [{"model": "NVIDIA GeForce RTX 4090", "vram_mb": 24564}], "os": "Ubuntu 24.04"}, 3.4),
    ({"cpu_model": "AMD Ryzen 9 7950X 16-Core Processor", "ram_mb": 128500,
      "gpus": [{"model": "NVIDIA GeForce RTX 3090", "vram_mb": 24576}] * 2, "os": "Ubuntu 24.04"}, 3.9),
    ({"cpu_model": "Intel(R) Core(TM) i7-12700H", "ram_mb": 31900, "gpus": [], "os": "Fedora 42"}, 0.25),
    ({"cpu_model": "AMD EPYC 9354 32-Core Processor", "ram_mb": 393000,
      "gpus": [{"model": "NVIDIA H100 80GB HBM3", "vram_mb": 81559}], "os": "Ubuntu 22.04"}, 6.0),
]
RUNTIME_HARDWARE = {"mlx-lm": lambda hw: "chip" in hw, "vllm": lambda hw: bool(hw.get("gpus")) and "chip" not in hw}
PLANTED_STEP = ("llama.cpp", "b6300", 0.85)  # decode x0.85 on NVIDIA hardware
# Pack mix (weights): speed packs are run far more often than the repo tasks.
PACK_WEIGHTS = {"runtime-sweep": 5, "smoke-chat": 4, "tool-json": 2, "desktop-django-wrap": 2,
                "python-regression-fix": 1, "endpoint-python-correctness": 1, "product-offer-matching": 1,
                "patch-from-failure": 1, "mini-project-completion": 1, "django-dashboard-regression-fix": 1}


@dataclass(frozen=True)
class System:
    index: int
    family: str
    size_b: float
    quantization: str
    runtime: str
    version: str
    version_rank: int  # 0 = oldest
    hardware: dict
    speed: float  # decode tok/s on a 1B Q4 model = speed * 100
    key: fp.Key
    model: str

    @property
    def metadata(self) -> dict:
        return {"model": {"id": self.model, "quantization": self.quantization},
                "runtime": {"name": self.runtime, "version": self.version},
                "synthetic": True, "notes": NOTE}


@dataclass
class PackPlan:
    pack_id: str
    version: str
    adapter: str
    cases: list[tuple[str, fp.Key, dict]]  # (case id, workload key, its to_dict(): one object, encoded once)
    scored: bool
    requests: dict[str, dict] = field(default_factory=dict)  # case id -> the rows' `request` (its workload key's input)


@dataclass
class Plan:
    systems: list[System]
    packs: list[PackPlan]
    weights: list[int]
    runs: int
    cases: int
    rows_per_case: int
    seed: int
    pack_of_run: array = field(default_factory=lambda: array("B"))  # a byte per run: 5.4M runs at 10M cases

    def describe(self) -> list[str]:
        workloads = sum(len(p.cases) for p in self.packs)
        return [
            f"systems: {len(self.systems)} (models x quantizations x runtimes x versions x hardware classes)",
            f"packs: {len(self.packs)} bundled ({workloads} case workloads)",
            f"runs: {self.runs:,}  case rows: {self.cases:,}  raw rows: {self.cases * self.rows_per_case:,}",
            f"published over the last {DAYS} days; all labelled synthetic (is_demo, model ids synthetic/…)",
        ]


def _systems(count: int, rng: random.Random) -> list[System]:
    combos = []
    for family, size in MODELS:
        for quant in QUANTIZATIONS:
            for runtime, versions in RUNTIMES:
                for hardware, speed in HARDWARE:
                    fits = RUNTIME_HARDWARE.get(runtime, lambda hw: True)(hardware)
                    if fits and size * (2 if quant == "F16" else 1) <= hardware["ram_mb"] / 1024 * 0.6:
                        combos.append((family, size, quant, runtime, versions, hardware, speed))
    rng.shuffle(combos)
    systems = []
    for family, size, quant, runtime, versions, hardware, speed in combos:
        for rank, version in enumerate(versions):
            model = f"synthetic/{family}-{size:g}b-instruct"
            key = fp.system_key({"model": {"id": model, "quantization": quant},
                                 "runtime": {"name": runtime, "version": version}}, hardware, model)
            systems.append(System(len(systems), family, size, quant, runtime, version, rank, hardware, speed, key,
                                  model))
            if len(systems) >= count:
                return systems
    return systems


def _packs() -> list[PackPlan]:
    from benchpack.packs.loader import bundled_packs_dir, load_pack

    plans = []
    for pack_id in PACK_WEIGHTS:
        pack = load_pack(bundled_packs_dir() / pack_id)
        specs = case_content.case_specs_of(pack)
        cases, requests = [], {}
        for case in pack.cases:
            spec = specs[case.id]
            first = {"pack": {"id": pack.id, "version": pack.version}, "case": case.id, "adapter": "openai-chat",
                     "ok": True, "tokens": {"prompt": 400, "cached_prompt": 0},
                     "request": {k: spec[k] for k in ("temperature", "max_tokens", "stream", "case_sha256")}
                     | {"openai_stream_usage": "include"}}
            key = fp.workload_key([first])
            cases.append((case.id, key, key.to_dict()))
            requests[case.id] = first["request"]
        scored = any(c.scoring is not None and c.scoring.mode != "none" for c in pack.cases)
        plans.append(PackPlan(pack.id, pack.version, "openai-chat", cases, scored, requests))
    return plans


def plan(cases: int, systems: int = 300, rows_per_case: int = 1, seed: int = 10) -> Plan:
    """Which pack each run runs, so that the runs add up to exactly `cases` case rows."""
    rng = random.Random(seed)
    packs = _packs()
    weights = [PACK_WEIGHTS[p.pack_id] for p in packs]
    chosen, total = array("B"), 0
    while total < cases:
        index = rng.choices(range(len(packs)), weights)[0]
        if total + len(packs[index].cases) > cases:  # the last runs: a pack small enough to land exactly
            index = min(range(len(packs)), key=lambda i: len(packs[i].cases))
        chosen.append(index)
        total += len(packs[index].cases)
    return Plan(_systems(systems, rng), packs, weights, len(chosen), total, rows_per_case, seed, chosen)


@dataclass
class RunValues:
    system: System
    pack: PackPlan
    published_at: dt.datetime
    label: str
    cases: list[dict]  # PublishedCase field values (without run)
    rows: list[dict]  # raw rows


def _when(system: System, rng: random.Random, now: dt.datetime) -> dt.datetime:
    """Each runtime version is published from its own slice of the 180 days on, so versions follow dates."""
    versions = next(len(v) for name, v in RUNTIMES if name == system.runtime)
    start = DAYS * system.version_rank / versions
    day = rng.uniform(start, DAYS)
    return now - dt.timedelta(days=DAYS - day, seconds=rng.uniform(0, 3600))


def run_values(plan: Plan, number: int, rng: random.Random, now: dt.datetime) -> RunValues:
    system = plan.systems[rng.randrange(len(plan.systems))]
    pack = plan.packs[plan.pack_of_run[number]]
    decode = system.speed * 100 / system.size_b * QUANTIZATIONS[system.quantization]
    runtime, version, factor = PLANTED_STEP
    if system.runtime == runtime and system.version == version and "NVIDIA" in str(system.hardware.get("gpus")):
        decode *= factor
    quality = min(0.95, 0.25 + 0.07 * system.size_b ** 0.8) * (0.97 if system.quantization == "Q4_K_M" else 1.0)
    cases, rows = [], []
    for case_id, workload, workload_dict in pack.cases:
        noise = rng.gauss(1.0, 0.04)
        d = max(1.0, decode * noise)
        ttft = max(0.01, 0.05 + 40 / (system.speed * 1000) * system.size_b * rng.gauss(1.0, 0.05))
        prefill = d * rng.uniform(8, 14)
        output = rng.randint(64, 384)
        wall = ttft + output / d
        repetitions = plan.rows_per_case
        passed = sum(rng.random() < quality for _ in range(repetitions)) if pack.scored else None
        cases.append({
            "case": case_id, "fingerprint": hashlib.sha256(f"{workload.digest}:{system.key.digest}".encode()).hexdigest(),
            "fingerprint_fields": SYNTHETIC_FINGERPRINT, "rows": repetitions, "ok_rows": repetitions,
            "passed_rows": passed, "scored_rows": repetitions if pack.scored else None, "wall_s": wall,
            "ttft_s": ttft, "tpot_s": 1 / d, "decode_rate": d, "decode_tps": d, "total_tps": output / wall, "prefill_tps": prefill,
            "prompt_tokens": 400.0, "cached_prompt_tokens": 0.0, "workload_key": workload.digest,
            "workload_fields": workload_dict, "system_key": system.key.digest, "cache_state": workload.fields["cache_state"],
        })
        for repetition in range(1, repetitions + 1):
            rows.append({
                "case": case_id, "repetition": repetition if repetitions > 1 else None, "ok": True,
                "raw": {"pack": {"id": pack.pack_id, "version": pack.version}, "case": case_id, "adapter": pack.adapter,
                        "model": system.model, "ok": True, "synthetic": True, "request": pack.requests[case_id],
                        "timing": {"wall_s": wall, "ttft_s": ttft, "prefill_tps": prefill, "decode_tps": d,
                                   "total_tps": output / wall, "tpot_s": 1 / d},
                        "tokens": {"prompt": 400, "output": output, "cached_prompt": 0},
                        "scoring": {"mode": "synthetic", "passed": bool(passed)} if pack.scored else None},
            })
    return RunValues(system, pack, _when(system, rng, now), f"synthetic-{number:07d}", cases, rows)
