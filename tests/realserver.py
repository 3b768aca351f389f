"""A real LLM endpoint for tests and benchmarks: llama.cpp `llama-server` on
CPU serving SmolLM2-135M-Instruct (built/fetched by scripts/llama-server.sh).

Registered from tests/conftest.py. Tests ask for the session-scoped
`llama_server` fixture and carry `@pytest.mark.real_server`. When the binary
or model is missing the fixture skips, except under CI (`CI` set;
tests/environment.py decides for every environment-dependent test), where a
missing server is a failure: CI must never go green by silently skipping the
only real-endpoint checks.

bench/ scripts reuse `running_server()` so they measure the same setup.
"""

from __future__ import annotations

import contextlib
import functools
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests import processes
from tests.environment import unavailable

MODEL_ALIAS = "smollm2-135m"
BUILD_HINT = "run scripts/llama-server.sh to build llama-server and fetch the model"
HEALTH_TIMEOUT_S = 60.0


SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "llama-server.sh"


@functools.cache
def _cached_paths() -> tuple[Path, Path]:
    # The script owns the cache layout (its path carries the versions and a
    # digest of the build flags); `--paths` only prints, it never builds.
    out = subprocess.run(["bash", str(SCRIPT), "--paths"], capture_output=True, text=True, check=True)
    binary, model = out.stdout.split()
    return Path(binary), Path(model)


def server_binary() -> Path:
    return _cached_paths()[0]


def model_path() -> Path:
    return _cached_paths()[1]


def missing_files() -> list[Path]:
    return [p for p in (server_binary(), model_path()) if not p.is_file()]


@dataclass(frozen=True)
class RealServer:
    base_url: str
    model: str
    log_path: Path

    @property
    def chat_url(self) -> str:
        return f"{self.base_url}/v1/chat/completions"


class ServerStartError(RuntimeError):
    pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_argv(binary: Path, model: Path, port: int, parallel: int = 1) -> list[str]:
    # One slot and fixed thread counts: requests are serialised and decode
    # speed does not depend on how many cores happen to be free, which keeps
    # the server's own timings comparable with the client's. The concurrency
    # lane's tests ask for `parallel` slots (-np; the 4096-token context is
    # shared between them).
    return [
        str(binary), "-m", str(model), "-a", MODEL_ALIAS,
        "--host", "127.0.0.1", "--port", str(port),
        "-c", "4096", "-np", str(parallel), "-t", "1", "-tb", "2", "--no-webui",
    ]


def wait_until_healthy(base_url: str, process: subprocess.Popen, log_path: Path,
                       timeout_s: float = HEALTH_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerStartError(
                f"llama-server exited with {process.returncode}:\n{_tail(log_path)}")
        try:
            # /health answers 503 while the model loads, 200 {"status":"ok"} when ready.
            response = httpx.get(f"{base_url}/health", timeout=2.0)
            if response.status_code == 200 and response.json().get("status") == "ok":
                return
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.2)
    raise ServerStartError(
        f"llama-server not healthy after {timeout_s:.0f} s:\n{_tail(log_path)}")


def _tail(log_path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(log_path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


@contextlib.contextmanager
def running_server(log_dir: Path | None = None, parallel: int = 1) -> Iterator[RealServer]:
    """Start llama-server on a free port, yield once /health is ok, then stop it."""
    missing = missing_files()
    if missing:
        raise FileNotFoundError(
            f"missing {', '.join(map(str, missing))}; {BUILD_HINT}")
    with contextlib.ExitStack() as stack:
        if log_dir is None:
            log_dir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="llama-server-")))
        port = free_port()
        log_path = log_dir / f"llama-server-{port}.log"
        # A log file, not a pipe: llama-server logs every request, and an
        # unread pipe would eventually block it mid-benchmark.
        log = stack.enter_context(open(log_path, "wb"))
        process = subprocess.Popen(
            server_argv(server_binary(), model_path(), port, parallel),
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        stack.callback(processes.stop, process, 10)
        server = RealServer(base_url=f"http://127.0.0.1:{port}", model=MODEL_ALIAS,
                            log_path=log_path)
        wait_until_healthy(server.base_url, process, log_path)
        yield server


def _skip_or_fail_when_missing() -> None:
    """Skip here, fail under CI (tests/environment.py)."""
    missing = missing_files()
    if missing:
        unavailable(f"real llama-server unavailable (missing {', '.join(map(str, missing))}); {BUILD_HINT}")


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealServer]:
    _skip_or_fail_when_missing()
    with running_server(tmp_path_factory.mktemp("llama-server")) as server:
        yield server


@pytest.fixture(scope="module")
def llama_server_parallel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealServer]:
    """llama-server with 4 slots (-np 4), for the concurrency lane; module-scoped so it is stopped soon."""
    _skip_or_fail_when_missing()
    with running_server(tmp_path_factory.mktemp("llama-server-np4"), parallel=4) as server:
        yield server
