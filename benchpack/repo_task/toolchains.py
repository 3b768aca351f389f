"""Toolchain facts, resolved once when the runner starts, from a fixed directory with a pinned environment.

A toolchain front end may read configuration from its working directory: a
rustup proxy (`~/.cargo/bin/rustc`) honours `rust-toolchain.toml` there and in
every parent, so `rustc --print sysroot` run in a candidate's workspace lets
the candidate choose which program runs on the host. The rule (docs/audits.md,
"Host processes") is that no host process runs with a candidate-written
directory as its cwd or with an environment the candidate could influence. So
the runner asks the toolchain once, before any candidate code exists, in an
empty private directory, with only the variables that locate the user's own
toolchain; verifiers get the answer (`BENCHPACK_TOOLCHAINS`, JSON) and run the
real binaries in the sysroot — never the proxy — inside the sandbox.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

TOOLCHAINS_ENV = "BENCHPACK_TOOLCHAINS"
# What may locate the user's toolchain; everything else (RUSTFLAGS, CARGO_*, RUSTC_WRAPPER…) is dropped.
PINNED_KEYS = ("PATH", "HOME", "RUSTUP_HOME", "CARGO_HOME", "RUSTUP_TOOLCHAIN")
QUERY_TIMEOUT_S = 60.0


def pinned_environment(environ: dict[str, str] | os._Environ | None = None) -> dict[str, str]:
    environ = os.environ if environ is None else environ
    env = {k: environ[k] for k in PINNED_KEYS if environ.get(k)}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "/usr/bin:/bin").split(os.pathsep) if os.path.isabs(p))
    env["LC_ALL"] = "C"
    return env


def resolve_rust(workdir: Path, environ=None) -> dict | None:
    """{"sysroot", "rustc", "cargo"} of the runner's Rust toolchain, or None where there is none."""
    env = pinned_environment(environ)
    rustc = shutil.which("rustc", path=env["PATH"])
    if rustc is None:
        return None
    try:
        result = subprocess.run([rustc, "--print", "sysroot"], cwd=workdir, env=env, capture_output=True, text=True,
                                timeout=QUERY_TIMEOUT_S, stdin=subprocess.DEVNULL)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0 or not result.stdout.strip():
        return None
    sysroot = Path(result.stdout.strip()).resolve()
    cargo, real_rustc = sysroot / "bin" / "cargo", sysroot / "bin" / "rustc"
    if not (cargo.is_file() and real_rustc.is_file()):
        return None
    return {"sysroot": str(sysroot), "rustc": str(real_rustc), "cargo": str(cargo)}


def resolve_toolchains(environ=None) -> dict[str, dict]:
    """Every toolchain fact verifiers may ask for, resolved in a new empty directory."""
    with tempfile.TemporaryDirectory(prefix="benchpack-toolchains-") as workdir:
        found = {"rust": resolve_rust(Path(workdir), environ)}
    return {name: facts for name, facts in found.items() if facts is not None}


def toolchains_environment(facts: dict[str, dict]) -> dict[str, str]:
    return {TOOLCHAINS_ENV: json.dumps(facts, sort_keys=True)}
