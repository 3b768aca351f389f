"""Registry query latency over ~1M rows, with and without the indexes.

    uv run python bench/registry_query.py [--rows 1000000] [--db /tmp/bench-registry.sqlite]

Builds (once; reused when --db exists) a registry of generated rows through
the real importer: 20 result directories, each with 20 packs x 50 cases x
10 models. Then runs each exact-filter query 15 times through
`registry.query.run_query` (JSON-ready dicts, default limit 1000) and
prints the median, the same SQL with its indexes disabled (SQLite's unary
`+` on the filtered columns, measured side by side), the ratio, and the
EXPLAIN QUERY PLAN line that shows which index serves it.
Target: < 50 ms per indexed query at 1M rows. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from registry_import import write_result_dir  # noqa: E402

from benchpack.registry.importer import RunSource, import_result_dirs  # noqa: E402
from benchpack.registry.query import Query, build_sql, explain_plan, run_query  # noqa: E402
from benchpack.registry.schema import open_read_only  # noqa: E402

DIRS = 20
SHAPE = {"packs": 20, "cases": 50, "models": 10}


def build(db: Path, rows: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        per_dir = rows // DIRS
        runs = [write_result_dir(Path(tmp) / f"run-{i:02d}", per_dir, seed=i, **SHAPE) for i in range(DIRS)]
        start = time.perf_counter()
        import_result_dirs(db, [RunSource(r) for r in runs])
        took = time.perf_counter() - start
        print(f"built {db} with {per_dir * DIRS:,} rows in {took:.1f} s ({per_dir * DIRS / took:,.0f} rows/s)")


def timed(fn, repeats: int = 15) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--db", type=Path, default=Path(tempfile.gettempdir()) / "bench-registry.sqlite")
    args = parser.parse_args()
    if not args.db.exists():
        build(args.db, args.rows)
    conn = open_read_only(args.db)
    total = conn.execute("SELECT count(*) FROM result_rows").fetchone()[0]
    fingerprint = conn.execute("SELECT fingerprint FROM result_rows WHERE id = ?", (total // 2,)).fetchone()[0]
    queries = {
        "rows pack+version+case": Query(filters={"pack": "pack-07", "pack_version": "0.1.0", "case": "case-13"}),
        "rows model+case": Query(filters={"model": "model-3", "case": "case-21"}),
        "rows fingerprint": Query(filters={"fingerprint": fingerprint}),
        "rows run+case": Query(filters={"run": "run-05", "case": "case-02"}),
        "rows adapter+ok=false": Query(filters={"adapter": "openai-chat", "ok": 0}),
        "case-stats pack+case": Query(table="case-stats", filters={"pack": "pack-07", "case": "case-13"}),
        "runs containing model": Query(table="runs", filters={"model": "model-3"}),
    }
    print(f"{total:,} rows in {args.db}")
    print(f"{'query':<26} {'records':>7} {'indexed ms':>10} {'no-index ms':>11} {'speedup':>8}  plan")
    for name, query in queries.items():
        records = len(run_query(conn, query))
        indexed = timed(lambda: run_query(conn, query))
        sql = build_sql(query)
        unindexed_sql = re.sub(r"(?<![+\w.])((?:\w+\.)?\w+) = \?", r"+\1 = ?", sql.text)
        unindexed = timed(lambda: conn.execute(unindexed_sql, sql.params).fetchall(), repeats=3)
        plan = " / ".join(explain_plan(conn, query))
        print(f"{name:<26} {records:>7} {indexed:>10.1f} {unindexed:>11.1f} {unindexed / indexed:>7.0f}x  {plan}")


if __name__ == "__main__":
    main()
