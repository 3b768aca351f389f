"""`benchpack export harbor PACK[@VERSION] --out DIR`: a coding pack's repo-task cases as Harbor tasks.

One task per `repo-task` case whose harness is `fenced-patch` and whose
scoring is `verify-script` (Harbor task format, schema 1.4), and a
`dataset.toml` listing each task with its content digest, computed the way
Harbor's `Packager.compute_content_hash` does (sha256 over the sorted lines
`"<relpath>\\0<file sha256>\\n"` of task.toml, instruction.md and every file
under environment/, tests/ and solution/).

Mode `agent`: the agent edits the repository at /app; Harbor copies /app into
a *separate* verifier container (`[verifier] environment_mode = "separate"`,
`artifacts = ["/app"]`), where `tests/test.sh` runs the pack's own verifier
(with the pinned verifykit) against the pristine fixture shipped under
/tests/pack. Benchpack's guarantees travel with it:
- the verifier never runs in the agent's container, and has no network;
- the base image is pinned by digest; the agent is a non-root user;
- `reward.txt` is 1 or 0 and `reward.json` holds one 0/1 number per check;
- an infrastructure fault (a check with `evidence_error`, no verify JSON, the
  verifier not starting) writes **no** reward and exits non-zero: it must not
  score 0;
- nothing is added to /app (a `.git/` there would read as out-of-scope changes).

Mode `answer`: the agent writes its final reply to `/logs/artifacts/answer.md`
(Harbor's conventional artifact directory, which Harbor always collects from
the agent's container and re-creates in the separate verifier). The verifier
image is built from `tests/Dockerfile` (the pinned base image plus git, which
Benchpack's executor applies a diff with); `tests/test.sh` copies the pristine
fixture to a scratch directory, applies the reply there with Benchpack's own
fenced-patch executor (the modules of `benchpack.repo_task` it needs, shipped
under `tests/benchpack_apply/`), captures the patch as `benchpack run` does, and
runs the same verifier on the result: the same scoring as `benchpack run`.
/app is not read at all. A reply that does not apply is the answer's outcome
(scored 0 by the verifier); no artifact directory, or an executor that cannot
run (no git), is an infrastructure fault: no reward.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from benchpack.errors import ConfigError, PackError, Problem
from benchpack.packs.loader import load_pack, resolve_pack_path
from benchpack.packs.lock import content_hash
from benchpack.repo_task.executors import external_agent_command, fenced_patch_text
from benchpack.repo_task.verify import BOOTSTRAP, KIT_PIN, kit_directory

# python:3.11-slim pinned by digest (lint `unpinned-image`); the verifier and the
# agent image are the same, so the verifier installs nothing at run time.
BASE_IMAGE = "python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7"
ORG = "benchpack"
AGENT_USER = "agent"
AGENT_TIMEOUT_S = 900.0
MODES = ("agent", "answer")
ANSWER_PATH = "/logs/artifacts/answer.md"  # Harbor's convention artifact dir: collected without declaring it
# The modules Benchpack's fenced-patch executor and patch capture import (standard library beside them; psutil
# only on a timeout, and the answer-mode verifier image installs the project's pin of it).
APPLIER_MODULES = ("__init__.py", "errors.py", "repo_task/__init__.py", "repo_task/executors.py",
                   "repo_task/fenced.py", "repo_task/nofollow.py", "repo_task/patch.py", "repo_task/processes.py",
                   "repo_task/session.py")
PSUTIL_PIN = "psutil==7.2.2"  # the version uv.lock holds
HARBOR_SCHEMA = "1.4"

AGENT_PARAGRAPH = (
    "\n\n---\n\nYou are working in the repository at /app. Make the change by editing files in place "
    "there; do not answer with a diff. Do not add files outside the task's scope (no `.git/`, no build "
    "output): the verifier compares /app with the repository as shipped.\n"
)

REWARD_PY = r'''"""Benchpack's verdict -> Harbor's reward, keeping Benchpack's rule: an infrastructure fault writes no reward."""
import json
import sys
from pathlib import Path

