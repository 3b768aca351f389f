"""What the decoded-layer secret scan costs on a 1M-row run.jsonl (issue 22 §6).

    uv run python bench/secret_layers.py [--rows 1000000] [--rounds 3]

Generates rows as bench/bundle_validate.py does (the same `_row`), then times,
interleaved round by round, median seconds:

  plain     secrets_scan.scan_bytes + scan_decoded_json: the scan as it was
  layers    secret_layers.scan_layers: the RE2 gate pass, and decoding where a gate fires
  gate      secret_layers.layers_that_apply alone

on the clean file, and on the same file with one row in 1,000 carrying a
disguised key (base64, hex, %-encoded, reversed, zero-width, split, base32, HTML
references, spaced, Cyrillic look-alikes, rot13, \\x escapes), where
the decoding actually runs. Reports MB/s and the share of rows found.
"""

from __future__ import annotations

import argparse
import base64
import json
import platform
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bundle_validate import _row  # noqa: E402
from benchpack.bundles import secret_layers, secrets_scan  # noqa: E402

KEY = "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2"


def _disguises(key: str) -> list:
    return [
        {"error": base64.b64encode(key.encode()).decode()},
        {"error": key.encode().hex()},
        {"error": "".join(f"%{b:02X}" for b in key.encode())},
        {"error": key[::-1]},
        {"error": "\u200b".join(key)},
        {"error": [key[:8], key[8:]]},
        # issue 30 item 9
        {"error": base64.b32encode(key.encode()).decode()},
        {"error": "".join(f"&#{ord(c)};" for c in key)},
        {"error": " ".join(key)},
        {"error": key.replace("o", "\u043e").replace("p", "\u0440")},
        {"error": key.translate(str.maketrans("abcdefghijklmnopqrstuvwxyz", "nopqrstuvwxyzabcdefghijklm"))},
        {"error": "".join(f"\\x{ord(c):02x}" for c in key)},
    ]


def rows(count: int, disguised_every: int | None) -> bytes:
    rng = random.Random(11)
    disguises = _disguises(KEY)
    lines = []
    for index in range(count):
        line = _row(rng, index)
        if disguised_every and index % disguised_every == 0:
            row = json.loads(line)
            row["error"] = disguises[(index // disguised_every) % len(disguises)]["error"]
            line = json.dumps(row, ensure_ascii=False)
        lines.append(line)
    return ("\n".join(lines) + "\n").encode()


def timed(work, data: bytes) -> tuple[float, object]:
    started = time.perf_counter()
    result = work(data)
    return time.perf_counter() - started, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    works = {
        "plain": lambda data: secrets_scan.scan_bytes(data) + secrets_scan.scan_decoded_json(data, lines=True),
        "layers": lambda data: secret_layers.scan_layers(data, json_documents="lines"),
        "gate": secret_layers.layers_that_apply,
    }
    secret_layers.layers_that_apply(b"warm up: build the gates")
    print(f"python {platform.python_version()}, {platform.machine()}, rows={args.rows:,}")
    for label, every in (("clean", None), ("1 row in 1,000 disguised", 1000)):
        data = rows(args.rows, every)
        times: dict[str, list[float]] = {name: [] for name in works}
        results = {}
        for _ in range(args.rounds):
            for name, work in works.items():
                seconds, results[name] = timed(work, data)
                times[name].append(seconds)
        mb = len(data) / 1e6
        print(f"\n{label}: {mb:,.0f} MB")
        for name, samples in times.items():
            median = statistics.median(samples)
            print(f"  {name:7s} {median:7.2f} s  {mb / median:7.0f} MB/s")
        if every:
            found_lines = {hit.hit.line for hit in results["layers"]}
            expected = len(range(0, args.rows, every))
            print(f"  layers found {len(found_lines):,} of {expected:,} disguised rows; plain found "
                  f"{len({hit.line for hit in results['plain']}):,}")
        else:
            print(f"  findings: plain {len(results['plain'])}, layers {len(results['layers'])}, "
                  f"gates fired {sorted(results['gate'])}")
        del data


if __name__ == "__main__":
    main()
