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


def test_it_runs_from_the_same_tree_and_venv_but_never_the_registrys_env_file():
    runner, worker = unit_service(RUNNER), unit_service("benchpack-worker")
    for key in ("WorkingDirectory", "User"):
        assert runner[key] == worker[key], key
    assert runner["ExecStart"].split()[0] == worker["ExecStart"].split()[0]
    # A runner host holds its token and broker login only (deploy/runner.env.example), never benchpack.env.
    assert runner["EnvironmentFile"] == "/etc/benchpack/runner.env" != worker["EnvironmentFile"]


def test_the_runner_env_example_holds_no_registry_secret():
    text = (DEPLOY / "runner.env.example").read_text()
    keys = {line.split("=", 1)[0].lstrip("# ").strip() for line in text.splitlines()
            if "=" in line and not line.startswith("# ") or line.startswith("# BENCHPACK_")}
    assert {"BENCHPACK_REGISTRY_URL", "BENCHPACK_HOST_TOKEN", "CELERY_BROKER_URL"} <= keys
    assert not {"DATABASE_URL", "SECRET_KEY", "CACHE_URL", "EMAIL_HOST_PASSWORD"} & keys


def test_it_serves_exactly_its_hosts_queue_one_run_at_a_time():
    argv = runner_argv("gpu-1")
    assert option(argv, "--queues") == "runs.gpu-1"
    assert option(argv, "--concurrency") == "1" and option(argv, "--prefetch-multiplier") == "1"
    assert unit_service(RUNNER)["Environment"] == "BENCHPACK_RUNNER_HOST=%i"


def test_celery_accepts_its_options():
    from celery.bin.celery import celery as celery_cli
    from click.testing import CliRunner

    argv = runner_argv()
    assert argv[1:4] == ["-A", "submissions.runqueue.runner.app", "worker"]
    assert {"--without-gossip", "--without-mingle", "--without-heartbeat"} <= set(argv)
    # The app is the Django-free runner worker; it loads from a runner host's environment only.
    env = {"BENCHPACK_RUNNER_HOST": "gpu-1", "BENCHPACK_REGISTRY_URL": "https://registry.example.org",
           "BENCHPACK_HOST_TOKEN": "bph_x", "CELERY_BROKER_URL": "amqp://runner-gpu-1:pw@127.0.0.1:5672/benchpack"}
    result = CliRunner().invoke(celery_cli, argv[1:] + ["--help"], env=env)
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
