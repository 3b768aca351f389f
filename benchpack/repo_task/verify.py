"""`verify-script` scoring: run the pack's verifier against the post-task workspace.

`sys.executable <script> --workspace … --output <verify json>` runs in a
new empty directory of the runner's (never in the workspace: no host process
starts in a candidate-written directory, docs/audits.md "Host processes"),
with a pinned environment (a fixed PATH, a private HOME, the manifest's
`scoring.environment`, the sandbox launcher, the toolchain facts resolved at
runner start), in its own process group, bounded by `scoring.timeout_s`
(default 300 s). The runner owns the verify JSON afterwards and makes it
authoritative on every path:

| verifier left…            | normal exit                                   | timeout                                   |
|---------------------------|-----------------------------------------------|-------------------------------------------|
| nothing                   | `{"exit_code": N, "passed": N == 0}`          | `{"exit_code": null, "passed": false, "timed_out": true, "timeout_s": T}` |
| a JSON object             | kept, `exit_code`/`passed` forced             | kept, the four timeout keys forced        |
| malformed / not an object | minimal object + `"output_error": "<why>"`    | the minimal timeout object                |

A pass needs both: exit status 0 **and**, when the verifier wrote a document
that states a verdict (`outcome`, or a boolean `passed`), a document that says
pass. A run whose exit status and document disagree is an **error**, never a
pass (`outcome: "error"`, `output_error` says why): a hook that turns the
process's exit status into 0 cannot turn a failing document into a pass. A
verifier that pins the core kit (`verify/verifykit.toml`) always writes one,
so for it a missing document is an error too. A document whose `outcome` is
`suspicious` (the kit's introspection screen, docs/audits.md) is recorded as
such, never passed.

The verifier is the pack's own (trusted) code and runs outside the sandbox,
but isolated from anything the candidate could have planted: `python -I -S -B`
(no PYTHON* variables, no site module at all — so no `.pth` file or
`sitecustomize` of any site-packages runs in it, and site-packages is not on
sys.path —, no current directory on sys.path, no bytecode written): verifiers
and the kit use the standard library only. Its own directory is put on sys.path by a
tiny bootstrap so sibling helpers still import, followed by the core
verifier kit the pack pins in `verify/verifykit.toml` (`version = N` →
`benchpack/repo_task/kits/verifykit_N/`). It never
imports candidate code; it runs it through the sandbox launcher named in its
environment (`sandbox.verifier_environment`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from benchpack.repo_task import rep_stem, repo_task_problem
from benchpack.repo_task.processes import TERMINATE_GRACE_S, run_bounded
from benchpack.repo_task.sandbox import verifier_environment as sandbox_verifier_environment
from benchpack.repo_task.toolchains import toolchains_environment

SEED_ENV = "BENCHPACK_VERIFY_SEED"

DEFAULT_VERIFY_TIMEOUT_S = 300.0
MAX_VERIFY_JSON_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class VerifyPaths:
    json: Path
    stdout: Path
    stderr: Path

    def record(self, out: Path) -> dict:
        return {
            "path": self.json.relative_to(out).as_posix(),
            "stdout_path": self.stdout.relative_to(out).as_posix(),
            "stderr_path": self.stderr.relative_to(out).as_posix(),
        }


def verify_paths(out: Path, case_id: str, repetition: int) -> VerifyPaths:
    base = Path(out).resolve() / "verify" / case_id
    stem = rep_stem(repetition)
    return VerifyPaths(base / f"{stem}.json", base / f"{stem}.stdout.log", base / f"{stem}.stderr.log")


@dataclass(frozen=True)
class VerifyOutcome:
    exit_code: int | None
    passed: bool
    timed_out: bool
    document: dict  # what was written to the verify JSON

    def row_fields(self, paths: VerifyPaths, out: Path) -> dict:
        repo_task: dict = {"status": self.status(), "verify_exit_code": self.exit_code}
        if repo_task["status"] == "suspicious":
            lines = self.document.get("suspicious")
            repo_task["suspicious"] = [str(x)[:300] for x in lines[:50]] if isinstance(lines, list) else []
        if not self.passed:
            failed = self.document.get("failed_checks")
            if isinstance(failed, list) and all(isinstance(c, str) for c in failed) and failed:
                repo_task["failed_checks"] = failed[:50]
            repo_task["failure_reason"] = self.failure_reason()
        return {
            "verify": paths.record(Path(out).resolve()),
            "repo_task": repo_task,
            "scoring": {"mode": "verify-script", "passed": self.passed},
        }

    def status(self) -> str:
        """passed | failed | error (the verifier could not judge, or its exit status and document
        disagree) | suspicious (the answer introspects its caller or environment: never passed)."""
        if self.passed:
            return "passed"
        outcome = self.document.get("outcome")
        if outcome == "suspicious":
            return "suspicious"
        if outcome == "error" and self.document.get("output_error"):
            return "error"
        return "failed"

    def failure_reason(self) -> str:
        if self.document.get("outcome") == "suspicious":
            return "suspicious: the answer adds introspection of its caller or environment (see repo_task.suspicious)"
        if self.timed_out:
            return f"the verifier timed out after {self.document.get('timeout_s'):g} seconds"
        failed = self.document.get("failed_checks")
        if isinstance(failed, list) and failed and all(isinstance(c, str) for c in failed):
            return "verifier checks failed: " + ", ".join(failed[:20])
        if self.document.get("output_error"):
            return f"the verifier exited with status {self.exit_code}; {self.document['output_error']}"
        return f"the verifier exited with status {self.exit_code}"


# `python -I` drops the script's directory from sys.path (-P); put it back, then the pinned
# kit's directory (argv[2], "" for none), and run the script as __main__.
BOOTSTRAP = (
    "import os, runpy, sys; script, kit = sys.argv[1], sys.argv[2]; sys.argv = sys.argv[1:2] + sys.argv[3:]; "
    "sys.path[:0] = [os.path.dirname(script)] + ([kit] if kit else []); runpy.run_path(script, run_name='__main__')"
)
KITS_DIR = Path(__file__).resolve().parent / "kits"
KIT_PIN = "verifykit.toml"


def kit_directory(script: Path) -> Path | None:
    """The core kit directory the verifier's pack pins (`verify/verifykit.toml`), None when it pins none."""
    pin = Path(script).resolve().parent / KIT_PIN
    if not pin.is_file():
        return None
    try:
        version = tomllib.loads(pin.read_text(encoding="utf-8")).get("version")
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{pin}: not readable TOML ({exc})") from None
    if type(version) is not int or version < 1:
        raise ValueError(f"{pin}: version must be a positive integer")
    directory = KITS_DIR / f"verifykit_{version}"
    if not (directory / "verifykit.py").is_file():
        raise ValueError(f"{pin}: verifykit version {version} is not in this benchpack ({KITS_DIR})")
    return directory


