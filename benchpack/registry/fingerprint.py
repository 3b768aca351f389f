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
