"""deploy/systemd/benchpack-runner@.service: a runner host's worker as the run queue needs it."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.project.test_deploy import DEPLOY, VENV_BIN, exec_argv, option, unit_service
from tests.environment import needs

RUNNER = "benchpack-runner@"


def runner_argv(host: str = "gpu-1") -> list[str]:
    return [arg.replace("%i", host) for arg in exec_argv(RUNNER, {})]


def test_it_runs_from_the_same_tree_venv_and_env_file_as_the_other_units():
    runner, worker = unit_service(RUNNER), unit_service("benchpack-worker")
    for key in ("WorkingDirectory", "EnvironmentFile", "User"):
        assert runner[key] == worker[key], key
    assert runner["ExecStart"].split()[0] == worker["ExecStart"].split()[0]


def test_it_serves_exactly_its_hosts_queue_one_run_at_a_time():
    argv = runner_argv("gpu-1")
    assert option(argv, "--queues") == "runs.gpu-1"
    assert option(argv, "--concurrency") == "1" and option(argv, "--prefetch-multiplier") == "1"
    assert unit_service(RUNNER)["Environment"] == "BENCHPACK_RUNNER_HOST=%i"


def test_celery_accepts_its_options():
    from celery.bin.celery import celery as celery_cli
    from click.testing import CliRunner

    argv = runner_argv()
    assert argv[1:4] == ["-A", "registry_site", "worker"]
    result = CliRunner().invoke(celery_cli, argv[1:] + ["--help"])
    assert result.exit_code == 0, result.output


def test_a_stop_lets_the_run_in_progress_drain_before_systemd_kills_it():
    service = unit_service(RUNNER)
    assert service["KillMode"] == "mixed" and int(service["TimeoutStopSec"]) >= 600


@needs(lambda: shutil.which("systemd-analyze") is not None, "systemd-analyze not installed (.ci/run installs Debian's systemd)")
def test_systemd_accepts_an_instance_of_the_template(tmp_path):
    text = (DEPLOY / "systemd" / f"{RUNNER}.service").read_text().replace("/opt/benchpack/venv/bin/", f"{VENV_BIN}/")
    (tmp_path / f"{RUNNER}.service").write_text(text)
    (tmp_path / f"{RUNNER}gpu-1.service").write_text(text)
    result = subprocess.run(["systemd-analyze", "verify", str(tmp_path / f"{RUNNER}gpu-1.service")],
                            capture_output=True, text=True, timeout=30)
    complaints = [line for line in (result.stdout + result.stderr).splitlines() if "benchpack" in line]
    assert result.returncode == 0 and not complaints, complaints
