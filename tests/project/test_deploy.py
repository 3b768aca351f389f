"""deploy/ agrees with the code it deploys: env example, systemd units, Traefik, deploy.sh.

The slowest checks run the real programs: `manage.py check --deploy` with the
production environment, and granian started with the web unit's own arguments.
"""

from __future__ import annotations

import configparser
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import httpx
import pytest

from tests.environment import needs

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
VENV_BIN = Path(sys.executable).parent
UNIT_NAMES = ("benchpack-web", "benchpack-worker", "benchpack-beat")
SETTINGS_READS = re.compile(r'\benv_(?:str|bool|int|list|choice)\(\s*"([A-Z][A-Z0-9_]*)"')
DOCUMENTED = re.compile(r"^#?\s*([A-Z][A-Z0-9_]*)=", re.MULTILINE)
HOST = "registry.example.org"


# --- readers -------------------------------------------------------------------


def settings_variables() -> set[str]:
    return set(SETTINGS_READS.findall((REPO / "registry_site" / "settings.py").read_text()))


def env_example_text() -> str:
    return (DEPLOY / "benchpack.env.example").read_text()


def env_entries(text: str) -> dict[str, str]:
    """Active KEY=value lines, by the rules deploy.sh and systemd's EnvironmentFile= share."""
    entries = {}
    for raw in text.splitlines():
        line = raw.lstrip()
        if not line or line.startswith("#"):
            continue
        key, _, value = line.partition("=")
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        entries[key] = value
    return entries


def unit_service(name: str) -> configparser.SectionProxy:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str
    parser.read(DEPLOY / "systemd" / f"{name}.service")
    return parser["Service"]


def exec_argv(name: str, environ: dict[str, str]) -> list[str]:
    """ExecStart as systemd would run it here: ${VAR} from the env file, %H, this venv."""
    line = unit_service(name)["ExecStart"]
    line = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: environ.get(m.group(1), ""), line)
    line = line.replace("%H", socket.gethostname()).replace("%%", "%")
    argv = shlex.split(line)
    argv[0] = str(VENV_BIN / Path(argv[0]).name)
    return argv


