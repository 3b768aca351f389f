"""What running candidate code in the sandbox costs per process: start-up time.

Times, interleaved round by round so every variant sees the same machine noise,
one `python -I -B -c pass` started

- direct:             plain subprocess (the baseline: no isolation at all);
- bwrap:              through `sandbox_command` (the runner's own path: external agents);
- launcher, none:     through the verifier launcher with `--unsandboxed`'s policy;
- launcher, bwrap:    through the verifier launcher under bubblewrap (every hidden-check
                      probe, visible-test run and matcher run of a verifier).

Prints a Markdown table (median and p90 ms, overhead over direct) for
docs/repo-tasks.md. Target: the bubblewrap sandbox adds at most 100 ms per
process on an idle machine (a verifier starts 2–4 candidate processes).

    uv run python bench/sandbox_overhead.py [--rounds 30]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchpack.repo_task import sandbox

TARGET_MS = 100.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-sandbox-"))
    workspace = work / "workspace"
    workspace.mkdir()
    child = [sys.executable, "-I", "-B", "-c", "pass"]
    policies = {mode: sandbox.make_policy(unsandboxed=mode == "none", hidden=(), secret=(), private_dir=work)
                for mode in ("bubblewrap", "none")}  # fmt: skip
    variants: dict[str, tuple[list[str], dict]] = {"direct": (child, dict(os.environ))}
    bwrap = policies["bubblewrap"]
    variants["bwrap"] = (sandbox.sandbox_command(bwrap, child, cwd=workspace, writable=(workspace,)),
                         {"PATH": os.environ.get("PATH", "/usr/bin:/bin")})  # fmt: skip
    for mode, policy in policies.items():
        env = {**os.environ, **sandbox.verifier_environment(policy)}
        launcher = json.loads(env[sandbox.LAUNCHER_ENV])
        variants[f"launcher, {mode}"] = ([*launcher, "--cwd", str(workspace), "--writable", str(workspace), "--", *child], env)
    samples: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, (argv, env) in variants.items():
            start = time.perf_counter()
            subprocess.run(argv, env=env, cwd=workspace, check=True)
            samples[name].append((time.perf_counter() - start) * 1000)
    base = statistics.median(samples["direct"])
    print(f"{platform.node() or 'host'}: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, {args.rounds} rounds\n")
    print("| start-up of `python -I -B -c pass` | median ms | p90 ms | over direct |")
    print("|---|---|---|---|")
    for name, values in samples.items():
        median = statistics.median(values)
        p90 = statistics.quantiles(values, n=10)[-1]
        print(f"| {name} | {median:.1f} | {p90:.1f} | {median - base:+.1f} |")
    over = statistics.median(samples["launcher, bubblewrap"]) - base
    print(f"\nlauncher under bubblewrap adds {over:.0f} ms per candidate process (target ≤ {TARGET_MS:.0f} ms idle)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
