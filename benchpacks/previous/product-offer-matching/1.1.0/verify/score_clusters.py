"""Pass iff the workspace's matcher (Python or Rust, by case) clusters the
HIDDEN holdout offers with B-cubed F1 >= 0.70 and pairwise F1 >= 0.20 (D-036),
writes a well-formed clustering, changed only its own source files, left
data/ and the README alone, and embeds no offer ids of the visible or the
holdout data.

The holdout is drawn per execution: `scripts/generate_offers.py` (the
published distribution) makes a fresh offer set from a secret seed that only
this process knows and records in the verify JSON (re-check a verdict with
BENCHPACK_VERIFY_SEED), so no file the candidate can read reproduces it. The
matcher runs in the sandbox on a scratch copy of the workspace and gets a
fresh directory holding one file, `offers.csv` — the drawn offers under new
random ids, in a new order — and its output is mapped back and scored here.
The Rust toolchain is the one the runner resolved at start (never asked here:
a rustup proxy would read the candidate's rust-toolchain.toml); candidate
files are read on the host without following links.
"""

import sys

sys.dont_write_bytecode = True  # never leave __pycache__ in the pack

import csv  # noqa: E402
import io  # noqa: E402
import re  # noqa: E402
import tomllib  # noqa: E402
from pathlib import Path  # noqa: E402

import verifykit  # noqa: E402
from clustermetrics import scores  # noqa: E402

LABELS = Path(__file__).resolve().parent / "labels"
GENERATOR = Path(__file__).resolve().parent.parent / "scripts" / "generate_offers.py"
HOLDOUT_PRODUCTS = 220  # as many products as the published offer set
THRESHOLDS = {"bcubed": 0.70, "pairwise": 0.20}
MAX_EMBEDDED_VISIBLE_IDS = 10  # a few ids in a comment are not an answer key; a lookup table is
CASES = {
    "cluster-offers-python": {"allowed": ("python/*.py",), "language": "python"},
    "cluster-offers-rust": {"allowed": ("rust/src/*.rs", "rust/Cargo.toml", "rust/Cargo.lock"), "language": "rust"},
}
OFFER_ID = re.compile(rb"o\d{7}")


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def write_csv(path: Path, rows: list[dict], fields: list[str]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)


def check_no_embedded_ids(ctx) -> None:
    """Offer ids of the visible data (a lookup table) anywhere in the changed files — any
    file type, bytes included. (Holdout ids are new for every execution.)"""
    visible = {row["offer_id"] for row in read_csv(ctx.pristine / "data" / "offers.csv")}
    found_visible: set[str] = set()
    for rel in verifykit.changed_paths(ctx.pristine, ctx.workspace):
        try:
            data = verifykit.read_candidate(ctx.workspace, rel, limit=64_000_000)
        except OSError:  # gone, a link, not a regular file, or huge: nothing to read here
            continue
        found_visible |= {m.decode() for m in OFFER_ID.findall(data)} & visible
    ok = len(found_visible) < MAX_EMBEDDED_VISIBLE_IDS
    ctx.add(verifykit.Check("no-embedded-ids", ok, f"{len(found_visible)} visible offer id(s) in changed files"))


def draw_holdout(ctx) -> tuple[list[dict], dict[str, str]]:
    """(offers, offer id -> product) drawn from the published generator with the execution's secret seed."""
    generator = verifykit.load_module(GENERATOR, "offer_generator")
    seed = ctx.rng("holdout").randrange(10**6, 10**12)
    offers, labels = generator.offer_set(seed, HOLDOUT_PRODUCTS)
    return offers, dict(labels)


def rust_toolchain() -> tuple[Path, Path] | None:
    """(cargo, sysroot) the runner resolved once at start from a fixed directory; bound read-only."""
    facts = verifykit.toolchain("rust")
    if not facts:
        return None
    sysroot, cargo = Path(facts["sysroot"]), Path(facts["cargo"])
    if not cargo.is_file():
        return None
    return cargo, sysroot


def build_rust(ctx) -> Path | None:
    """Build the crate in the sandbox (build scripts and proc macros are candidate code);
    returns the directory holding the binary."""
    try:
        text = verifykit.read_candidate(ctx.workspace, "rust/Cargo.toml", limit=1_000_000).decode("utf-8")
        deps = tomllib.loads(text).get("dependencies", {})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        ctx.add(verifykit.Check("build", False, f"rust/Cargo.toml unreadable: {exc}"))
        return None
    if deps:
        ctx.add(verifykit.Check("build", False, "crates are not allowed (std only): " + ", ".join(deps)))
        return None
    toolchain = rust_toolchain()
    if toolchain is None:
        ctx.add(verifykit.Check("build", False, "no Rust toolchain (rustc/cargo) on the runner's PATH", True))
        return None
    cargo, sysroot = toolchain
    target = ctx.scratch_dir("target")
    env = {"CARGO_TARGET_DIR": str(target), "CARGO_NET_OFFLINE": "true", "CARGO_HOME": "/tmp/cargo-home",
           "RUSTC": str(sysroot / "bin" / "rustc"), "PATH": f"{sysroot / 'bin'}:/usr/bin:/bin"}  # fmt: skip
    check = verifykit.check_command(ctx, "build", [str(cargo), "build", "--offline", "--quiet", "--manifest-path", "rust/Cargo.toml"],
                                    env=env, timeout=240, read_only=(sysroot,), writable=(target,))  # fmt: skip
    return target / "debug" if check.passed else None


