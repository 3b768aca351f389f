"""`benchpack import harbor JOB_DIR`: a Harbor job's trials of tasks Benchpack exported → a labelled bundle.

Reads the job's `result.json` (JobResult; 0.25's `n_completed_trials`/`n_errored_trials` or the older
`n_trials`/`n_errors`), and per trial `result.json` (TrialResult), `lock.json` (TrialLock: the task's digest
and Harbor's version) and `agent/trajectory.json` (ATIF) when present.

A trial is bound to a Benchpack task by its lock digest: the task named `benchpack/<pack>.<case>` at the
lock's version is exported again here (or read from `--exported DIR`'s dataset.toml) and its digest must be
the lock's. A trial whose digest Benchpack did not export is not imported: it is listed in run-metadata
(`imported.refused_trials`) with the reason. A trial that ended in an exception is a row that is not scored
(`ok: false`): an infrastructure fault is counted, never a 0.

Harbor records no inference hardware, runtime or server flags: `--hardware`/`--runtime` supply them, and
what nobody supplied is listed in `imported.unknown`.
"""

from __future__ import annotations

import re
import tempfile
import tomllib
from datetime import datetime
from pathlib import Path

from benchpack.errors import ConfigError, Problem
from benchpack.interop.bundle import write_bundle
from benchpack.interop.common import Imported, ImportRefused, Node, parse_json_text, read_bytes, row, sha256

TOOL = "harbor"
# benchpack.interop.harbor_export.task_name: `benchpack/<pack>.<case>`, `….answer` for an answer-mode export.
TASK_NAME = re.compile(r"^benchpack/([a-z0-9][a-z0-9-]*)\.([A-Za-z0-9][A-Za-z0-9_-]*)(\.answer)?$")
MAX_TRIALS = 100_000


def _load(path: Path) -> Node:
    return Node(str(path), parse_json_text(str(path), read_bytes(path))).obj()


