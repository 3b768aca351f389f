"""Write a Harbor job directory with Harbor's own models (harbor 0.25.0), for `benchpack import harbor` tests.

Run in the pinned Harbor venv (scripts/interop-tools.sh), on a `benchpack export harbor` directory:

    ~/.cache/benchpack-interop/harbor-0.25.0/bin/python tests/data/interop/make_harbor_job.py EXPORT_DIR JOB_DIR [--legacy]

Harbor itself cannot run a trial here (every environment needs a container daemon or a cloud account), so the
trials' *outcomes* are chosen: trial 1 passes (reward 1), trial 2 fails (reward 0), trial 3 is bound to a task
digest Benchpack never exported, and trial 4 ended in an exception. Everything else is Harbor's: TrialResult,
TrialLock/TaskLock, JobResult with JobStats.from_trial_results, the ATIF trajectory model, and the paths of
harbor.models.trial.paths. `--legacy` rewrites the job stats with the older field names (n_trials, n_errors)
that Harbor's validators still migrate.
"""

from __future__ import annotations

import json
import sys
import tomllib
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

from harbor.models.job.result import JobResult, JobStats
from harbor.models.job.lock import HarborLockInfo, TaskLock, TrialLock
from harbor.models.task.id import LocalTaskId
from harbor.models.trial.config import AgentConfig, EnvironmentConfig, TaskConfig, TrialConfig
from harbor.models.trial.result import AgentInfo, ExceptionInfo, ModelInfo, TimingInfo, TrialResult
from harbor.models.verifier.result import VerifierResult
from harbor.models.agent.context import AgentContext
from harbor.models.trial.paths import TrialPaths

try:
    from harbor.models.trajectories import Agent, FinalMetrics, Metrics, Step, Trajectory
except ImportError:  # older layouts
    from harbor.models.trajectories.trajectory import Trajectory  # type: ignore
    from harbor.models.trajectories.agent import Agent  # type: ignore
    from harbor.models.trajectories.step import Step  # type: ignore
    from harbor.models.trajectories.metrics import Metrics  # type: ignore
    from harbor.models.trajectories.final_metrics import FinalMetrics  # type: ignore

START = datetime(2026, 12, 6, 3, 0, 0, tzinfo=timezone.utc)


def timing(offset_s: float, length_s: float) -> TimingInfo:
    return TimingInfo(started_at=START + timedelta(seconds=offset_s),
                      finished_at=START + timedelta(seconds=offset_s + length_s))