def verifier_command(scoring, *, workspace: Path, case_id: str, pack, source_fixture_id: str, patch: Path, output: Path) -> list[str]:
    kit = kit_directory(Path(scoring.script_resolved))
    return [
        sys.executable, "-I", "-S", "-B", "-c", BOOTSTRAP, str(scoring.script_resolved), str(kit) if kit else "",
        "--workspace", str(Path(workspace).resolve()),
        "--case", case_id,
        "--pack-id", pack.id,
        "--pack-version", pack.version,
        "--source-fixture-id", source_fixture_id,
        "--patch", str(Path(patch).resolve()),
        "--output", str(Path(output).resolve()),
    ]  # fmt: skip


def verifier_environment(scoring, policy=None, *, home: Path, toolchains: dict | None = None) -> dict[str, str]:
    """A pinned environment: nothing inherited but the interpreter's and the system's bin
    directories; the manifest overlay; how to reach the sandbox launcher; the toolchain facts."""
    path = [os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin", "/bin"]
    env = {"PATH": os.pathsep.join(dict.fromkeys(path)), "HOME": str(home), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
           "TMPDIR": tempfile.gettempdir()}  # fmt: skip
    env.update(scoring.environment or {})
    if policy is not None:
        env.update(sandbox_verifier_environment(policy))
    env.update(toolchains_environment(toolchains or {}))
    if os.environ.get(SEED_ENV):  # re-checking a recorded verdict (docs/audits.md, "Re-checking a verdict")
        env[SEED_ENV] = os.environ[SEED_ENV]
    return env


def _read_document(path: Path) -> tuple[dict | None, str | None]:
    """(object, None) or (None, why it is unusable); never follows a planted symlink."""
    if not os.path.lexists(path):
        return None, None
    if path.is_symlink() or not path.is_file():
        return None, "verify JSON is not a regular file"
    if path.stat().st_size > MAX_VERIFY_JSON_BYTES:
        return None, f"verify JSON is larger than {MAX_VERIFY_JSON_BYTES} bytes"
    try:
        value = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None, "verify JSON is not valid JSON"
    if not isinstance(value, dict):
        return None, "verify JSON is not a JSON object"
    return value, None


def _stated_verdict(found: dict) -> bool | None:
    """What the document itself says: True (pass), False (anything else), None (states nothing)."""
    outcome = found.get("outcome")
    if isinstance(outcome, str):
        return outcome == "pass"
    passed = found.get("passed")
    return passed if type(passed) is bool else None


def authoritative_document(found: dict | None, problem: str | None, exit_code: int | None, timed_out: bool, timeout_s: float,
                           *, document_required: bool = False) -> dict:  # fmt: skip
    if timed_out:
        document = dict(found) if found is not None else {}
        document.update({"exit_code": None, "passed": False, "timed_out": True, "timeout_s": timeout_s})
        return document
    if found is not None:
        stated = _stated_verdict(found)
        document = {**found, "exit_code": exit_code, "passed": exit_code == 0 and stated is not False}
        if stated is not None and stated != (exit_code == 0):
            # Exit status and document disagree: something changed one of them (issue 31).
            document.update({"passed": False, "outcome": "error", "stated_outcome": found.get("outcome", found.get("passed")),
                             "output_error": f"exit status {exit_code} disagrees with the verify JSON's verdict"})  # fmt: skip
        elif stated is None and document_required and exit_code == 0:
            document.update({"passed": False, "outcome": "error", "output_error": "the verify JSON states no outcome"})
        return document
    document = {"exit_code": exit_code, "passed": exit_code == 0 and not document_required}
    if problem:
        document["output_error"] = problem
    elif document_required:
        document["output_error"] = "the verifier wrote no verify JSON"
    if document_required:
        document["outcome"] = "error"
    return document


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)