def _seconds(phase: Node | None) -> float | None:
    if phase is None or phase.value is None:
        return None
    phase.obj()
    start, end = phase.text("started_at", required=False, nullable=True), phase.text("finished_at", required=False, nullable=True)
    if not start or not end:
        return None
    try:
        value = (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except ValueError:
        raise phase.refuse("started_at/finished_at must be ISO 8601 times") from None
    if value < 0:
        raise phase.refuse("finished_at is before started_at")
    return value


def _exported_digests(exported: Path | None, pack_id: str, version: str | None, mode: str,
                      cache: dict) -> dict[str, str]:
    """{task name: "sha256:…"} of what Benchpack exports for pack@version in `mode` (or what --exported says)."""
    key = (pack_id, version, mode)
    if key in cache:
        return cache[key]
    if exported is not None:
        dataset = exported / "dataset.toml"
        try:
            data = tomllib.loads(dataset.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(Problem(str(dataset), "", f"not a readable dataset.toml ({exc})")) from None
        found = {t.get("name"): t.get("digest") for t in data.get("tasks", []) if isinstance(t, dict)}
    else:
        from benchpack.interop.harbor_export import export_pack

        try:
            with tempfile.TemporaryDirectory(prefix="benchpack-reexport-") as scratch:
                tasks = export_pack(f"{pack_id}@{version}" if version else pack_id, Path(scratch) / "x", mode)
        except Exception:  # noqa: BLE001 - a pack or version this benchpack does not have binds nothing
            tasks = []
        found = {t.name: f"sha256:{t.digest}" for t in tasks}
    cache[key] = found
    return found


def import_job(job_dir: Path, out: Path, *, exported: Path | None = None, hardware: str | None = None,
               runtime: str | None = None) -> tuple[Path, str]:
    job_dir = Path(job_dir)
    if not job_dir.is_dir():
        raise ImportRefused(Problem(str(job_dir), "", "not a Harbor job directory"))
    job = _load(job_dir / "result.json")
    stats = job.get("stats").obj()
    completed = stats.integer("n_completed_trials", required=False)
    if completed is None:
        completed = stats.integer("n_trials")  # the name before Harbor 0.25
    errored = stats.integer("n_errored_trials", required=False)
    if errored is None:
        errored = stats.integer("n_errors")
    total = job.integer("n_total_trials", most=MAX_TRIALS)
    trial_dirs = sorted(p for p in job_dir.iterdir() if p.is_dir() and (p / "result.json").is_file())
    if len(trial_dirs) != total:
        raise job.refuse(f"says {total} trials but the job directory holds {len(trial_dirs)}", "n_total_trials")
    if completed != total:
        raise stats.refuse(f"{completed} of {total} trials completed: import a finished job", "n_completed_trials")
    rows, refused, digests_cache = [], [], {}
    harbor_version = None
    exceptions = 0
    for trial_dir in trial_dirs:
        result = _load(trial_dir / "result.json")
        lock = _load(trial_dir / "lock.json")
        this_version = lock.get("harbor").obj().text("version", most=64) if lock.has("harbor") else None
        if harbor_version is None:
            harbor_version = this_version
        elif this_version and this_version != harbor_version:
            raise lock.refuse(f"Harbor {this_version} differs from the job's other trials ({harbor_version})",
                              "harbor.version")
        task = lock.get("task").obj()
        name = task.text("name")
        digest = task.text("digest", most=80)
        if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
            raise task.refuse("must be sha256:<64 hex digits>", "digest")
        if result.text("task_name") != name:
            raise result.refuse(f"is not the lock's task {name!r}", "task_name")
        if "sha256:" + result.text("task_checksum", most=80).removeprefix("sha256:") != digest:
            raise result.refuse("differs from lock.json task.digest", "task_checksum")
        matched = TASK_NAME.match(name)
        trial_name = result.text("trial_name")
        if matched is None:
            refused.append({"trial": trial_name, "task": name, "reason": "not a task Benchpack exports"})
            continue
        pack_id, case_id, answer_mode = matched.groups()
        mode = "answer" if answer_mode else "agent"
        version = task.text("version", required=False, nullable=True)
        if _exported_digests(exported, pack_id, version, mode, digests_cache).get(name) != digest:
            refused.append({"trial": trial_name, "task": name, "digest": digest,
                            "reason": f"digest is not the one Benchpack exports for {pack_id}@{version}"})
            continue
        rows.append(_trial_row(result, trial_dir, harbor_version, pack_id, version, case_id, digest, mode))
        exceptions += 0 if rows[-1]["ok"] else 1
    if errored < exceptions:
        raise stats.refuse(f"says {errored} errored trials but {exceptions} bound trials ended in an exception",
                           "n_errored_trials")
    if not rows:
        raise ImportRefused(Problem(str(job_dir), "", f"no trial is bound to a task Benchpack exported "
                                    f"({len(refused)} refused: {refused[0]['reason'] if refused else 'none'})"))
    model = next((r["model"] for r in rows), None)
    passed = sum(1 for r in rows if r["ok"] and r["scoring"]["passed"])
    scored = sum(1 for r in rows if r["ok"])
    imported = Imported(
        tool=TOOL, tool_version=harbor_version, source_name=str(job_dir / "result.json"),
        source_sha256=sha256(read_bytes(job_dir / "result.json")), model=model, rows=rows,
        figures={"pass_rate": {"value": passed / scored if scored else None, "passed": passed, "scored": scored}},
        tool_figures={"stats": stats.value, "refused_trials": refused},
        settings={"job_id": job.text("id", most=64)},
        unknown=["hardware", "runtime", "server flags"] + ([] if harbor_version else ["tool version"]))
    bundle = write_bundle(imported, out, hardware=hardware, runtime=runtime)
    return bundle, (f"{len(rows)} trial rows ({passed}/{scored} passed, {len(rows) - scored} not scored), "
                    f"{len(refused)} refused, {imported.label}")


def _trial_row(result: Node, trial_dir: Path, version, pack_id, pack_version, case_id, digest, mode) -> dict:
    # the two export modes are different workloads (agent edits /app; a single final reply): apart on boards
    case = f"{pack_id}__{case_id}" + ("__answer" if mode == "answer" else "")
    agent_info = result.get("agent_info").obj()
    model_info = agent_info.get("model_info", required=False)
    model = model_info.text("name", required=False) if model_info is not None and model_info.value is not None else None
    config_agent = result.get("config").obj().get("agent", required=False)
    base_url = config_agent.text("base_url", required=False, nullable=True, most=2048) if config_agent else None
    api_format = config_agent.text("model_api_format", required=False, nullable=True, most=64) if config_agent else None
    exception = result.get("exception_info", required=False)
    tokens = {}
    agent_result = result.get("agent_result", required=False)
    if agent_result is not None:
        agent_result.obj()
        tokens = {"prompt": agent_result.integer("n_input_tokens", required=False, nullable=True),
                  "output": agent_result.integer("n_output_tokens", required=False, nullable=True),
                  "cached_prompt": agent_result.integer("n_cache_tokens", required=False, nullable=True)}
    phases = {f"{key}_s": _seconds(result.get(key, required=False))
              for key in ("environment_setup", "agent_setup", "agent_execution", "verifier")}
    own = {"trial_name": result.text("trial_name"), "trial_id": result.text("id", required=False, most=64),
           "task_digest": digest, "benchpack_pack": f"{pack_id}@{pack_version}", "benchpack_case": case_id,
           "benchpack_mode": mode,
           "agent": f"{agent_info.text('name')}@{agent_info.text('version', most=64)}",
           "model_api_format": api_format, "local_model": _is_local(base_url), "phases": phases}
    trajectory = trial_dir / "agent" / "trajectory.json"
    own["transcript_captured"] = trajectory.is_file()
    if trajectory.is_file():
        own["steps"] = _steps(_load(trajectory))
    if exception is not None and exception.value is not None:
        exception.obj()
        return row(TOOL, version, case, model, ok=False,
                   error=f"{exception.text('exception_type', most=128)} (not scored: the trial ended in an exception)",
                   tokens=tokens, own=own)
    rewards = result.get("verifier_result").obj().get("rewards").obj()
    reward_map = {key: node.number(minimum=None) for key, node in rewards.entries()}
    if "reward" not in reward_map:
        raise rewards.refuse("missing", "reward")
    own["rewards"] = reward_map
    answer = row(TOOL, version, case, model, ok=True, tokens=tokens, own=own)
    answer["scoring"] = {"mode": "harbor-reward", "passed": reward_map["reward"] == 1}
    return answer


def _is_local(url: str | None) -> bool | None:
    if not url:
        return None
    host = re.sub(r"^[a-z]+://", "", url).split("/", 1)[0].rsplit(":", 1)[0].strip("[]")
    return host in ("localhost", "127.0.0.1", "::1") or host.startswith(("10.", "192.168.", "172.16."))


def _steps(trajectory: Node) -> list[dict]:
    """Per agent step: its time from the trajectory's first step, and its token counts (ATIF)."""
    steps = trajectory.get("steps").items(most=100_000)
    first = None
    out = []
    for step in steps:
        step.obj()
        stamp = step.text("timestamp", required=False, nullable=True)
        when = None
        if stamp:
            try:
                when = datetime.fromisoformat(stamp)
            except ValueError:
                raise step.refuse("must be an ISO 8601 time", "timestamp") from None
            first = first or when
        metrics = step.get("metrics", required=False)
        entry = {"step_id": step.integer("step_id"), "source": step.text("source", most=16),
                 "t_s": None if when is None else (when - first).total_seconds()}
        if metrics is not None and metrics.value is not None:
            metrics.obj()
            entry.update({key: metrics.integer(key, required=False, nullable=True)
                          for key in ("prompt_tokens", "completion_tokens", "cached_tokens")})
        out.append(entry)
    return out