def main(export: Path, job: Path, legacy: bool) -> None:
    dataset = tomllib.loads((export / "dataset.toml").read_text())
    task_ref = dataset["tasks"][0]
    task_dir = export / task_ref["name"].split("/", 1)[1].replace(".", "__", 1)
    job.mkdir(parents=True)
    job_id = uuid.uuid4()
    results = []
    plans = [("pass", 1.0, task_ref["digest"]), ("fail", 0.0, task_ref["digest"]),
             ("foreign", 1.0, "sha256:" + "ab" * 32), ("error", None, task_ref["digest"])]
    for index, (kind, reward, digest) in enumerate(plans, start=1):
        trial_name = f"{task_dir.name}__trial{index}"
        trial_dir = job / trial_name
        paths = TrialPaths(trial_dir)
        paths.mkdir()
        agent = AgentConfig(name="mini-swe-agent", model_name="openai/smollm2-135m",
                            base_url="http://127.0.0.1:8081/v1", model_api_format="openai_chat_completions")
        config = TrialConfig(task=TaskConfig(path=task_dir), trial_name=trial_name, trials_dir=job, agent=agent,
                             environment=EnvironmentConfig(type="docker"))
        ended = kind == "error"
        result = TrialResult(
            task_name=task_ref["name"], trial_name=trial_name, trial_uri=trial_dir.resolve().as_uri(),
            task_id=LocalTaskId(path=task_dir), source=dataset["dataset"]["name"], task_checksum=digest.split(":", 1)[1],
            config=config, agent_info=AgentInfo(name="mini-swe-agent", version="1.14.2",
                                                model_info=ModelInfo(name="smollm2-135m", provider="openai")),
            agent_result=AgentContext(n_input_tokens=5200 + index, n_cache_tokens=1024, n_output_tokens=380 + index,
                                      cost_usd=0.0),
            verifier_result=None if ended else VerifierResult(rewards={"reward": reward}),
            exception_info=ExceptionInfo(exception_type="AgentTimeoutError", exception_message="agent timed out",
                                         exception_traceback="(trace)", occurred_at=START + timedelta(seconds=900))
            if ended else None,
            started_at=START, finished_at=START + timedelta(seconds=120 + index),
            environment_setup=timing(0, 20), agent_setup=timing(20, 5), agent_execution=timing(25, 80 + index),
            verifier=None if ended else timing(110, 9),
        )
        results.append(result)
        paths.result_path.write_text(result.model_dump_json(indent=2))
        lock = TrialLock(task=TaskLock(name=task_ref["name"], version=dataset["dataset"].get("version"), type="local",
                                       digest=digest, path=task_dir),
                         agent=agent, environment=EnvironmentConfig(type="docker"), verifier={"environment_mode": "separate"})
        lock_data = json.loads(lock.model_dump_json())
        lock_data["harbor"] = HarborLockInfo(version="0.25.0").model_dump()
        (trial_dir / "lock.json").write_text(json.dumps(lock_data, indent=2))
        if not ended:
            steps = [Step(step_id=1, timestamp=(START + timedelta(seconds=25)).isoformat(), source="user",
                          message="(instruction.md)"),
                     Step(step_id=2, timestamp=(START + timedelta(seconds=40)).isoformat(), source="agent",
                          model_name="smollm2-135m", message="editing pricing/bill.py",
                          metrics=Metrics(prompt_tokens=2600, completion_tokens=190, cached_tokens=512)),
                     Step(step_id=3, timestamp=(START + timedelta(seconds=70)).isoformat(), source="agent",
                          model_name="smollm2-135m", message="done",
                          metrics=Metrics(prompt_tokens=2600 + index, completion_tokens=190 + index, cached_tokens=512))]
            trajectory = Trajectory(schema_version="ATIF-v1.6", session_id=str(uuid.uuid4()),
                                    agent=Agent(name="mini-swe-agent", version="1.14.2", model_name="smollm2-135m"),
                                    steps=steps,
                                    final_metrics=FinalMetrics(total_prompt_tokens=5200 + index,
                                                               total_completion_tokens=380 + index,
                                                               total_cached_tokens=1024, total_steps=3))
            paths.agent_dir.mkdir(parents=True, exist_ok=True)
            (paths.agent_dir / "trajectory.json").write_text(trajectory.model_dump_json(indent=2, exclude_none=True))
            paths.verifier_dir.mkdir(parents=True, exist_ok=True)
            (paths.verifier_dir / "reward.txt").write_text(f"{int(reward)}\n")
    stats = JobStats.from_trial_results(results, n_total_trials=len(results))
    job_result = JobResult(id=job_id, started_at=START, finished_at=START + timedelta(seconds=200),
                           n_total_trials=len(results), stats=stats, trial_results=[])
    data = json.loads(job_result.model_dump_json())
    if legacy:  # the field names before 0.25 (Harbor's validators still migrate them)
        for name, old in (("n_completed_trials", "n_trials"), ("n_errored_trials", "n_errors")):
            data["stats"][old] = data["stats"].pop(name)
        JobResult.model_validate(data)  # Harbor still reads it
    (job / "result.json").write_text(json.dumps(data, indent=2))
    (job / "config.json").write_text(json.dumps({"job_name": job.name, "n_attempts": 1}, indent=2))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), "--legacy" in sys.argv[3:])