def _write_document(path: Path, document: dict) -> None:
    _remove(path)  # never write through a link or into a directory the verifier planted
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def run_verifier(
    scoring,
    *,
    pack,
    case_id: str,
    workspace: Path,
    source_fixture_id: str,
    patch: Path,
    out: Path,
    repetition: int,
    grace_s: float = TERMINATE_GRACE_S,
    policy=None,
    toolchains: dict | None = None,
) -> tuple[VerifyOutcome, VerifyPaths]:
    if scoring.script_resolved is None or not Path(scoring.script_resolved).is_file():
        raise repo_task_problem(case_id, f"verify-script {scoring.script!r} does not exist")
    paths = verify_paths(out, case_id, repetition)
    paths.json.parent.mkdir(parents=True, exist_ok=True)
    _remove(paths.json)  # a stale file must not pass for this run's output
    timeout_s = DEFAULT_VERIFY_TIMEOUT_S if scoring.timeout_s is None else float(scoring.timeout_s)
    try:
        command = verifier_command(
            scoring, workspace=workspace, case_id=case_id, pack=pack,
            source_fixture_id=source_fixture_id, patch=patch, output=paths.json,
        )  # fmt: skip
    except ValueError as exc:
        raise repo_task_problem(case_id, str(exc)) from None
    # The verifier starts in a new empty directory of ours, never in the workspace.
    with tempfile.TemporaryDirectory(prefix="benchpack-verifier-") as private:
        home = Path(private) / "home"
        start = Path(private) / "cwd"
        home.mkdir()
        start.mkdir()
        try:
            result = run_bounded(
                command, cwd=start, stdout_path=paths.stdout, stderr_path=paths.stderr, timeout_s=timeout_s,
                env=verifier_environment(scoring, policy, home=home, toolchains=toolchains), grace_s=grace_s,
            )  # fmt: skip
        except OSError as exc:
            raise repo_task_problem(case_id, f"could not start the verifier: {exc.strerror or exc}") from exc
    found, problem = _read_document(paths.json)
    document = authoritative_document(found, problem, result.returncode, result.timed_out, timeout_s,
                                      document_required=kit_directory(Path(scoring.script_resolved)) is not None)  # fmt: skip
    _write_document(paths.json, document)
    outcome = VerifyOutcome(result.returncode, bool(document["passed"]), result.timed_out, document)
    return outcome, paths
