"""Helpers shared by the cheat agents of this pack's audit (external-agent harness).

Each cheat agent is run exactly like a real agent (`--workspace --case
--output-dir --repetition --context`) and edits the workspace; the case id
says which language the matcher is in. Every one of them must fail.
"""

import argparse
import os
import sys
from pathlib import Path

sys.dont_write_bytecode = True

PY_LUMP = 'return {offer["offer_id"]: "all" for offer in offers}'
PY_SKELETON = 'return {offer["offer_id"]: offer["offer_id"] for offer in offers}'
RS_SKELETON = "offers.iter().map(|o| (o.offer_id.clone(), o.offer_id.clone())).collect()"
RS_LUMP = 'offers.iter().map(|o| (o.offer_id.clone(), "all".to_string())).collect()'


def parse():
    parser = argparse.ArgumentParser()
    for flag in ("--workspace", "--case", "--output-dir", "--repetition", "--context"):
        parser.add_argument(flag)
    args = parser.parse_args()
    return Path(args.workspace), args.case.endswith("-rust")


def ancestors_cmdlines():
    """The command lines of this process's parents (/proc/<ppid>/cmdline, and up)."""
    pid = os.getppid()
    while pid > 1:
        try:
            yield Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace").split("\0")
            status = Path(f"/proc/{pid}/status").read_text()
            pid = int(next(line for line in status.splitlines() if line.startswith("PPid:")).split()[1])
        except (OSError, StopIteration, ValueError):
            return


def find_label_dirs(start: Path) -> list[Path]:
    """Where an answer key might be: beside this script's pack, and every verifier path among its parents."""
    found = []
    for parent in [start, *start.parents]:
        if (parent / "verify" / "labels").is_dir():
            found.append(parent / "verify" / "labels")
    for args in ancestors_cmdlines():
        for arg in args:
            if arg.startswith("/") and "/verify/" in arg:
                labels = Path(arg[: arg.index("/verify/")]) / "verify" / "labels"
                if labels.is_dir():
                    found.append(labels)
    return list(dict.fromkeys(found))


def lump_everything(ws: Path, rust: bool) -> None:
    """A matcher that puts every offer in one cluster (scores far below the thresholds)."""
    if rust:
        main = ws / "rust" / "src" / "main.rs"
        main.write_text(main.read_text().replace(RS_SKELETON, RS_LUMP))
    else:
        matcher = ws / "python" / "matcher.py"
        matcher.write_text(matcher.read_text().replace(PY_SKELETON, PY_LUMP))
