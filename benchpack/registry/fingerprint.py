"""Comparability fingerprints: may two results be compared at all?

A fingerprint is sha256 over canonical JSON of the inputs that make two
measurements of one case comparable: pack id + major.minor version, case,
model id + quantization, runtime name + version, and a normalized hardware
class. The inputs are kept beside the digest so a user can see *why* two rows
are or are not comparable.

A missing input is recorded as null and listed as unknown. Two fingerprints
with equal digests but unknown inputs are reported as "unknown", never as
"comparable": results gathered under different, unrecorded conditions must
not silently line up (the failure mode of conbench issue 1412).

Pure functions only; the Django service reuses them.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field

FINGERPRINT_VERSION = 1
FIELDS = (
    "pack_id",
    "pack_version",
    "case",
    "model_id",
    "model_quantization",
    "runtime_name",
    "runtime_version",
    "hardware_class",
)
# Nominal memory sizes machines are sold with; usable RAM reads a little lower.
RAM_SIZES_GB = (4, 8, 12, 16, 18, 24, 32, 36, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048)


@dataclass(frozen=True)
class Fingerprint:
    digest: str
    fields: dict
    sources: dict = field(default_factory=dict)

    @property
    def unknown(self) -> list[str]:
        return [name for name in FIELDS if self.fields.get(name) is None]

    @property
    def complete(self) -> bool:
        return not self.unknown

    def to_dict(self) -> dict:
        return {
            "version": FINGERPRINT_VERSION,
            "digest": self.digest,
            "complete": self.complete,
            "fields": {name: self.fields.get(name) for name in FIELDS},
            "unknown": self.unknown,
            "sources": self.sources,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict) -> "Fingerprint":
        return cls(digest=data["digest"], fields=dict(data["fields"]), sources=dict(data.get("sources") or {}))


@dataclass(frozen=True)
class Comparability:
    verdict: str  # "comparable" | "not-comparable" | "unknown"
    differing: dict  # field -> [a, b] for inputs known on both sides that differ
    unknown: list[str]  # inputs missing on either side

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "differing": self.differing, "unknown": self.unknown}


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def major_minor(version: str | None) -> str | None:
    """"0.1.5" -> "0.1"; a version that is not dotted numbers is kept whole."""
    if not version:
        return None
    match = re.match(r"^v?(\d+)\.(\d+)(?:[.\-+].*)?$", version.strip())
    return f"{match.group(1)}.{match.group(2)}" if match else version.strip()


def normalize_cpu(name: str | None) -> str | None:
    if not name or not str(name).strip():
        return None
    text = re.sub(r"\((?:R|TM|tm|r)\)|[®™]", " ", str(name))
    text = re.sub(r"@.*$", " ", text)  # clock speed is marketing noise for one model
    text = re.sub(r"\b\d+-Core\b|\bProcessor\b|\bCPU\b|\bw(?:ith|/) Radeon.*$", " ", text, flags=re.I)
    return _slug(text) or None


def normalize_gpu(name: str | None) -> str | None:
    if not name or not str(name).strip():
        return None
    text = re.sub(r"\((?:R|TM|tm|r)\)|[®™]|\bCorporation\b", " ", str(name))
    return _slug(text) or None


def ram_bucket_gb(ram_mb) -> int | None:
    """Round usable RAM up to the nominal size it was sold as (62.8 GiB -> 64)."""
    if not isinstance(ram_mb, (int, float)) or isinstance(ram_mb, bool) or ram_mb <= 0:
        return None
    gib = ram_mb / 1024
    for size in RAM_SIZES_GB:
        if gib <= size * 1.02:
            return size
    return int(-(-gib // 64) * 64)


def hardware_class(hardware: dict | None) -> str | None:
    """e.g. "apple-m5-max-64gb" or "amd-ryzen-9-7950x+nvidia-geforce-rtx-4090+64gb"; None if not knowable."""
    if not isinstance(hardware, dict):
        return None
    ram = ram_bucket_gb(hardware.get("ram_mb"))
    chip = hardware.get("chip") or hardware.get("cpu_model")
    cpu = normalize_cpu(chip)
    if cpu is None or ram is None:
        return None
    if cpu.startswith("apple-"):
        # Apple silicon: the GPU is part of the chip, so the chip names both.
        return f"{cpu}-{ram}gb"
    gpus = hardware.get("gpus")
    if not isinstance(gpus, list):
        return None
    names = [normalize_gpu(g.get("model") if isinstance(g, dict) else g) for g in gpus]
    if any(n is None for n in names):
        return None
    counts = Counter(names)
    gpu_part = "+".join(f"{n}x-{name}" if n > 1 else name for name, n in sorted(counts.items())) or "no-gpu"
    return f"{cpu}+{gpu_part}+{ram}gb"


def metadata_value(data: dict | None, dotted: str) -> str | None:
    """A run-metadata value as text; lists (runtime.version may be one) join with ", "."""
    value = data
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    if isinstance(value, list):
        value = ", ".join(str(v) for v in value if v is not None)
    if value is None or isinstance(value, (dict, bool)) or str(value).strip() == "":
        return None
    return str(value).strip()


def run_inputs(run_metadata: dict | None, hardware: dict | None) -> tuple[dict, dict]:
    """The inputs shared by every row of one run (metadata and hardware), computed once per run."""
    from benchpack.results.run_metadata import effective  # the user's sections plus what the server reported

    run_metadata = effective(run_metadata)
    meta_model = metadata_value(run_metadata, "model.id") or metadata_value(run_metadata, "model.name")
    fields = {
        "model_id": meta_model,
        "model_quantization": metadata_value(run_metadata, "model.quantization"),
        "runtime_name": metadata_value(run_metadata, "runtime.name"),
        "runtime_version": metadata_value(run_metadata, "runtime.version"),
        "hardware_class": hardware_class(hardware),
    }
    sources = {
        "pack_id": "run.jsonl: pack.id",
        "pack_version": "run.jsonl: pack.version (major.minor)",
        "case": "run.jsonl: case",
        "model_id": "run-metadata.json: model.id" if meta_model else "run.jsonl: model",
        "model_quantization": "run-metadata.json: model.quantization",
        "runtime_name": "run-metadata.json: runtime.name",
        "runtime_version": "run-metadata.json: runtime.version",
        "hardware_class": "hardware.json: chip/cpu_model + gpus + ram_mb",
    }
    return fields, sources


def case_inputs(run: tuple[dict, dict], pack_id: str | None, pack_version: str | None,
                case: str | None, model: str | None) -> tuple[dict, dict]:
    """(fields, sources) for one pack case of a run; the metadata model id wins over the row's."""
    run_fields, sources = run
    fields = {
        **run_fields,
        "pack_id": pack_id or None,
        "pack_version": major_minor(pack_version),
        "case": case or None,
        "model_id": run_fields["model_id"] or model or None,
    }
    return fields, sources


