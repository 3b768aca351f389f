"""One real run on this machine: llama.cpp's `llama-server` (built by scripts/llama-server.sh) serving
SmolLM2-135M-Instruct Q4_1, measured with `smoke-chat` and published as a real run, with this machine's
own hardware.json, uploaded by the demo's operator — the person at this machine.

Without the binary (the script was never run, or the registry runs from a copy without scripts/) the
demo says so in one line and how to build it; it never builds it itself (minutes of compiling).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Callable

import httpx
from django.conf import settings

from benchpack.repo_task.processes import stop_process_tree

SCRIPT = Path(settings.BASE_DIR) / "scripts" / "llama-server.sh"
BUILD_HINT = "bash scripts/llama-server.sh builds it once (a few minutes; then restart the demo with a fresh var/)"
MODEL_ALIAS = "smollm2-135m"
PACK = "smoke-chat"
# The README's real-server command: one slot and fixed thread counts, so the figures do not depend on how many
# cores happen to be free. `-c 4096` is the README's context.
SERVER_FLAGS = ("-c", "4096", "-np", "1", "-t", "1", "-tb", "2", "--no-webui")
HEALTH_TIMEOUT_S = 60.0
REASON = ("a real run of llama-server on this machine, started and measured by the demo; "
          "this machine's hardware as probed")


def server_files(script: Path = SCRIPT) -> tuple[Path, Path] | str:
    """(binary, model) when both are built and fetched, else why not in words. The script owns the cache
    layout (its path carries the versions and a digest of the build flags); `--paths` never builds."""
    if not script.is_file():
        return f"{script} is not here"
    try:
        done = subprocess.run(["bash", str(script), "--paths"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{script} --paths failed: {error}"
    paths = done.stdout.split()
    if done.returncode != 0 or len(paths) < 2:
        return f"{script} --paths failed: {(done.stderr or done.stdout).strip()[:200]}"
    binary, model = Path(paths[0]), Path(paths[1])
    missing = [str(p) for p in (binary, model) if not p.is_file()]
    return f"not built yet ({', '.join(missing)} missing)" if missing else (binary, model)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running_server(binary: Path, model: Path, log_path: Path):
    """llama-server on a free port; yields its base URL once /health says ok, stops it after."""
    port = _free_port()
    with open(log_path, "wb") as log:  # a file, not a pipe: llama-server logs every request
        process = subprocess.Popen([str(binary), "-m", str(model), "-a", MODEL_ALIAS, "--host", "127.0.0.1",
                                    "--port", str(port), *SERVER_FLAGS],
                                   stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # its own group: stop_process_tree signals it whole
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + HEALTH_TIMEOUT_S
            while True:
                if process.poll() is not None:
                    raise RuntimeError(f"llama-server exited with {process.returncode}; see {log_path}")
                with contextlib.suppress(httpx.HTTPError, ValueError):
                    # 503 while the model loads, 200 {"status": "ok"} when ready
                    response = httpx.get(f"{url}/health", timeout=2.0)
                    if response.status_code == 200 and response.json().get("status") == "ok":
                        break
                if time.monotonic() > deadline:
                    raise RuntimeError(f"llama-server not healthy after {HEALTH_TIMEOUT_S:.0f} s; see {log_path}")
                time.sleep(0.2)
            yield url
        finally:
            stop_process_tree(process, grace_s=10.0)


def run_metadata(binary: Path, model: Path) -> dict:
    """What the server does not report about itself (README, "Run metadata"); the runner adds what it does."""
    return {"runtime": {"name": "llama-server",
                        "server_command": " ".join(["llama-server", "-m", model.name, "-a", MODEL_ALIAS, *SERVER_FLAGS]),
                        "config": {"threads": 1, "threads_batch": 2, "gpu_layers": 0}},
            "model": {"id": "SmolLM2-135M-Instruct", "quantization": "Q4_1"},
            "notes": f"a real run on this machine, made by manage.py demo with {binary.parent.name} "
                     "(scripts/llama-server.sh)"}


def measure(binary: Path, model: Path, out: Path, log_dir: Path) -> None:
    """`benchpack run smoke-chat` against the real server, as the README's real-server section does."""
    from benchpack.packs.loader import load_pack, resolve_pack_path
    from benchpack.run.runner import RunOptions, run_pack

    with running_server(binary, model, log_dir / "llama-server.log") as url:
        outcome = run_pack(load_pack(resolve_pack_path(PACK)),
                           RunOptions(adapter="openai-chat", model=MODEL_ALIAS, endpoint=url, out=out,
                                      run_metadata=run_metadata(binary, model)))
    if outcome.interrupted:
        raise KeyboardInterrupt
    if not outcome.rows:
        raise RuntimeError(f"the run against llama-server wrote no rows; see {log_dir / 'llama-server.log'}")


def publish_this_machine(server_url: str, operator, say: Callable[[str], None] = print, log_dir: Path | None = None,
                         script: Path = SCRIPT) -> int:
    """Measure and publish one real run on this machine when llama-server is built; one line when it is not.
    Returns how many runs were published."""
    from accounts.models import ApiToken
    from registry_site.catalogue.models import PublishedRun
    from registry_site.demo_real.publish import submit_and_approve

    found = server_files(script)
    if isinstance(found, str):
        say(f"real run on this machine: skipped — llama-server is not built here ({found}); {BUILD_HINT}")
        return 0
    if PublishedRun.objects.filter(runtime_name="llama-server", submission__submitter=operator,
                                   pack_id=PACK).exists():
        say("real run on this machine already present; skipping")
        return 0
    binary, model = found
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="benchpack-demo-llama-") as tmp:
        out = Path(tmp) / "llama-server-smoke-chat"
        measure(binary, model, out, Path(log_dir or tmp))
        _, token = ApiToken.issue(operator, "demo: a real run on this machine")
        published = submit_and_approve([out], server_url, token, operator, REASON, "real run on this machine", say)
    if published:
        say(f"real run on this machine: {PACK} against llama-server ({model.name}, CPU), uploaded by the operator, "
            f"published in {time.monotonic() - started:.0f} s")
    return published
