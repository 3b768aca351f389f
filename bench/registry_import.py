"""Registry import throughput, measured side by side with a bare executemany.

    uv run python bench/registry_import.py [--sizes 10000 100000 1000000]

For each size N and each layout it writes N generated rows shaped like the
real ones, then times:

  import    `registry import` end to end (read lines, decode and validate,
            fingerprint, case medians, insert, index build, commit)
  baseline  a bare parse + executemany of the same rows: read the lines,
            decode each with the importer's own decoder (`decode_sql_row`,
            the same NULL encoding) into `(run_id, line, *columns, raw_json,
            fingerprint)`, executemany a chunk at a time, into the same schema
            with the same PRAGMAs and the same index strategy (into an empty
            table: drop the row indexes, insert, recreate them), one
            transaction — everything the import does, less validation of
            the other files, fingerprints, case medians, cache states and
            ANALYZE

and prints rows/s for both, the ratio import/baseline in rows/s (the
target: >= 0.8, flat as N grows) and the load average beside each size.
The two are timed back to back at each size, so they see the same machine;
with --repeat R, R pairs in alternating order (baseline first, then import
first), with a sync before each phase so neither is charged for the other's
writeback, and a line of the median ratios. On a loaded machine read the CPU
ratio (process time): wall time there is mostly the scheduler's share.
The system part of each phase's CPU is printed beside it, and the ratio of
the user parts: at 1M rows a phase's system time (page faults of a ~1.2 GiB
heap, a ~1.2 GiB file written into the kernel's page cache) ranged
1.6-5 s between runs minutes apart, with the machine's memory state rather
than with the code, so the CPU ratio of one pair moves by up to ~0.1 with
it (docs/measurement.md, stop 41).
With --fork each phase runs in a forked child, so both start from the same
process state: in one process the baseline run after the import reuses the
heap pages the import faulted in and reads ~2 s cheaper at 1M (`_in_child`).
Two layouts:

  one-dir    all N rows in one result directory (2 packs x 20 cases x 2
             models: thousands of rows per case, per-case work amortized)
  many-dirs  N/500 result directories of 500 rows each (one pack, 50 cases,
             10 repetitions, one model): what a registry of many real runs
             looks like, with per-directory and per-case work at full weight

Not part of the test suite: the 1M sizes take a few minutes
and ~1.3 GB of disk.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import os
from itertools import islice

from benchpack.registry import fingerprint as fp
from benchpack.registry.importer import CHUNK_ROWS, RunSource, import_result_dirs, tune_for_bulk_write
from benchpack.registry.rows import COLUMNS, decode_sql_row
from benchpack.registry.schema import drop_row_indexes_if_empty, open_for_write, transaction

HARDWARE = {"hostname": "bench", "platform": "linux", "cpu_model": "AMD Ryzen 9 7950X 16-Core Processor",
            "cpu_count": 32, "ram_mb": 64219, "gpus": [{"model": "NVIDIA GeForce RTX 4090", "vram_mb": 24564}]}
METADATA = {"runtime": {"name": "llama.cpp", "version": "b6000"}, "model": {"quantization": "Q4_K_M"}}


def generate_rows(count: int, seed: int = 7, packs: int = 2, cases: int = 20, models: int = 2):
    """Rows like the real run.jsonl ones, spread over packs x cases x models.

    A real result directory holds one or two packs, tens of cases and one
    model; the defaults keep that shape so per-case work is amortized as it
    would be in practice."""
    rng = random.Random(seed)
    for i in range(count):
        pack, case, model = i % packs, (i // packs) % cases, (i // (packs * cases)) % models
        wall = rng.uniform(0.2, 2.0)
        ttft = rng.uniform(0.005, min(0.3, wall / 2))  # the first token before the last: decode_tps stays positive
        prompt, output = rng.randint(40, 900), rng.randint(8, 400)
        yield {
            "pack": {"id": f"pack-{pack:02d}", "version": "0.1.0"}, "case": f"case-{case:02d}",
            "adapter": "openai-chat" if model % 2 else "ollama-generate",
            "endpoint": "http://127.0.0.1:8081/v1/chat/completions", "model": f"model-{model}",
            "ok": i % 97 != 0,
            "timing": {"wall_s": wall, "ttft_s": ttft, "prefill_tps": round(prompt / ttft, 4),
                       "decode_tps": round(output / (wall - ttft), 4), "total_tps": round(output / wall, 4),
                       "ttfb_s": ttft * 0.9, "ttft_any_s": ttft, "tpot_s": (wall - ttft) / output},
            "tokens": {"prompt": prompt, "output": output, "cached_prompt": 0, "source": "usage"},
            "backend": None, "resources": {"memory_mb": None, "gpu_memory_mb": None},
            "scoring": {"mode": "contains", "passed": rng.random() < 0.7},
            "raw": {"request_path": f"raw/case-{case:02d}.rep-{i % 5 + 1:03d}.request.json",
                    "response_path": f"raw/case-{case:02d}.rep-{i % 5 + 1:03d}.response.json"},
            "repetition": i % 5 + 1,
        }


def write_result_dir(path: Path, count: int, seed: int = 7, **shape) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    with (path / "run.jsonl").open("w", encoding="utf-8") as out:
        for row in generate_rows(count, seed, **shape):
            out.write(json.dumps(row) + "\n")
    (path / "hardware.json").write_text(json.dumps(HARDWARE))
    (path / "run-metadata.json").write_text(json.dumps(METADATA))
    return path


ROWS_PER_DIR = 500
LAYOUTS = ("one-dir", "many-dirs")


def write_layout(root: Path, count: int, layout: str) -> list[Path]:
    """The result directories of one layout, holding `count` rows in all."""
    if layout == "one-dir":
        return [write_result_dir(root / "run", count)]
    return [write_result_dir(root / f"run-{i:05d}", ROWS_PER_DIR, seed=i, packs=1, cases=50, models=1)
            for i in range(max(1, count // ROWS_PER_DIR))]


BARE_INSERT = (f"INSERT INTO result_rows (run_id, line, {', '.join(COLUMNS)}, raw_json, fingerprint) "
               f"VALUES ({', '.join('?' * (len(COLUMNS) + 4))})")


def row_digests(run: Path) -> list[str]:
    """Each row's real fingerprint digest (the one the import stores), computed before the baseline's clock
    starts: the baseline then writes the same digests and builds the same fingerprint index as the import
    (until 2026-12-06 it wrote one constant digest, whose index cost ~1/3 of the import's)."""
    run_fp = fp.run_inputs(json.loads((run / "run-metadata.json").read_text()),
                           json.loads((run / "hardware.json").read_text()))
    digests: dict = {}
    out = []
    with (run / "run.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            row = decode_sql_row(line.rstrip("\r\n"))
            key = (row[0], row[1], row[2], row[4])
            digest = digests.get(key)
            if digest is None:
                digest = digests[key] = fp.compute(fp.case_inputs(run_fp, *key)).digest
            out.append(digest)
    return out


def time_baseline(db: Path, runs: list[Path]) -> tuple[float, float, int, float]:
    """Seconds (wall, CPU) of a bare parse + executemany of every row of `runs`, the rows written, and the
    system part of the CPU seconds."""
    digests = [row_digests(run) for run in runs]
    conn = open_for_write(db)
    with transaction(conn):  # the run rows are not per-row work
        conn.executemany("INSERT INTO runs (id, result_dir, label, source, imported_at, row_count, ok_count, packs)"
                         " VALUES (?, ?, 'x', 'bench', '', 0, 0, '')", [(i, str(i)) for i in range(1, len(runs) + 1)])
    tune_for_bulk_write(conn)
    rows = 0
    start, cpu, system = time.perf_counter(), time.process_time(), os.times().system
    with transaction(conn):
        recreate = drop_row_indexes_if_empty(conn)  # the importer's index strategy for an empty table
        for run_id, (run, run_digests) in enumerate(zip(runs, digests), start=1):
            with (run / "run.jsonl").open(encoding="utf-8") as handle:
                done = 0
                while lines := list(islice(handle, CHUNK_ROWS)):
                    conn.executemany(BARE_INSERT, [(run_id, done + n, *decode_sql_row(text), text, digest)
                                                   for n, text, digest in zip(
                                                       range(1, len(lines) + 1),
                                                       (line.rstrip("\r\n") for line in lines),
                                                       run_digests[done:done + len(lines)])])
                    done += len(lines)
                rows += done
        for statement in recreate:
            conn.execute(statement)
    elapsed, cpu, system = time.perf_counter() - start, time.process_time() - cpu, os.times().system - system
    conn.close()
    return elapsed, cpu, rows, system


def time_import(db: Path, runs: list[Path]) -> tuple[float, float, float]:
    """Seconds (wall, CPU, the system part of the CPU) of `registry import` of `runs`."""
    open_for_write(db).close()  # schema creation is not per-row work
    start, cpu, system = time.perf_counter(), time.process_time(), os.times().system
    import_result_dirs(db, [RunSource(run) for run in runs])
    return time.perf_counter() - start, time.process_time() - cpu, os.times().system - system


def _clean(root: Path) -> None:
    """Drop the timed databases and flush dirty pages to disk before a timed phase: the other phase's
    ~1 GB of writes (at 1M rows) is then not written back on this one's clock."""
    for leftover in root.glob("*.sqlite"):
        if leftover.name != "warm-up.sqlite":
            leftover.unlink()
    os.sync()


def _in_child(fork: bool, phase, *args):
    """`phase(*args)`, in a forked child when `fork`: each phase then starts from the same process state
    (the parent's, after writing the data), as a `registry import` command starts from a new process.
    In one process the second phase inherits the first's heap: after the import, glibc keeps the pages
    the import's ~1 GiB page cache faulted in and the baseline reuses them (at 1M many-dirs, 55k minor
    faults and ~1.4 s system CPU against ~330k and ~3.2 s cold), so an import-first pair read the baseline
    ~2 s cheaper than a baseline-first one; the import gets no such head start from the baseline."""
    if not fork:
        return phase(*args)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run the phase, send its figures, leave without the parent's cleanup
        try:
            os.write(write, json.dumps(phase(*args)).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if status != 0 or not data:
        raise SystemExit(f"the {phase.__name__} child failed (status {status})")
    return tuple(json.loads(data))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--layouts", nargs="+", choices=LAYOUTS, default=list(LAYOUTS))
    parser.add_argument("--repeat", type=int, default=1,
                        help="pairs per size, the order alternating (baseline first, then import first, ...);"
                             " with more than one, a line of the median ratios follows")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--fork", action="store_true",
                        help="time each phase in a forked child (same starting process state for both phases;"
                             " see _in_child)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        root = Path(tmp)
        # One-time process costs (module imports, compiled metadata schema) are not per-row work.
        time_import(root / "warm-up.sqlite", [write_result_dir(root / "warm-up", 10)])
        print(f"{'layout':>9} {'rows':>9} {'dirs':>5} {'first':>6} {'import s':>9} {'import rows/s':>14}"
              f" {'baseline s':>11} {'baseline rows/s':>16} {'ratio':>6} {'cpu imp':>8} {'cpu base':>9}"
              f" {'cpu ratio':>9} {'sys imp':>8} {'sys base':>8} {'user ratio':>10} {'load':>9}")
        for layout in args.layouts:
            for size in args.sizes:
                data = root / f"{layout}-{size}"
                runs = write_layout(data, size, layout)
                ratios = []
                for pair in range(args.repeat):
                    load = os.getloadavg()[0]
                    phases = ["baseline", "import"] if pair % 2 == 0 else ["import", "baseline"]
                    for phase in phases:
                        _clean(root)
                        if phase == "baseline":
                            base, base_cpu, rows, base_sys = _in_child(args.fork, time_baseline, root / "base.sqlite", runs)
                        else:
                            took, took_cpu, took_sys = _in_child(args.fork, time_import, root / "import.sqlite", runs)
                    ratios.append((base / took, base_cpu / took_cpu, (base_cpu - base_sys) / (took_cpu - took_sys)))
                    print(f"{layout:>9} {rows:>9} {len(runs):>5} {phases[0].replace('baseline', 'base'):>6} {took:>9.2f}"
                          f" {rows / took:>14,.0f} {base:>11.2f} {rows / base:>16,.0f} {base / took:>6.2f}"
                          f" {took_cpu:>8.2f} {base_cpu:>9.2f} {base_cpu / took_cpu:>9.2f} {took_sys:>8.2f} {base_sys:>8.2f}"
                          f" {(base_cpu - base_sys) / (took_cpu - took_sys):>10.2f}"
                          f" {load:>4.1f}-{os.getloadavg()[0]:<4.1f}", flush=True)
                if args.repeat > 1:
                    wall, cpu, user = (statistics.median(r[i] for r in ratios) for i in (0, 1, 2))
                    print(f"{layout:>9} {size:>9} median of {args.repeat}: ratio {wall:.2f}, cpu ratio {cpu:.2f},"
                          f" user ratio {user:.2f}",
                          flush=True)
                _clean(root)
                shutil.rmtree(data)


if __name__ == "__main__":
    main()