def fingerprint_inputs(
    pack_id: str | None,
    pack_version: str | None,
    case: str | None,
    model: str | None,
    run_metadata: dict | None,
    hardware: dict | None,
) -> tuple[dict, dict]:
    """(fields, sources): each input's value and the artifact field it came from."""
    return case_inputs(run_inputs(run_metadata, hardware), pack_id, pack_version, case, model)


def compute(inputs: tuple[dict, dict]) -> Fingerprint:
    fields, sources = inputs
    canonical = json.dumps(
        {"fingerprint_version": FINGERPRINT_VERSION, "fields": {name: fields.get(name) for name in FIELDS}},
        sort_keys=True, separators=(",", ":"), ensure_ascii=False,
    )
    return Fingerprint(hashlib.sha256(canonical.encode("utf-8")).hexdigest(), dict(fields), dict(sources))


def compare(a: Fingerprint, b: Fingerprint) -> Comparability:
    differing = {
        name: [a.fields.get(name), b.fields.get(name)]
        for name in FIELDS
        if a.fields.get(name) is not None and b.fields.get(name) is not None
        and a.fields.get(name) != b.fields.get(name)
    }
    unknown = [name for name in FIELDS if a.fields.get(name) is None or b.fields.get(name) is None]
    if differing:
        return Comparability("not-comparable", differing, unknown)
    if unknown:
        return Comparability("unknown", {}, unknown)
    return Comparability("comparable", {}, [])


