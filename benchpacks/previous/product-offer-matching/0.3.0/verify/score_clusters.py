"""Pass iff the workspace's matcher (Python or Rust, by case) clusters the
HIDDEN holdout offers with B-cubed F1 >= 0.70 and pairwise F1 >= 0.20 (D-036),
writes a well-formed clustering, changed only its own language directory,
left data/ alone and does not embed offer ids from the visible data.

Labels and holdout offers live in verify/labels/, never in the workspace.
"""

import sys

sys.dont_write_bytecode = True  # never leave __pycache__ in the pack

import csv  # noqa: E402
import re  # noqa: E402
import tempfile  # noqa: E402
import tomllib  # noqa: E402
from pathlib import Path  # noqa: E402

import verifykit  # noqa: E402
from clustermetrics import scores  # noqa: E402

LABELS = Path(__file__).resolve().parent / "labels"
THRESHOLDS = {"bcubed": 0.70, "pairwise": 0.20}
MAX_EMBEDDED_IDS = 10
CASES = {
    "cluster-offers-python": {"allowed": ("python/*",), "language": "python"},
    "cluster-offers-rust": {"allowed": ("rust/src/*", "rust/Cargo.toml", "rust/Cargo.lock"), "language": "rust"},
}


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def check_no_embedded_ids(ctx, allowed) -> None:
    """Offer ids of the visible data inside changed source files = a hard-coded answer."""
    ids = {row["offer_id"] for row in read_csv(ctx.pristine / "data" / "offers.csv")}
    found: set[str] = set()
    for rel in verifykit.changed_paths(ctx.pristine, ctx.workspace):
        if not verifykit._matches(rel, allowed):
            continue  # edits elsewhere are the scope check's business
        path = ctx.workspace / rel
        if path.is_file() and path.stat().st_size < 8_000_000:
            found |= ids.intersection(re.findall(r"o\d{7}", path.read_text(encoding="utf-8", errors="replace")))
    ok = len(found) < MAX_EMBEDDED_IDS
    ctx.add(verifykit.Check("no-embedded-ids", ok, f"{len(found)} visible offer id(s) in changed files"))


def build_rust(ctx, target_dir: Path) -> Path | None:
    manifest = ctx.workspace / "rust" / "Cargo.toml"
    try:
        deps = tomllib.loads(manifest.read_text(encoding="utf-8")).get("dependencies", {})
    except (OSError, tomllib.TOMLDecodeError) as exc:
        ctx.add(verifykit.Check("build", False, f"rust/Cargo.toml unreadable: {exc}"))
        return None
    if deps:
        ctx.add(verifykit.Check("build", False, "crates are not allowed (std only): " + ", ".join(deps)))
        return None
    env = verifykit.subprocess_env({"CARGO_TARGET_DIR": str(target_dir), "CARGO_NET_OFFLINE": "true"})
    check = verifykit.check_command(ctx, "build", ["cargo", "build", "--offline", "--quiet", "--manifest-path", str(manifest)],
                                    env=env, timeout=120)  # fmt: skip
    return target_dir / "debug" / "offer-matcher" if check.passed else None


def run_matcher(ctx, command: list[str], offers: Path, out: Path, check_id: str) -> dict[str, str] | None:
    code, output = verifykit.run(command + ["--offers", str(offers), "--out", str(out)], ctx.workspace, timeout=60)
    if code != 0:
        ctx.add(verifykit.Check(check_id, False, f"matcher exit {code}\n{output}"))
        return None
    expected = [row["offer_id"] for row in read_csv(offers)]
    try:
        rows = read_csv(out)
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        ctx.add(verifykit.Check(check_id, False, f"no readable clustering: {exc}"))
        return None
    problems = []
    if not rows or set(rows[0]) != {"offer_id", "cluster_id"}:
        problems.append("header must be offer_id,cluster_id")
    got = [row.get("offer_id") for row in rows]
    if sorted(got) != sorted(expected):
        problems.append(f"{len(got)} rows for {len(expected)} offers (each offer exactly once)")
    if any(not row.get("cluster_id") for row in rows):
        problems.append("empty cluster_id")
    ctx.add(verifykit.Check(check_id, not problems, "; ".join(problems) or f"{len(rows)} offers clustered"))
    return None if problems else {row["offer_id"]: row["cluster_id"] for row in rows}


def main() -> int:
    ctx = verifykit.parse_args()
    config = CASES.get(ctx.case)
    extra: dict = {"thresholds": THRESHOLDS}
    if config is None:
        ctx.add(verifykit.Check("evidence", False, f"unknown case {ctx.case!r}", True))
        return verifykit.finish(ctx)
    if not verifykit.check_evidence(ctx):
        return verifykit.finish(ctx)
    verifykit.check_changed(ctx)
    verifykit.check_scope(ctx, config["allowed"])
    verifykit.check_protected(ctx, ("data/*", "README.md"))
    check_no_embedded_ids(ctx, config["allowed"])
    with tempfile.TemporaryDirectory(prefix="offer-verify-") as tmp:
        tmp = Path(tmp)
        if config["language"] == "python":
            command = [sys.executable, str(ctx.workspace / "python" / "matcher.py")]
        else:
            binary = build_rust(ctx, tmp / "target")
            command = [str(binary)] if binary else None
        if command:
            holdout = run_matcher(ctx, command, LABELS / "holdout_offers.csv", tmp / "holdout.csv", "holdout-output")
            visible = run_matcher(ctx, command, ctx.pristine / "data" / "offers.csv", tmp / "visible.csv", "visible-output")
            if visible is not None:
                gold = {r["offer_id"]: r["cluster_id"] for r in read_csv(LABELS / "offers_labels.csv")}
                extra["visible_scores"] = scores(visible, gold)
            if holdout is not None:
                gold = {r["offer_id"]: r["cluster_id"] for r in read_csv(LABELS / "holdout_labels.csv")}
                result = scores(holdout, gold)
                extra["holdout_scores"] = result
                ok = all(result[m]["f1"] >= t for m, t in THRESHOLDS.items())
                detail = ", ".join(f"{m} F1 {result[m]['f1']:.3f} (>= {t})" for m, t in THRESHOLDS.items())
                ctx.add(verifykit.Check("quality", ok, detail))
    return verifykit.finish(ctx, extra)


if __name__ == "__main__":
    sys.exit(main())
