"""A runner host's environment: its host token, its broker login, the registry's URL — and nothing of the
registry's (no database URL, no secret key). The runner worker never configures Django."""

from __future__ import annotations

import subprocess
import sys

import pytest

from submissions.runqueue.demo import REGISTRY_ONLY, worker_env
from submissions.runqueue.runner import config
from tests.service.live import ROOT

GOOD = {"BENCHPACK_RUNNER_HOST": "gpu-a", "BENCHPACK_REGISTRY_URL": "https://registry.example.org/",
        "BENCHPACK_HOST_TOKEN": "bph_abc", "CELERY_BROKER_URL": "amqp://runner-gpu-a:pw@registry:5672/%2F"}


def test_the_worker_environment_drops_every_registry_secret():
    registry = {"DATABASE_URL": "postgres://benchpack:pw@db/benchpack", "SECRET_KEY": "s3cret", "PATH": "/usr/bin",
                "CELERY_BROKER_URL": "redis://:pw@127.0.0.1:6379/0", "EMAIL_HOST_PASSWORD": "mail",
                "DJANGO_SETTINGS_MODULE": "registry_site.settings"}
    env = worker_env(registry, host="gpu-a", token="bph_t", registry_url="https://r", broker_url="amqp://u:p@h/")
    assert not set(REGISTRY_ONLY) & set(env)
    assert env["CELERY_BROKER_URL"] == "amqp://u:p@h/" and env["BENCHPACK_HOST_TOKEN"] == "bph_t"
    assert env["PATH"] == "/usr/bin"


def test_the_runner_config_reads_only_its_own_variables():
    loaded = config.load(GOOD)
    assert (loaded.host, loaded.registry_url, loaded.queue) == ("gpu-a", "https://registry.example.org", "runs.gpu-a")


@pytest.mark.parametrize("change, needle", [
    ({"BENCHPACK_RUNNER_HOST": "GPU A"}, "BENCHPACK_RUNNER_HOST='GPU A'"),
    ({"BENCHPACK_REGISTRY_URL": "registry"}, "BENCHPACK_REGISTRY_URL='registry'"),
    ({"BENCHPACK_HOST_TOKEN": ""}, "BENCHPACK_HOST_TOKEN (or BENCHPACK_HOST_TOKEN_FILE)"),
    ({"CELERY_BROKER_URL": ""}, "CELERY_BROKER_URL: this host's broker login"),
    ({"CELERY_BROKER_URL": "filesystem://"}, "needs BENCHPACK_BROKER_DIR"),
])
def test_a_bad_environment_names_the_variable(change, needle):
    with pytest.raises(config.ConfigError) as refused:
        config.load({**GOOD, **change})
    assert needle in str(refused.value)


def test_the_worker_app_loads_without_django_settings_or_registry_modules():
    probe = ("import sys, submissions.runqueue.runner.app as a; "
             "bad = [m for m in sys.modules if m.startswith(('django.conf', 'django.db', 'registry_site', "
             "'submissions.models', 'submissions.runqueue.models', 'accounts'))]; "
             "print(a.app.conf.worker_enable_remote_control, a.app.conf.worker_send_task_events, bad)")
    env = {"PATH": "/usr/bin:/bin", **GOOD}
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False False []"
    missing = subprocess.run([sys.executable, "-c", "import submissions.runqueue.runner.app"], cwd=ROOT,
                             env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=60)
    assert missing.returncode != 0 and "BENCHPACK_RUNNER_HOST" in missing.stderr