def explain(print_: Fingerprint) -> list[str]:
    """Human lines: `field: value (source)`, with missing inputs shown as unknown."""
    lines = [f"fingerprint {print_.digest[:16]} ({'complete' if print_.complete else 'incomplete'})"]
    for name in FIELDS:
        value = print_.fields.get(name)
        shown = "unknown" if value is None else value
        lines.append(f"  {name}: {shown}  [{print_.sources.get(name, '')}]")
    return lines


# --- the two keys: what was asked (workload) and who answered (system) -------------
#
# The fingerprint above mixes both, so "results with this fingerprint" is nearly
# always one system. A leaderboard ranks systems on one workload: only rows with
# equal workload keys are ranked together; the system key says which row of the
# ranking a run belongs to. Workload + system together is the reproduction key.

KEY_VERSION = 1
WORKLOAD_FIELDS = (
    "pack_id",
    "pack_version",
    "case",
    "case_sha256",  # the case's definition: prompt, fixtures, scoring (benchpack.packs.case_content)
    "adapter",
    "temperature",
    "max_tokens",
    "stream",
    "stream_usage",  # D-014: include | omit; "n/a" when the request did not stream or is not OpenAI-style
    "cache_state",  # D-013: cold | cached | unknown (benchpack.results.cache_state); "unknown" counts as unknown here
    "depth_tokens",  # lanes: filler tokens before the prompt (null: none)
    "concurrency",  # lanes: simultaneous requests (null: one at a time)
    "arrival_rate",  # lanes: requests per second (null: closed loop)
)
# Null in these means "not used by this run" (no filler, one request at a time), not "unknown".
WORKLOAD_OPTIONAL = frozenset({"depth_tokens", "concurrency", "arrival_rate"})
SYSTEM_FIELDS = (
    "model_id",
    "model_quantization",
    "model_sha256",  # the weights' hash, where the submitter recorded it
    "runtime_name",
    "runtime_version",
    "hardware_class",  # CPU, accelerator model x count, RAM bucket (hardware_class above)
)
SYSTEM_OPTIONAL = frozenset({"model_sha256"})


@dataclass(frozen=True)
class Key:
    """A workload or system key: the digest, and the inputs kept beside it."""

    kind: str  # "workload" | "system"
    digest: str
    fields: dict
    sources: dict = field(default_factory=dict)

    @property
    def names(self) -> tuple[str, ...]:
        return WORKLOAD_FIELDS if self.kind == "workload" else SYSTEM_FIELDS

    @property
    def unknown(self) -> list[str]:
        optional = WORKLOAD_OPTIONAL if self.kind == "workload" else SYSTEM_OPTIONAL
        return [n for n in self.names if n not in optional and _is_unknown(n, self.fields.get(n))]

    @property
    def complete(self) -> bool:
        return not self.unknown

    def to_dict(self) -> dict:
        return {"version": KEY_VERSION, "kind": self.kind, "digest": self.digest, "complete": self.complete,
                "fields": {n: self.fields.get(n) for n in self.names}, "unknown": self.unknown,
                "sources": self.sources}


def _is_unknown(name: str, value) -> bool:
    return value is None or (name == "cache_state" and value == "unknown")