def option(argv: list[str], name: str) -> str:
    for index, arg in enumerate(argv):
        if arg == name:
            return argv[index + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    raise AssertionError(f"{name} not in {argv}")


def production_environ(var_dir: Path) -> dict[str, str]:
    """The env example as a host would fill it in, and nothing from this test process."""
    environ = {key: os.environ[key] for key in ("PATH", "HOME", "LANG", "TMPDIR") if key in os.environ}
    environ.update(env_entries(env_example_text()))
    environ["SECRET_KEY"] = secrets.token_urlsafe(64)
    environ["EMAIL_HOST_PASSWORD"] = "not-used-by-these-tests"
    environ["BENCHPACK_VAR_DIR"] = str(var_dir)
    return environ


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --- env example -----------------------------------------------------------------


def test_it_documents_every_variable_settings_reads():
    read = settings_variables()
    assert {"SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "CELERY_BROKER_URL"} <= read
    undocumented = read - set(DOCUMENTED.findall(env_example_text()))
    assert not undocumented, f"add to deploy/benchpack.env.example: {sorted(undocumented)}"


def test_it_documents_no_variable_settings_ignores():
    stale = set(DOCUMENTED.findall(env_example_text())) - settings_variables()
    assert not stale, f"settings.py does not read {sorted(stale)}: a typo, or a removed setting"


def test_it_keeps_values_on_their_own_lines():
    # systemd would pass a trailing "# comment" on as part of the value.
    for key, value in env_entries(env_example_text()).items():
        assert " #" not in value and "\t#" not in value, key


def test_it_gives_a_validation_time_to_finish_before_anyone_retries_it():
    entries = env_entries(env_example_text())
    time_limit = int(entries["CELERY_TASK_TIME_LIMIT"])
    assert int(entries["SUBMISSION_VALIDATING_TIMEOUT_S"]) > time_limit  # the reaper and Redis redelivery
    assert int(unit_service("benchpack-worker")["TimeoutStopSec"]) > time_limit  # a restart during deploy


# --- systemd units ---------------------------------------------------------------


def test_it_runs_every_unit_from_the_same_tree_venv_and_env_file():
    services = [unit_service(name) for name in UNIT_NAMES]
    for key in ("WorkingDirectory", "EnvironmentFile", "User"):
        assert len({service[key] for service in services}) == 1, key
    venvs = {Path(shlex.split(service["ExecStart"])[0]).parent.parent for service in services}
    assert len(venvs) == 1
    script = (DEPLOY / "deploy.sh").read_text()
    assert f"VENV={venvs.pop()}\n" in script
    assert f"ENV_FILE={services[0]['EnvironmentFile']}\n" in script
    assert f"SERVICE_USER={services[0]['User']}\n" in script


def test_it_serves_the_django_wsgi_application():
    argv = exec_argv("benchpack-web", {"BENCHPACK_VAR_DIR": "/var/lib/benchpack"})
    assert Path(argv[0]).exists()
    module_name, _, attribute = argv[-1].partition(":")
    import importlib

    assert callable(getattr(importlib.import_module(module_name), attribute))
    assert option(argv, "--interface") == "wsgi"
    assert option(argv, "--host") == "127.0.0.1"  # Django trusts X-Forwarded-Proto: loopback only


@pytest.mark.parametrize("name, subcommand", [("benchpack-worker", "worker"), ("benchpack-beat", "beat")])
def test_it_starts_celery_with_options_celery_accepts(name, subcommand):
    from celery.bin.celery import celery as celery_cli
    from click.testing import CliRunner

    argv = exec_argv(name, {"BENCHPACK_VAR_DIR": "/var/lib/benchpack"})
    assert Path(argv[0]).exists()
    assert argv[1:4] == ["-A", "registry_site", subcommand]
    # click rejects an unknown or malformed option before it handles --help.
    result = CliRunner().invoke(celery_cli, argv[1:] + ["--help"])
    assert result.exit_code == 0, result.output


def test_it_takes_one_validation_at_a_time_per_worker_process():
    argv = exec_argv("benchpack-worker", {})
    assert option(argv, "--prefetch-multiplier") == "1"
    assert int(option(argv, "--concurrency")) >= 1


def test_it_schedules_only_tasks_that_exist():
    from django.conf import settings

    from registry_site.celery import app

    app.loader.import_default_modules()
    for entry in settings.CELERY_BEAT_SCHEDULE.values():
        assert entry["task"] in app.tasks


@needs(lambda: shutil.which("systemd-analyze") is not None, "systemd-analyze not installed (.ci/run installs Debian's systemd)")
def test_it_writes_units_systemd_accepts(tmp_path):
    for name in UNIT_NAMES:
        text = (DEPLOY / "systemd" / f"{name}.service").read_text()
        (tmp_path / f"{name}.service").write_text(text.replace("/opt/benchpack/venv/bin/", f"{VENV_BIN}/"))
    result = subprocess.run(
        ["systemd-analyze", "verify", *sorted(str(path) for path in tmp_path.iterdir())],
        capture_output=True, text=True, timeout=30,
    )
    complaints = [line for line in (result.stdout + result.stderr).splitlines() if "benchpack" in line]
    assert result.returncode == 0 and not complaints, complaints


# --- Traefik -----------------------------------------------------------------------


def test_it_routes_traefik_to_the_web_unit_over_tls():
    http = tomllib.loads((DEPLOY / "traefik" / "benchpack.toml").read_text())["http"]
    argv = exec_argv("benchpack-web", {})
    allowed_hosts = env_entries(env_example_text())["ALLOWED_HOSTS"].split(",")
    for name, router in http["routers"].items():
        assert router["service"] in http["services"], name
        assert set(router.get("middlewares", [])) <= set(http["middlewares"]), name
        assert re.fullmatch(r"Host\(`([^`]+)`\)", router["rule"]).group(1) in allowed_hosts
    secure = [router for router in http["routers"].values() if "websecure" in router["entryPoints"]]
    assert secure and all(router["tls"]["certResolver"] for router in secure)
    plain = [router for router in http["routers"].values() if "web" in router["entryPoints"]]
    for router in plain:
        assert any("redirectScheme" in http["middlewares"][name] for name in router["middlewares"])
    balancer = http["services"]["benchpack"]["loadBalancer"]
    assert [server["url"] for server in balancer["servers"]] == [
        f"http://{option(argv, '--host')}:{option(argv, '--port')}"
    ]
    assert balancer["healthCheck"]["hostname"] in allowed_hosts


def test_it_lets_the_largest_allowed_upload_through_traefik():
    http = tomllib.loads((DEPLOY / "traefik" / "benchpack.toml").read_text())["http"]
    limits = [m["buffering"]["maxRequestBodyBytes"] for m in http["middlewares"].values() if "buffering" in m]
    largest_upload = int(env_entries(env_example_text())["SUBMISSION_MAX_BYTES"])
    assert limits and min(limits) >= largest_upload + 1024 * 1024  # multipart framing and form fields


# --- deploy.sh ---------------------------------------------------------------------


def write_env_file(tmp_path: Path, var_dir: Path, **overrides: str) -> Path:
    entries = production_environ(var_dir)
    entries = {key: value for key, value in entries.items() if key in env_entries(env_example_text())}
    entries["BENCHPACK_VAR_DIR"] = str(var_dir)
    entries.update(overrides)
    path = tmp_path / "benchpack.env"
    path.write_text("".join(f'{key}="{value}"\n' for key, value in entries.items()))
    return path


def run_deploy(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(DEPLOY / "deploy.sh"), *args], capture_output=True, text=True, timeout=30)


def test_it_prints_every_deploy_step_in_order_and_changes_nothing(tmp_path):
    var_dir = tmp_path / "var"
    units_before = sorted(Path("/etc/systemd/system").glob("benchpack-*"))
    result = run_deploy("--dry-run", "--env-file", str(write_env_file(tmp_path, var_dir)), "--app-dir", str(REPO))
    assert result.returncode == 0, result.stderr
    steps = [
        "uv sync --frozen --no-dev --extra service",
        "manage.py check --deploy",
        f"sqlite3 {var_dir}/registry.sqlite3 .backup",
        "manage.py migrate --noinput",
        "manage.py collectstatic --noinput",
        "systemctl restart benchpack-web benchpack-worker benchpack-beat",
        f"Host:\\ {HOST}",
    ]
    positions = [result.stdout.find(step) for step in steps]
    assert -1 not in positions, [step for step, at in zip(steps, positions) if at == -1]
    assert positions == sorted(positions)
    assert not var_dir.exists()
    assert sorted(Path("/etc/systemd/system").glob("benchpack-*")) == units_before


@pytest.mark.parametrize(
    "override, complaint",
    [
        ({"BENCHPACK_VAR_DIR": str(REPO / "var")}, "inside the app directory"),
        ({"DATABASE_URL": f"sqlite:///{REPO}/db.sqlite3"}, "inside the app directory"),
        ({"SECRET_KEY": "CHANGE-ME"}, "SECRET_KEY is still CHANGE-ME"),
        ({"BENCHPACK_ENV": "local"}, "BENCHPACK_ENV must be production"),
    ],
)
def test_it_refuses_a_deploy_that_would_lose_data_or_leak_a_placeholder(tmp_path, override, complaint):
    env_file = write_env_file(tmp_path, tmp_path / "var", **override)
    result = run_deploy("--dry-run", "--env-file", str(env_file), "--app-dir", str(REPO))
    assert result.returncode == 2
    assert complaint in result.stderr


# --- the real programs -------------------------------------------------------------

# One production-mode Django process for both real-program tests: the checks
# `deploy.sh` runs before migrating, then the migration granian's test needs.
PREPARE = """
import json, sys
import django
django.setup()
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import SystemCheckError
try:
    call_command("check", deploy=True, fail_level="WARNING")
except SystemCheckError as error:
    sys.exit(f"check --deploy failed: {error}")
call_command("migrate", interactive=False, verbosity=0)
print(json.dumps({"STATIC_ROOT": str(settings.STATIC_ROOT), "DATABASE": str(settings.DATABASES["default"]["NAME"])}))
"""


@pytest.fixture(scope="module")
def production_site(tmp_path_factory):
    """A migrated production-mode site in a temp var dir: (environ, check result, settings seen)."""
    environ = production_environ(tmp_path_factory.mktemp("var"))
    result = subprocess.run(
        [sys.executable, "-c", PREPARE], cwd=REPO, capture_output=True, text=True, timeout=120,
        env=environ | {"DJANGO_SETTINGS_MODULE": "registry_site.settings"},
    )
    seen = json.loads(result.stdout.splitlines()[-1]) if result.returncode == 0 else {}
    return environ, result, seen


def test_it_passes_djangos_deployment_checks_with_the_production_env(production_site):
    _, result, seen = production_site
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout
    assert seen["DATABASE"].endswith("registry.sqlite3")


def test_it_serves_the_registry_with_the_web_units_arguments(production_site):
    environ, prepared, seen = production_site
    assert prepared.returncode == 0, prepared.stderr
    argv = exec_argv("benchpack-web", environ)
    # Static files go through Django (WhiteNoise) so they get the security headers; granian's own static
    # server cannot add headers, so the unit must not turn it on.
    assert not any(arg.startswith("--static-path") for arg in argv), argv
    probe = Path(seen["STATIC_ROOT"]) / "benchpack" / "probe.css"
    probe.parent.mkdir(parents=True, exist_ok=True)
    probe.write_text("body { color: black }\n")
    port = free_port()
    argv[argv.index("--port") + 1] = str(port)
    server = subprocess.Popen(argv, cwd=REPO, env=environ, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    base = f"http://127.0.0.1:{port}"
    behind_traefik = {"Host": HOST, "X-Forwarded-Proto": "https"}
    try:
        home = wait_for(base + "/", behind_traefik, server)
        assert home.status_code == 200
        assert "text/html" in home.headers["content-type"]
        assert "Strict-Transport-Security" in home.headers

        direct = httpx.get(base + "/", headers={"Host": HOST}, timeout=10)
        assert direct.status_code == 301 and direct.headers["location"] == f"https://{HOST}/"

        css = httpx.get(base + "/static/benchpack/probe.css", headers=behind_traefik, timeout=10)
        assert css.status_code == 200
        assert css.content == probe.read_bytes()
        assert "max-age=3600" in css.headers["cache-control"]
        # Every response the deployment serves carries the same security headers, static files included.
        for name in SECURITY_HEADERS:
            assert home.headers.get(name), (name, dict(home.headers))
            assert normal(name, css.headers.get(name)) == normal(name, home.headers[name]), (name, dict(css.headers))
        plain_css = httpx.get(base + "/static/benchpack/probe.css", headers={"Host": HOST}, timeout=10)
        assert plain_css.status_code == 301 and plain_css.headers["location"].startswith("https://")
        assert_traefik_sets_the_same_headers(home.headers)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)


SLOW_APP = """
import pathlib, time

def app(environ, start_response):
    pathlib.Path("entered").write_text("")
    time.sleep(120)
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [b"late"]
"""


def test_the_web_unit_stops_within_its_stop_timeout_with_a_request_in_flight(tmp_path):
    # granian waits for requests in flight when told to stop, with no limit of its own: one slow request
    # would hold a restart until systemd's SIGKILL. The unit's arguments kill a worker still busy after a while.
    (tmp_path / "slowapp.py").write_text(SLOW_APP)
    argv = exec_argv("benchpack-web", {})
    port = free_port()
    argv[argv.index("--port") + 1] = str(port)
    argv[-1] = "slowapp:app"  # the unit's arguments, a request that never ends in time
    server = subprocess.Popen(argv, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)},
                              start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    waiting = None  # the client stays connected: granian lets a request go whose client has left
    try:
        deadline = time.monotonic() + 45
        while waiting is None:
            assert server.poll() is None and time.monotonic() < deadline, "granian did not start"
            try:
                waiting = socket.create_connection(("127.0.0.1", port), timeout=1)
            except OSError:
                time.sleep(0.2)
        waiting.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        while not (tmp_path / "entered").exists():
            assert server.poll() is None and time.monotonic() < deadline, "granian did not take the request"
            time.sleep(0.1)
        started = time.monotonic()
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=int(unit_service("benchpack-web")["TimeoutStopSec"]))
        assert time.monotonic() - started < 20
    finally:
        if waiting is not None:
            waiting.close()
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)