verify, status = Path(sys.argv[1]), int(sys.argv[2])
out = Path(sys.argv[3])
try:
    document = json.loads(verify.read_text(encoding="utf-8"))
    checks = document["checks"]
    assert isinstance(checks, list)
except Exception as exc:  # no usable verdict: not the candidate's fault, so no score at all
    print(f"benchpack verifier left no usable verdict ({type(exc).__name__}): no reward written", file=sys.stderr)
    sys.exit(3)
if any(check.get("evidence_error") for check in checks):
    print("benchpack verifier could not look at real evidence: no reward written", file=sys.stderr)
    sys.exit(3)
if status not in (0, 1):
    print(f"benchpack verifier exited with status {status}: no reward written", file=sys.stderr)
    sys.exit(3)
passed = status == 0 and document.get("passed", status == 0) is not False
per_check = {}
for check in checks:
    if check.get("gating", True) and isinstance(check.get("id"), str):
        per_check[check["id"]] = 1 if check.get("passed") else 0
(out / "reward.json").write_text(json.dumps({"reward": 1 if passed else 0, **per_check}) + "\n", encoding="utf-8")
(out / "reward.txt").write_text(("1" if passed else "0") + "\n", encoding="utf-8")
'''


ANSWER_PARAGRAPH = (
    "\n\n---\n\nThe repository is at /app for you to read. Your final reply is the file " + ANSWER_PATH + ": "
    "write your answer there, in the format the task asks for above. The verifier applies that reply to the "
    "repository as shipped, with Benchpack's fenced-patch executor, exactly as a single-shot answer is scored; "
    "changes you make in /app are not scored.\n"
)

APPLY_PY = r'''"""The agent's final reply applied as `benchpack run` applies a model's answer: Benchpack's own fenced-patch
executor on a fresh copy of the pristine repository, then the patch captured against it.

argv: ANSWER FIXTURE WORKSPACE PATCH_OUT LOG_DIR TIMEOUT_S. Exit 0 when the reply was applied *or refused*
(a refusal leaves the workspace unchanged and is the answer's outcome, judged by the verifier like any other);
exit 3 on an infrastructure fault (the executor could not run), so that no reward is written.
"""
import os
import shutil
import stat
import sys
from pathlib import Path

MAX_REPLY_BYTES = 16 * 1024 * 1024

answer, fixture, workspace, patch_out, log_dir, timeout_s = sys.argv[1:7]


def reply() -> tuple[str, str]:
    """(the reply's text, a note for the log); a missing or unusable file is an empty reply."""
    if not os.path.lexists(answer):
        return "", f"no reply: {answer} does not exist\n"
    try:
        fd = os.open(answer, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        return "", f"no reply: {answer} could not be opened ({exc.strerror})\n"
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return "", f"no reply: {answer} is not a regular file\n"
        data = handle.read(MAX_REPLY_BYTES + 1)
    if len(data) > MAX_REPLY_BYTES:
        return "", f"no reply: {answer} is larger than {MAX_REPLY_BYTES} bytes\n"
    return data.decode("utf-8", "replace"), ""


try:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "benchpack_apply"))
    from benchpack.repo_task.executors import external_agent_command, fenced_patch_text
    from benchpack.repo_task.patch import diff_trees

    text, note = reply()
    shutil.copytree(fixture, workspace, symlinks=True)
    applied = fenced_patch_text(Path(workspace), text, float(timeout_s))
    with open(os.path.join(log_dir, "apply.stdout.log"), "w", encoding="utf-8") as out:
        out.write(applied.stdout)
    with open(os.path.join(log_dir, "apply.stderr.log"), "w", encoding="utf-8") as err:
        err.write(note + applied.stderr)
    if applied.infrastructure_error:
        print(f"benchpack: {applied.infrastructure_error}: no reward written", file=sys.stderr)
        sys.exit(3)
    with open(patch_out, "wb") as patch:
        patch.write(diff_trees(Path(fixture), Path(workspace)).encode("utf-8", "surrogateescape"))
    sys.stdout.write(note + applied.stdout + applied.stderr)