def _key(kind: str, names: tuple[str, ...], fields: dict, sources: dict) -> Key:
    canonical = json.dumps({"key_version": KEY_VERSION, "kind": kind, "fields": {n: fields.get(n) for n in names}},
                           sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return Key(kind, hashlib.sha256(canonical.encode("utf-8")).hexdigest(), {n: fields.get(n) for n in names},
               dict(sources))


def _number_or_none(value, kind=float):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return kind(value)


def stream_usage_of(adapter: str | None, stream, recorded) -> str | None:
    """D-014's mode only matters for a streamed OpenAI-style request."""
    if stream is False or (adapter and not adapter.startswith("openai")):
        return "n/a"
    if stream is None:
        return None
    return recorded if recorded in ("include", "omit") else None


def workload_key(rows: list[dict], case_spec: dict | None = None, cache_state: str | None = None) -> Key:
    """The workload key of one case of one run.

    `rows` are that case's rows (the first carries pack, case and adapter; the
    ok rows decide the D-013 cache state). `case_spec` is what the pack
    definition says about the case when the server knows the pack
    (`benchpack.packs.case_content.case_spec`); a row's own `request`
    record, when present, wins over it. `cache_state`, when the caller has
    already read it from every ok row (the local importer streams them), is
    used instead of reading `rows`.
    """
    from benchpack.results.cache_state import group_cache_state  # core, pure

    first = rows[0] if rows else {}
    request = first.get("request") if isinstance(first.get("request"), dict) else {}
    spec = case_spec or {}
    lane = first.get("lane") if isinstance(first.get("lane"), dict) else {}
    pack = first.get("pack") if isinstance(first.get("pack"), dict) else {}
    adapter = first.get("adapter") if isinstance(first.get("adapter"), str) else None

    def pick(name):
        if name in request:
            return request.get(name), f"run.jsonl: request.{name}"
        if name in spec:
            return spec.get(name), f"pack definition ({spec.get('_source', 'bundled pack')}): {name}"
        return None, "not recorded"

    temperature, t_src = pick("temperature")
    max_tokens, m_src = pick("max_tokens")
    stream, s_src = pick("stream")
    case_sha, c_src = (request.get("case_sha256"), "run.jsonl: request.case_sha256") if request.get("case_sha256") \
        else pick("case_sha256")
    ok_rows = [r for r in rows if r.get("ok") is True]
    fields = {
        "pack_id": pack.get("id") or None,
        "pack_version": str(pack["version"]) if pack.get("version") else None,
        "case": str(first.get("case")) if first.get("case") not in (None, "") else None,
        "case_sha256": case_sha,
        "adapter": adapter,
        "temperature": _number_or_none(temperature),
        "max_tokens": _number_or_none(max_tokens, int),
        "stream": stream if isinstance(stream, bool) else None,
        "stream_usage": stream_usage_of(adapter, stream if isinstance(stream, bool) else None,
                                        request.get("openai_stream_usage")),
        "cache_state": cache_state or (group_cache_state(ok_rows) if ok_rows else "unknown"),
        "depth_tokens": _number_or_none(first.get("depth_tokens", lane.get("depth_tokens")), int),
        "concurrency": _number_or_none(first.get("concurrency", lane.get("concurrency")), int),
        "arrival_rate": _number_or_none(first.get("arrival_rate", lane.get("arrival_rate"))),
    }
    sources = {
        "pack_id": "run.jsonl: pack.id", "pack_version": "run.jsonl: pack.version", "case": "run.jsonl: case",
        "case_sha256": c_src, "adapter": "run.jsonl: adapter", "temperature": t_src, "max_tokens": m_src,
        "stream": s_src, "stream_usage": "run.jsonl: request.openai_stream_usage (n/a when not streamed)",
        "cache_state": "run.jsonl: tokens.cached_prompt / prompt_cache of the ok rows (D-013)",
        "depth_tokens": "run.jsonl: depth_tokens", "concurrency": "run.jsonl: concurrency",
        "arrival_rate": "run.jsonl: arrival_rate",
    }
    return _key("workload", WORKLOAD_FIELDS, fields, sources)


LANE_FIELDS = ("depth_tokens", "concurrency", "arrival_rate")


def is_lane(case_key: Key) -> bool:
    """A lane's workload (a depth, a concurrency level, an arrival rate), not a base case's."""
    return any(case_key.fields.get(name) is not None for name in LANE_FIELDS)


def pack_workload_key(case_keys: list[Key]) -> Key:
    """A run's pack-level workload: the pack and the set of base case workloads it ran.

    Two runs share it only when they ran the same cases under the same settings
    (and cache states), so a pack-level pass rate or speed ranks like with like.
    Lanes are left out (issue 32 item 3): a server with a 4096-token context skips
    the deeper depths, and that must not move its run off the pack's main board;
    each lane level is ranked on its own board, like with like.
    """
    case_keys = [k for k in case_keys if not is_lane(k)] or case_keys
    first = case_keys[0].fields if case_keys else {}
    fields = {"pack_id": first.get("pack_id"), "pack_version": first.get("pack_version"),
              "adapter": first.get("adapter"), "cases": sorted(k.digest for k in case_keys)}
    canonical = json.dumps({"key_version": KEY_VERSION, "kind": "pack-workload", "fields": fields},
                           sort_keys=True, separators=(",", ":"))
    return Key("workload", hashlib.sha256(canonical.encode("utf-8")).hexdigest(),
               {**{n: None for n in WORKLOAD_FIELDS}, "pack_id": fields["pack_id"],
                "pack_version": fields["pack_version"], "adapter": fields["adapter"]},
               {"cases": "the sorted workload keys of the run's base cases (lanes are ranked on their own boards)"})


def system_key(run_metadata: dict | None, hardware: dict | None, row_model: str | None = None) -> Key:
    """Who answered: model (+ quantization, + weights hash where known), runtime (+ version), hardware class."""
    fields, sources = run_inputs(run_metadata, hardware)
    fields = {
        "model_id": fields["model_id"] or row_model or None,
        "model_quantization": fields["model_quantization"],
        "model_sha256": metadata_value(run_metadata, "model.sha256"),
        "runtime_name": fields["runtime_name"],
        "runtime_version": fields["runtime_version"],
        "hardware_class": fields["hardware_class"],
    }
    sources = {**{n: sources[n] for n in SYSTEM_FIELDS if n in sources},
               "model_sha256": "run-metadata.json: model.sha256"}
    return _key("system", SYSTEM_FIELDS, fields, sources)


def reproduction_key(workload: Key, system: Key) -> str:
    """Workload + system: the same question asked of the same system."""
    return hashlib.sha256(f"{workload.digest}:{system.digest}".encode()).hexdigest()


# --- describing a system in words (leaderboard columns and filters) ----------------


def model_family(model_id: str | None) -> str | None:
    """"Qwen2.5-0.5B-Instruct-Q4_K_M" -> "qwen2.5"; the name up to its size or variant."""
    if not model_id:
        return None
    name = str(model_id).rsplit("/", 1)[-1].lower()
    name = re.split(r"[-_:](?=\d+(?:\.\d+)?[bm]\b)|[-_:](?:instruct|chat|it|base|q\d|f16|bf16|gguf)\b|:", name)[0]
    return name.strip("-_. ") or None


def accelerator(hardware: dict | None) -> str | None:
    """The accelerator in words: "2x NVIDIA GeForce RTX 4090", "Apple M5 Max", "none" (CPU only)."""
    if not isinstance(hardware, dict):
        return None
    chip = hardware.get("chip") or hardware.get("cpu_model")
    if chip and str(chip).strip().lower().startswith("apple"):
        return str(chip).strip()
    gpus = hardware.get("gpus")
    if not isinstance(gpus, list):
        return None
    names = [str(g.get("model") if isinstance(g, dict) else g).strip() for g in gpus]
    if not names:
        return "none"
    counts = Counter(names)
    return " + ".join(f"{n}x {name}" if n > 1 else name for name, n in sorted(counts.items()))