SECURITY_HEADERS = ("Content-Security-Policy", "Strict-Transport-Security", "X-Content-Type-Options",
                    "Referrer-Policy", "X-Frame-Options", "Cross-Origin-Opener-Policy")


def assert_traefik_sets_the_same_headers(served) -> None:
    """deploy/traefik sets each security header again at the edge, with the value Django serves."""
    middleware = tomllib.loads((DEPLOY / "traefik" / "benchpack.toml").read_text())["http"]["middlewares"]
    headers = middleware["benchpack-headers"]["headers"]
    custom = headers.get("customResponseHeaders", {})
    hsts = f"max-age={headers['stsSeconds']}" + ("; includeSubDomains" if headers.get("stsIncludeSubdomains") else "")
    edge = {
        "Content-Security-Policy": headers["contentSecurityPolicy"],
        "Strict-Transport-Security": hsts,
        "X-Content-Type-Options": "nosniff" if headers.get("contentTypeNosniff") else None,
        "Referrer-Policy": headers.get("referrerPolicy"),
        "X-Frame-Options": "DENY" if headers.get("frameDeny") else None,
        "Cross-Origin-Opener-Policy": custom.get("Cross-Origin-Opener-Policy"),
    }
    assert set(edge) == set(SECURITY_HEADERS)
    assert {name: normal(name, served.get(name)) for name in SECURITY_HEADERS} == {
        name: normal(name, value) for name, value in edge.items()}


def normal(name: str, value: str | None):
    """django-csp writes the directives in no fixed order (a set): compare a CSP as its set of directives."""
    if name == "Content-Security-Policy" and value is not None:
        return frozenset(part.strip() for part in value.split(";") if part.strip())
    return value


def wait_for(url: str, headers: dict[str, str], server: subprocess.Popen, timeout_s: float = 45.0) -> httpx.Response:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"granian exited with {server.returncode}: {server.stderr.read().decode()[-2000:]}")
        try:
            return httpx.get(url, headers=headers, timeout=5)
        except httpx.TransportError:
            time.sleep(0.2)
    pytest.fail(f"granian did not answer {url} within {timeout_s:.0f} s")