def fresh_input(ctx, rows: list[dict], name: str) -> Path:
    """A new directory holding `offers.csv` and nothing else."""
    directory = ctx.scratch_dir(name)
    write_csv(directory / "offers.csv", rows, ["offer_id", "merchant", "title", "brand", "category", "price"])
    return directory


def disguise(ctx, rows: list[dict]) -> tuple[list[dict], dict[str, str]]:
    """The rows under new random ids, shuffled; returns (rows, new id -> original id)."""
    rng = ctx.rng("disguise")
    numbers = rng.sample(range(10**7, 10**8), len(rows))
    mapping, disguised = {}, []
    for row, number in zip(rows, numbers):
        new_id = f"x{number}"
        mapping[new_id] = row["offer_id"]
        disguised.append({**row, "offer_id": new_id})
    rng.shuffle(disguised)
    return disguised, mapping


def run_matcher(ctx, command: list[str], rows: list[dict], check_id: str, *, gating: bool = True,
                read_only: tuple = ()) -> dict[str, str] | None:  # fmt: skip
    inputs = fresh_input(ctx, rows, "input")
    outputs = ctx.scratch_dir("output")
    run = verifykit.run_candidate(ctx, command + ["--offers", str(inputs / "offers.csv"), "--out", str(outputs / "clusters.csv")],
                                  timeout=60, read_only=(inputs, *read_only), writable=(outputs,))  # fmt: skip
    if run.code != 0:
        ctx.add(verifykit.Check(check_id, False, f"matcher exit {run.code}\n{run.tail()}", gating=gating))
        return None
    expected = [row["offer_id"] for row in rows]
    try:  # a candidate-written file: never follow a link it may have left in its place
        got_rows = list(csv.DictReader(io.StringIO(verifykit.read_candidate(outputs, "clusters.csv").decode("utf-8"), newline="")))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        ctx.add(verifykit.Check(check_id, False, f"no readable clustering: {exc}", gating=gating))
        return None
    problems = []
    if not got_rows or set(got_rows[0]) != {"offer_id", "cluster_id"}:
        problems.append("header must be offer_id,cluster_id")
    got = [row.get("offer_id") for row in got_rows]
    if sorted(map(str, got)) != sorted(expected):
        problems.append(f"{len(got)} rows for {len(expected)} offers (each offer exactly once)")
    if any(not row.get("cluster_id") for row in got_rows):
        problems.append("empty cluster_id")
    ctx.add(verifykit.Check(check_id, not problems, "; ".join(problems) or f"{len(got_rows)} offers clustered", gating=gating))
    return None if problems else {row["offer_id"]: row["cluster_id"] for row in got_rows}


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
    check_no_embedded_ids(ctx)
    read_only: tuple = ()
    if config["language"] == "python":
        command = verifykit.python_argv(script="python/matcher.py", path=("python",))
    else:
        binary_dir = build_rust(ctx)
        command = [str(binary_dir / "offer-matcher")] if binary_dir else None
        read_only = (binary_dir,) if binary_dir else ()
    if command:
        offers, holdout_gold = draw_holdout(ctx)
        disguised, mapping = disguise(ctx, offers)
        holdout = run_matcher(ctx, command, disguised, "holdout-output", read_only=read_only)
        visible = run_matcher(ctx, command, read_csv(ctx.pristine / "data" / "offers.csv"), "visible-output",
                              gating=False, read_only=read_only)  # fmt: skip
        if visible is not None:
            gold = {r["offer_id"]: r["cluster_id"] for r in read_csv(LABELS / "offers_labels.csv")}
            extra["visible_scores"] = scores(visible, gold)
        if holdout is not None:
            result = scores({mapping[k]: v for k, v in holdout.items()}, holdout_gold)
            extra["holdout_scores"] = result
            ok = all(result[m]["f1"] >= t for m, t in THRESHOLDS.items())
            detail = ", ".join(f"{m} F1 {result[m]['f1']:.3f} (>= {t})" for m, t in THRESHOLDS.items())
            ctx.add(verifykit.Check("quality", ok, detail))
    return verifykit.finish(ctx, extra)


if __name__ == "__main__":
    sys.exit(main())