except Exception as exc:  # the executor itself failed: not the answer's fault, so no score at all
    print(f"benchpack: could not apply the reply ({type(exc).__name__}: {exc}): no reward written", file=sys.stderr)
    sys.exit(3)
'''


@dataclass(frozen=True)
class ExportedTask:
    name: str
    directory: str
    digest: str
    case_id: str


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string is a JSON string for these characters
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(type(value).__name__)


def _toml_table(name: str, table: dict) -> str:
    lines = [f"[{name}]"] if name else []
    lines += [f"{key} = {_toml_value(value)}" for key, value in table.items()]
    return "\n".join(lines) + "\n"


def content_digest(task_dir: Path) -> str:
    """Harbor's `Packager.compute_content_hash` for the files an export writes (tests check it equals Harbor's)."""
    files = [task_dir / "task.toml", task_dir / "instruction.md"]
    for sub in ("environment", "tests", "solution"):
        files += [p for p in (task_dir / sub).rglob("*") if p.is_file()]
    outer = hashlib.sha256()
    for path in sorted(files, key=lambda p: p.relative_to(task_dir).as_posix()):
        outer.update(f"{path.relative_to(task_dir).as_posix()}\0{hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
    return outer.hexdigest()


# Cases whose verifier needs more than the pinned Python image carries, and why (docs/interop.md): not exported.
NOT_EXPORTED = {
    ("product-offer-matching", "cluster-offers-rust"):
        "its verifier builds the answer with the runner's Rust toolchain (verifykit.toolchain), which the pinned "
        "Python image does not carry",
    ("django-dashboard-regression-fix", "fix-dashboard-order-count"):
        "its verifier runs the project's Django tests, and the pack does not declare Django (Benchpack's runner "
        "lends it the project's environment; the exported image has no Django)",
}


def exportable(pack, mode: str = "agent") -> list:
    """Repo-task cases scored by a verify script: fenced-patch cases in both modes; external-agent cases in agent
    mode (Harbor's agent is the external agent; a single final reply is not what they ask for)."""
    harnesses = ("fenced-patch", "external-agent") if mode == "agent" else ("fenced-patch",)
    return [case for case in pack.cases if case.kind == "repo-task" and case.harness is not None
            and case.harness.id in harnesses and case.scoring is not None
            and case.scoring.mode == "verify-script" and (pack.id, case.id) not in NOT_EXPORTED]


def _known_good(pack_dir: Path, case_id: str) -> tuple[str, Path] | None:
    """("model_output" | "agent", the file) of the case's known-good audit fixture."""
    audit = pack_dir / "audit" / case_id / "audit.toml"
    if not audit.is_file():
        return None
    for fixture in tomllib.loads(audit.read_text(encoding="utf-8")).get("fixtures", []):
        if fixture.get("kind") != "known-good":
            continue
        for key in ("model_output", "agent"):
            if isinstance(fixture.get(key), str):
                return key, audit.parent / fixture[key]
    return None


def _oracle_workspace(case, known_good: tuple[str, Path], workspace: Path) -> None:
    """The known-good fixture played as `benchpack run` plays it: a model output through Benchpack's fenced-patch
    executor, or an audit agent script run as the external agent (the pack author's code) on the workspace."""
    kind, path = known_good
    if kind == "model_output":
        applied = fenced_patch_text(workspace, path.read_text(encoding="utf-8"), 60.0)
        if applied.infrastructure_error:
            raise ConfigError(Problem(str(path), "", f"could not apply: {applied.infrastructure_error}"))
        return
    with tempfile.TemporaryDirectory(prefix="benchpack-oracle-agent-") as private:
        context = Path(private) / "context.json"
        context.write_text("{}\n", encoding="utf-8")
        argv = external_agent_command([sys.executable, str(path)], workspace=workspace, case_id=case.id,
                                      out=Path(private), repetition=1, context=context)
        try:
            done = subprocess.run(argv, cwd=private, capture_output=True, text=True,
                                  timeout=float(case.harness.timeout_s or 600.0), stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ConfigError(Problem(str(path), "", f"the known-good agent did not finish: {exc}")) from None
        if done.returncode != 0:
            raise PackError(Problem(str(path), "", f"the known-good agent exited {done.returncode}: "
                                                   f"{done.stderr.strip()[-300:]}"))


def _copy_pack_skeleton(pack, pack_dir: Path, case, repo_fixture, dest: Path) -> None:
    """What verifykit reads relative to the verifier script: the manifest, the repo fixture, verify/."""
    dest.mkdir(parents=True)
    shutil.copy2(pack_dir / "benchpack.toml", dest / "benchpack.toml")
    shutil.copytree(repo_fixture.resolved, dest / repo_fixture.path, symlinks=True)
    script = Path(case.scoring.script_resolved)
    verify_dir = dest / Path(case.scoring.script).parent
    verify_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy2(script, verify_dir / script.name)
    # Beside the script: its helpers and data (a sibling module, holdout labels, the kit pin), never another
    # case's verifier or hidden checks.
    others = {Path(c.scoring.script_resolved).resolve() for c in pack.cases
              if c.scoring is not None and c.scoring.script_resolved and c.id != case.id}
    for entry in sorted(script.parent.iterdir()):
        if entry.name in ("hidden", "__pycache__", script.name) or entry.resolve() in others:
            continue
        if entry.is_dir():
            shutil.copytree(entry, verify_dir / entry.name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(entry, verify_dir / entry.name)
    if (pack_dir / "scripts").is_dir():  # the pack's own generators, which a verifier may run (a holdout drawn anew)
        shutil.copytree(pack_dir / "scripts", dest / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    hidden = script.parent / "hidden" / case.id
    if hidden.is_dir():
        shutil.copytree(hidden, verify_dir / "hidden" / case.id, ignore=shutil.ignore_patterns("__pycache__"))


def _test_sh(pack, case, repo_fixture, script_rel: str, mode: str) -> str:
    if mode == "answer":
        return _answer_test_sh(pack, case, repo_fixture, script_rel)
    return f"""#!/bin/sh
# Benchpack verifier for {pack.id}@{pack.version}#{case.id}, run by Harbor in its own container.
# /app is the agent's repository (an artifact copied from the agent's container); /tests/pack
# holds the pristine fixture and the pack's verifier. An infrastructure fault writes no reward.
set -u
mkdir -p /logs/verifier
python3 -I -B -c {_sh_quote(BOOTSTRAP)} /tests/pack/{script_rel} /tests/kit \\
    --workspace /app --case {case.id} --pack-id {pack.id} --pack-version {pack.version} \\
    --source-fixture-id {repo_fixture.id} --patch /dev/null --output /logs/verifier/verify.json \\
    >/logs/verifier/verify.stdout.log 2>/logs/verifier/verify.stderr.log
status=$?
cat /logs/verifier/verify.stdout.log
exec python3 -I -B /tests/reward.py /logs/verifier/verify.json "$status" /logs/verifier
"""


def _answer_test_sh(pack, case, repo_fixture, script_rel: str) -> str:
    apply_timeout = float(case.harness.timeout_s or 60.0)
    return f"""#!/bin/sh
# Benchpack verifier for {pack.id}@{pack.version}#{case.id}, answer mode, run by Harbor in its own container
# (built from tests/Dockerfile). The agent's final reply ({ANSWER_PATH}) is applied to a fresh copy of the
# pristine fixture with Benchpack's fenced-patch executor, then the pack's verifier judges it: the scoring of
# `benchpack run`. /app is not read. An infrastructure fault writes no reward.
set -u
mkdir -p /logs/verifier
if [ ! -d /logs/artifacts ]; then
    echo "benchpack: the agent's artifact directory /logs/artifacts never reached the verifier: no reward written" >&2
    exit 3
fi
work=$(mktemp -d /tmp/benchpack-answer.XXXXXX) || exit 3
python3 -I -B /tests/apply_answer.py {ANSWER_PATH} /tests/pack/{repo_fixture.path} "$work/repo" \\
    /logs/verifier/answer.diff /logs/verifier {apply_timeout!r} || exit 3
python3 -I -B -c {_sh_quote(BOOTSTRAP)} /tests/pack/{script_rel} /tests/kit \\
    --workspace "$work/repo" --case {case.id} --pack-id {pack.id} --pack-version {pack.version} \\
    --source-fixture-id {repo_fixture.id} --patch /logs/verifier/answer.diff --output /logs/verifier/verify.json \\
    >/logs/verifier/verify.stdout.log 2>/logs/verifier/verify.stderr.log
status=$?
cat /logs/verifier/verify.stdout.log
exec python3 -I -B /tests/reward.py /logs/verifier/verify.json "$status" /logs/verifier
"""


def _verifier_dockerfile() -> str:
    return (f"FROM {BASE_IMAGE}\n"
            "# git: Benchpack's fenced-patch executor applies a reply's diff with `git apply`;\n"
            "# psutil: the executor stops a timed-out `git apply` with it.\n"
            "RUN apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/*\n"
            f"RUN python3 -m pip install --no-cache-dir {PSUTIL_PIN}\n"
            "COPY . /tests/\n")


def _copy_applier(dest: Path) -> None:
    """Benchpack's fenced-patch executor and patch capture, as they are in this checkout (not a re-implementation)."""
    package = Path(__file__).resolve().parents[1]
    for module in APPLIER_MODULES:
        target = dest / "benchpack" / module
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(package / module, target)


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _solve_sh(changed: dict[str, bytes | None]) -> str:
    lines = ["#!/bin/sh", "# Harbor's oracle: the pack's known-good audit fixture, applied to /app.", "set -eu"]
    for path, data in sorted(changed.items()):
        target = f"/app/{path}"
        if data is None:
            lines.append(f"rm -f {_sh_quote(target)}")
        else:
            lines.append(f"mkdir -p {_sh_quote(str(Path(target).parent))}")
            lines.append(f"cp /solution/files/{_sh_quote(path)} {_sh_quote(target)}")
    return "\n".join(lines) + "\n"


def _changed_files(before: Path, after: Path) -> dict[str, bytes | None]:
    def files(root: Path) -> dict[str, bytes]:
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.is_symlink()}

    old, new = files(before), files(after)
    changed: dict[str, bytes | None] = {path: data for path, data in new.items() if old.get(path) != data}
    changed.update({path: None for path in old if path not in new})
    return changed


def task_name(pack_id: str, case_id: str, mode: str) -> str:
    """`benchpack/<pack>.<case>`, and `….answer` in answer mode: the two modes are different workloads."""
    return f"{ORG}/{pack_id}.{case_id}" + (".answer" if mode == "answer" else "")


def task_directory(pack_id: str, case_id: str, mode: str) -> str:
    return f"{pack_id}__{case_id}" + ("__answer" if mode == "answer" else "")


def export_pack(pack_ref: str, out: Path, mode: str = "agent") -> list[ExportedTask]:
    if mode not in MODES:
        raise ConfigError(Problem("--mode", "", f"must be one of {', '.join(MODES)}"))
    out = Path(out)
    if out.exists() or out.is_symlink():
        raise ConfigError(Problem(str(out), "", "already exists; choose a new directory"))
    pack_dir = resolve_pack_path(pack_ref)
    pack_dir = pack_dir if pack_dir.is_dir() else pack_dir.parent
    pack = load_pack(pack_dir)
    cases = exportable(pack, mode)
    if not cases:
        harness = "a fenced-patch or external-agent harness" if mode == "agent" else "a fenced-patch harness"
        raise PackError(Problem(str(pack_dir / "benchpack.toml"), "cases",
                                f"no repo-task case with {harness} and verify-script scoring to export "
                                f"in {mode} mode" + "".join(f"; {c}: {why}" for (p, c), why in NOT_EXPORTED.items()
                                                            if p == pack.id)))
    lock_sha = content_hash(pack_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        exported = [_export_case(pack, pack_dir, case, staging, lock_sha, mode) for case in cases]
        dataset_name = f"{ORG}/{pack.id}" + ("-answer" if mode == "answer" else "")
        dataset = [f'[dataset]\nname = "{dataset_name}"\nversion = "{pack.version}"\n'
                   f'description = {_toml_value(pack.description)}\n']
        for task in exported:
            dataset.append(f'\n[[tasks]]\nname = "{task.name}"\ndigest = "sha256:{task.digest}"\n')
        (staging / "dataset.toml").write_text("".join(dataset), encoding="utf-8")
        staging.rename(out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return exported


def _export_case(pack, pack_dir: Path, case, root: Path, lock_sha: str, mode: str) -> ExportedTask:
    repo_fixture = pack.repo_fixture(case)
    where = str(pack_dir / "benchpack.toml")
    if repo_fixture is None:
        raise PackError(Problem(where, f"cases[{case.id}]", "has no repo fixture to export"))
    known_good = _known_good(pack_dir, case.id)
    if known_good is None:  # (an audit.toml the pack's own checks accepted names it)
        raise PackError(Problem(str(pack_dir / "audit" / case.id / "audit.toml"), "fixtures",
                                "no known-good audit fixture: Harbor's oracle solution comes from it"))
    task_dir = root / task_directory(pack.id, case.id, mode)
    (task_dir / "environment").mkdir(parents=True)
    shutil.copytree(repo_fixture.resolved, task_dir / "environment" / "repo", symlinks=True)
    (task_dir / "environment" / "Dockerfile").write_text(
        f"FROM {BASE_IMAGE}\n"
        f"RUN useradd --create-home --uid 1000 {AGENT_USER}\n"
        "COPY repo/ /app/\n"
        f"RUN chown -R {AGENT_USER}:{AGENT_USER} /app\n"
        "WORKDIR /app\n"
        f"USER {AGENT_USER}\n", encoding="utf-8")
    paragraph = ANSWER_PARAGRAPH if mode == "answer" else AGENT_PARAGRAPH
    (task_dir / "instruction.md").write_text(case.prompt.rstrip("\n") + paragraph, encoding="utf-8")
    # tests/: the pack skeleton verifykit reads, the pinned kit, the reward writer, test.sh.
    _copy_pack_skeleton(pack, pack_dir, case, repo_fixture, task_dir / "tests" / "pack")
    kit = kit_directory(Path(case.scoring.script_resolved))
    (task_dir / "tests" / "kit").mkdir()
    if kit is not None:
        shutil.copy2(kit / "verifykit.py", task_dir / "tests" / "kit" / "verifykit.py")
    (task_dir / "tests" / "reward.py").write_text(REWARD_PY, encoding="utf-8")
    (task_dir / "tests" / "test.sh").write_text(_test_sh(pack, case, repo_fixture, case.scoring.script, mode),
                                                encoding="utf-8")
    if mode == "answer":  # the verifier's own image (Harbor builds tests/ when it holds a Dockerfile)
        (task_dir / "tests" / "apply_answer.py").write_text(APPLY_PY, encoding="utf-8")
        _copy_applier(task_dir / "tests" / "benchpack_apply")
        (task_dir / "tests" / "Dockerfile").write_text(_verifier_dockerfile(), encoding="utf-8")
    # solution/: the known-good fixture played as Benchpack plays it (its fenced-patch executor, or the agent);
    # in answer mode, Harbor's oracle writes the known-good reply itself as the final reply.
    if mode == "answer":
        _answer_solution(task_dir / "solution", known_good)
    else:
        _agent_solution(task_dir / "solution", case, repo_fixture, known_good)
    for script in (task_dir / "tests" / "test.sh", task_dir / "solution" / "solve.sh"):
        script.chmod(0o755)
    name = task_name(pack.id, case.id, mode)
    timeout = float(case.scoring.timeout_s or 300.0)
    if mode == "answer":  # the verifier also applies the reply first, bounded by the harness's timeout
        timeout += float(case.harness.timeout_s or 60.0)
    config = "".join([
        f'schema_version = "{HARBOR_SCHEMA}"\n',
        f'source = "benchpack:{pack.id}@{pack.version}#{case.id}"\n',
        # agent mode: the verifier judges the agent's /app; answer mode judges only the reply (in the
        # convention artifact dir, always collected), so nothing of /app travels.
        'artifacts = ["/app"]\n\n' if mode == "agent" else "\n",
        _toml_table("task", {"name": name, "version": pack.version,
                             "description": f"{pack.description} — case {case.id}",
                             "keywords": ["benchpack", pack.id, "repo-task"]}), "\n",
        _toml_table("metadata", {"benchpack_pack_id": pack.id, "benchpack_pack_version": pack.version,
                                 "benchpack_case_id": case.id, "benchpack_lock_sha": lock_sha,
                                 "benchpack_mode": mode,
                                 **({"benchpack_answer_path": ANSWER_PATH} if mode == "answer" else {}),
                                 "benchpack_harness_timeout_s": float(case.harness.timeout_s or 0.0)}), "\n",
        _toml_table("agent", {"timeout_sec": AGENT_TIMEOUT_S, "user": AGENT_USER, "network_mode": "no-network"}), "\n",
        _toml_table("verifier", {"timeout_sec": timeout, "network_mode": "no-network",
                                 "environment_mode": "separate"}), "\n",
        _toml_table("environment", {"workdir": "/app", "network_mode": "no-network", "cpus": 1,
                                    "memory_mb": 2048, "storage_mb": 4096}),
    ])
    (task_dir / "task.toml").write_text(config, encoding="utf-8")
    return ExportedTask(name=name, directory=task_dir.name, digest=content_digest(task_dir), case_id=case.id)


def _answer_solution(solution: Path, known_good: tuple[str, Path]) -> None:
    solution.mkdir(parents=True)
    shutil.copy2(known_good[1], solution / "answer.md")
    (solution / "solve.sh").write_text(
        "#!/bin/sh\n# Harbor's oracle: the pack's known-good audit fixture as the agent's final reply.\nset -eu\n"
        f"mkdir -p {Path(ANSWER_PATH).parent}\ncp /solution/answer.md {ANSWER_PATH}\n", encoding="utf-8")


def _agent_solution(solution: Path, case, repo_fixture, known_good: tuple[str, Path]) -> None:
    with tempfile.TemporaryDirectory(prefix="benchpack-oracle-") as scratch:
        workspace = Path(scratch) / "repo"
        shutil.copytree(repo_fixture.resolved, workspace, symlinks=True)
        _oracle_workspace(case, known_good, workspace)
        changed = _changed_files(Path(repo_fixture.resolved), workspace)
        if not changed:
            raise PackError(Problem(str(known_good[1]), "", "the known-good fixture changes nothing"))
        (solution / "files").mkdir(parents=True)
        for path, data in changed.items():
            if data is not None:
                target = solution / "files" / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
    (solution / "solve.sh").write_text(_solve_sh(changed), encoding="utf-8")
