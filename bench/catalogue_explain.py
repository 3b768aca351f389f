"""Cold renders of the catalogue's load-test URLs, their slowest SQL statements, and those statements' plans.

    DATABASE_URL=postgres://user@127.0.0.1:5432/db uv run python bench/catalogue_explain.py [--explain 8] [--only runs]

`bench/catalogue_load.py` measures the steady state (every URL rendered once, then served from the response
cache). This is the other half: each of its URLs (the same `discover()`, the same seed) rendered once with
the response cache off, in this process through Django's test client, as the first visitor after a change
sees it — the render's wall time per URL and per target, every SQL statement it sent with its time, and
`EXPLAIN (ANALYZE, BUFFERS)` of the slowest distinct statements (PostgreSQL; SQLite gets `EXPLAIN QUERY
PLAN`). Nothing is written to the database. Not part of the test suite (docs/leaderboards.md, "10M case rows
on PostgreSQL").
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

# The first render after a change: no response cache, and the API's throttle counted per address in the
# process (no Redis needed, and each request its own address so none is throttled).
os.environ["CATALOGUE_RESPONSE_CACHE"] = "false"
os.environ.setdefault("DEBUG", "false")
os.environ.setdefault("BENCHPACK_ENV", "local")

# Static files are never asked for here; whitenoise's "no directory" warning would only be noise.
warnings.filterwarnings("ignore", message="No directory at")

SKIPPED_TARGET = "trivial JSON view /healthz/"


def _shape(sql: str) -> str:
    """A statement with its literals blanked: statements that differ only by values are one shape."""
    return re.sub(r"'[^']*'|\b\d+(\.\d+)?\b", "?", sql)


def render_all(targets, per_target: int) -> tuple[list[dict], list[dict]]:
    """Render up to `per_target` URLs of each target once; (per-URL results, every statement sent)."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    renders, statements = [], []
    address = 0
    for target in targets:
        if target.name == SKIPPED_TARGET:
            continue
        for path in target.paths[:per_target]:
            address += 1
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                response = client.get(path, REMOTE_ADDR=f"10.9.{address // 256 % 256}.{address % 256}")
                wall_ms = (time.perf_counter() - started) * 1000
            if response.status_code != 200:
                raise SystemExit(f"{target.name}: {path} answered {response.status_code}")
            queries = [{"sql": q["sql"], "ms": float(q["time"]) * 1000} for q in captured.captured_queries]
            renders.append({"target": target.name, "path": path, "wall_ms": wall_ms, "queries": len(queries),
                            "sql_ms": sum(q["ms"] for q in queries), "first_of_target": path == target.paths[0]})
            statements.extend({**q, "target": target.name, "path": path} for q in queries)
    return renders, statements


def explain(sql: str) -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + sql)
        else:
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
        return "\n".join(" ".join(str(c) for c in row) for row in cursor.fetchall())


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-target", type=int, default=24, help="URLs rendered per target (default 24)")
    parser.add_argument("--explain", type=int, default=8, help="slowest distinct statements to explain (default 8)")
    parser.add_argument("--json", type=Path, help="also write the renders and plans here")
    parser.add_argument("--only", action="append",
                        help="render only targets whose name contains this (repeatable; as catalogue_load.py's)")
    args = parser.parse_args(argv)
    if not os.environ.get("DATABASE_URL"):
        raise SystemExit("DATABASE_URL is required (the seeded catalogue to read)")

    from catalogue_load import discover

    targets = discover()
    if args.only:
        targets = [t for t in targets if any(only in t.name for only in args.only)]
    from django.db import connection

    print(f"database: {connection.vendor}; cold renders, response cache off, {args.per_target} URLs a target")
    renders, statements = render_all(targets, args.per_target)
    # A target's first URL also pays what its view costs once a process (imports, templates): shown apart,
    # the quantiles are over the rest.
    print(f"{'target':<20} {'first ms':>9} {'URLs':>5} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8} {'SQL share':>9} "
          f"{'stmts/URL':>9}")
    for name in dict.fromkeys(r["target"] for r in renders):
        first = next(r for r in renders if r["target"] == name and r["first_of_target"])
        mine = [r for r in renders if r["target"] == name and not r["first_of_target"]] or [first]
        walls = [r["wall_ms"] for r in mine]
        share = sum(r["sql_ms"] for r in mine) / max(sum(walls), 1e-9)
        print(f"{name:<20} {first['wall_ms']:>9.1f} {len(mine):>5} {_quantile(walls, 0.5):>8.1f} "
              f"{_quantile(walls, 0.95):>8.1f} {max(walls):>8.1f} {share:>9.0%} "
              f"{sum(r['queries'] for r in mine) / len(mine):>9.1f}")
    slowest: dict[str, dict] = {}
    for statement in sorted(statements, key=lambda s: -s["ms"]):
        if statement["sql"].lstrip().upper().startswith(("SELECT", "WITH")):  # EXPLAIN of a COMMIT is an error
            slowest.setdefault(_shape(statement["sql"]), statement)
    plans = []
    for statement in list(slowest.values())[:args.explain]:
        plan = explain(statement["sql"])
        plans.append({**statement, "plan": plan})
        print(f"\n-- {statement['ms']:.1f} ms in {statement['target']} ({statement['path']})\n{statement['sql'][:600]}")
        print(plan)
    if args.json:
        args.json.write_text(json.dumps({"renders": renders, "plans": plans}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
