"""One run on a runner host: claim it, run the pack with the core runner, send the bundle.

The message on `runs.<host>` carries only the request id. The worker claims
it over the runner-host API (the server's conditional UPDATE picks one
winner, and answers 403 for a request of another host), receives the run's
spec — the allowlisted endpoint with the addresses it may connect to, the
model, the pack, the options — pins the endpoint's address, runs, bundles,
and sends the bundle back over HTTPS, where the server files it as the run
request's submitter's submission.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import re
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from benchpack.adapters import Adapter, get_adapter
from benchpack.adapters.pinned import AddressNotAllowed, Pin, PinnedTransport, pin_endpoint
from benchpack.adapters.transport import LeanClient
from benchpack.bundles import archives
from benchpack.bundles.create import create_bundle
from benchpack.errors import BenchpackError
from benchpack.packs.loader import MANIFEST_NAME, Pack, bundled_packs_dir, load_pack
from benchpack.results.provenance import SELF_REPORTED
from benchpack.run.runner import RunOptions, effective_pack, run_pack
from submissions.runqueue.runner.client import ClaimLost, NotThisHost, RegistryClient, RegistryError, TokenRevoked
from submissions.runqueue.runner.watch import LOST, REVOKED, HttpProgress, RunInterrupted, RunLog, RunWatch

log = logging.getLogger(__name__)
# What the host says in the bundle: a claim. The registry earns the published
# provenance itself (runner-host, or operator-curated for an operator's run on an operator's host).
CLAIM = SELF_REPORTED
FAILED, CANCELLED, FINISHED = "failed", "cancelled", "finished"


class RunRefused(Exception):
    """The run cannot start; the message is the request's failure reason."""


def worker_label(hostname: str | None = None) -> str:
    return f"{hostname or socket.gethostname()} pid {os.getpid()}"


@dataclass
class PreparedRun:
    pack: Pack  # as it runs: the request's repetitions applied (runner.effective_pack)
    options: RunOptions
    adapter: Adapter
    probe_client: httpx.Client  # the runner's server probes go through the pin too
    pin: Pin


def prepare_run(spec: dict, workdir: Path) -> PreparedRun:
    endpoint = spec["endpoint"]
    try:
        pin = pin_endpoint(endpoint["url"], endpoint["addresses"])
    except (AddressNotAllowed, ValueError) as exc:
        raise RunRefused(f"endpoint {spec['host']}/{endpoint['name']} refused before any request: {exc}") from None
    pack = load_spec_pack(spec["pack"], workdir / "pack")
    quantization = spec.get("quantization") or ""
    options = RunOptions(
        adapter=endpoint["adapter"],
        model=spec["model"],
        endpoint=endpoint["url"],
        out=workdir / "results" / result_label(spec, pack),
        host_label=spec["host"],
        run_metadata={
            "runtime": {"name": endpoint["runtime_name"], "version": endpoint["runtime_version"]},
            "model": {"quantization": quantization} if quantization else {},
            "notes": f"Run by runner host {spec['host']} for run request {spec['id']}.",
        },
        openai_stream_usage=spec["openai_stream_usage"],
        repetitions=spec.get("repetitions"),
    )
    adapter = get_adapter(endpoint["adapter"], LeanClient(PinnedTransport(pin)))
    return PreparedRun(pack=effective_pack(pack, options), options=options, adapter=adapter,
                       probe_client=LeanClient(PinnedTransport(pin)), pin=pin)


def result_label(spec: dict, pack: Pack) -> str:
    """The result directory's name, which becomes the bundle's run label."""
    model = re.sub(r"[^A-Za-z0-9._-]+", "-", spec["model"]).strip("-.") or "model"
    return f"{pack.id}-{model[:60]}-{spec['host']}-{spec['id'][:8]}"


def load_spec_pack(entry: dict, into: Path) -> Pack:
    name = f"{entry['id']} {entry['version']}"
    if entry["source"] == "bundled":
        path = bundled_packs_dir() / entry["id"]
        if not (path / MANIFEST_NAME).is_file():
            raise RunRefused(f"bundled pack {entry['id']} is not in this worker's checkout")
    else:
        data = base64.b64decode(entry["archive_b64"] or "")
        if hashlib.sha256(data).hexdigest() != entry["archive_sha256"]:
            raise RunRefused(f"pack {name}: the archive does not match its sha256")
        path = extract_pack_archive(data, f"{entry['id']}-{entry['version']}.tar.gz", into)
    try:
        pack = load_pack(path)
    except BenchpackError as exc:
        raise RunRefused(f"pack {name} does not load: " + "; ".join(exc.lines())) from None
    if (pack.id, pack.version) != (entry["id"], entry["version"]):
        raise RunRefused(f"pack {name} is {pack.id} {pack.version} on this worker; update the worker's checkout "
                         "or the allowlist")
    return pack


def extract_pack_archive(data: bytes, name: str, into: Path) -> Path:
    """A pack archive (its benchpack.toml at the top or in one folder) extracted safely; the pack's directory."""
    into.mkdir(parents=True, exist_ok=True)
    archive = into / ("upload." + archives.archive_kind(Path(name)))
    archive.write_bytes(data)
    root = archives.safe_extract(archive, into / "extracted")
    archive.unlink()
    if (root / MANIFEST_NAME).is_file():
        return root
    manifests = sorted(root.glob(f"*/{MANIFEST_NAME}"))
    if len(manifests) != 1:
        raise RunRefused(f"{name}: expected one {MANIFEST_NAME} at the top or in one folder, found {len(manifests)}")
    return manifests[0].parent


@dataclass
class BundledResult:
    name: str
    data: bytes
    sha256: str


def bundle_result(result_dir: Path, workdir: Path) -> BundledResult:
    bundle = create_bundle([result_dir], workdir / "bundle", CLAIM)
    archive = archives.pack_archive(bundle, workdir / f"{result_dir.name}.tar.gz")
    data = archive.read_bytes()
    return BundledResult(name=archive.name, data=data, sha256=hashlib.sha256(data).hexdigest())


def execute(client: RegistryClient, request_id: str, worker: str) -> str:
    """Claim the request and run it; returns what happened (the task's return value, for logs and tests)."""
    try:
        answer = client.claim(request_id, worker)
    except NotThisHost as exc:
        # A request for another host must never run here, whatever queue the message was found on.
        log.error("delivery refused by %s: %s", worker, exc.message)
        return "not-this-host"
    except TokenRevoked as exc:
        log.error("%s: %s", REVOKED, exc.message)
        return "token-revoked"
    if not answer.get("claimed"):
        log.info("run request %s not claimed: %s", request_id, answer.get("reason"))
        return answer.get("state") or "not-claimed"
    return run_claimed(client, request_id, answer["claim"], answer["spec"], worker)


class _Finisher:
    """Ends the claimed attempt failed or cancelled (only while this worker holds the claim)."""

    def __init__(self, client, request_id, claim, runlog, timings):
        self.client, self.request_id, self.claim, self.runlog, self.timings = client, request_id, claim, runlog, timings

    def __call__(self, to_state: str, reason: str) -> str:
        self.runlog.add(f"{to_state}: {reason}")
        try:
            self.client.end(self.request_id, self.claim, to_state, reason, self.runlog.text(), self.timings)
        except (ClaimLost, TokenRevoked) as exc:
            log.warning("run request %s: not moved to %s: %s", self.request_id, to_state, exc.message)
            return "lost-claim"
        return to_state


def run_claimed(client: RegistryClient, request_id: str, claim: str, spec: dict, worker: str) -> str:
    runlog = RunLog()
    attempt = spec["attempt"]
    runlog.add(f"claimed by {worker}, attempt {attempt} of {spec['max_attempts']}")
    timings = {"queue_wait_s": spec.get("queue_wait_s")}
    finish = _Finisher(client, request_id, claim, runlog, timings)
    with tempfile.TemporaryDirectory(prefix="benchpack-run-") as tmp, RunWatch(
        client, request_id, claim, spec["time_limit_s"], spec["heartbeat_s"]
    ) as watch:
        workdir = Path(tmp)
        try:
            prepared = prepare_run(spec, workdir)
        except RunRefused as exc:
            return finish(FAILED, str(exc))
        runlog.add(f"endpoint {spec['endpoint']['url']} pinned to {prepared.pin.address}; pack {prepared.pack.id} "
                   f"{prepared.pack.version}; model {spec['model']}")
        pack = prepared.pack
        progress = HttpProgress(request_id, attempt, watch, runlog, pack.defaults.repetitions, pack.defaults.warmup)
        started = time.monotonic()
        outcome, interrupted = None, False
        watch.arm(True)
        try:
            outcome = run_pack(pack, prepared.options, progress, adapter=prepared.adapter,
                               probe_client=prepared.probe_client)
            interrupted = outcome.interrupted
        except RunInterrupted:
            interrupted = True
        except BenchpackError as exc:
            watch.arm(False)
            return finish(FAILED, "the runner refused the run: " + "; ".join(exc.lines()))
        finally:
            watch.arm(False)
            prepared.probe_client.close()
            close = getattr(prepared.adapter, "close", None)
            if close:
                close()
        timings["run_s"] = round(time.monotonic() - started, 3)
        progress.flush()
        if interrupted:
            return _interrupted(finish, watch.stop_reason, progress)
        rows = outcome.rows
        _report_hardware(watch, prepared.options.out)
        if not rows or not any(row.get("ok") for row in rows):
            first_error = next((row.get("error") for row in rows if row.get("error")), "no rows were written")
            return finish(FAILED, f"every execution failed ({len(rows)} rows, none ok): {first_error}; "
                                  "nothing submitted")
        if outcome.aborted:
            return finish(FAILED, f"the run stopped early: {outcome.aborted}; nothing submitted")
        started = time.monotonic()
        try:
            bundled = bundle_result(prepared.options.out, workdir)
        except BenchpackError as exc:
            return finish(FAILED, "the result did not bundle: " + "; ".join(exc.lines()))
        timings["bundle_s"] = round(time.monotonic() - started, 3)
        runlog.add(f"bundle {bundled.name}: {len(bundled.data)} bytes, sha256 {bundled.sha256[:12]}")
        if len(bundled.data) > spec["max_bundle_bytes"]:
            return finish(FAILED, f"the bundle is {len(bundled.data)} bytes, over SUBMISSION_MAX_BYTES "
                                  f"({spec['max_bundle_bytes']}); nothing submitted")
        started = time.monotonic()
        try:
            answer = client.finish(request_id, claim, bundled.name, bundled.data, runlog.text(),
                                   timings, len(rows))
        except (ClaimLost, TokenRevoked) as exc:
            log.warning("run request %s: nothing submitted: %s", request_id, exc.message)
            return CANCELLED if "cancelled" in exc.message else "lost-claim"
        except RegistryError as exc:
            return finish(FAILED, f"the registry did not take the bundle ({exc}); nothing submitted")
        log.info("run request %s: submission %s filed in %.3f s", request_id, answer.get("submission"),
                 time.monotonic() - started)
        return FINISHED


def _interrupted(finish: _Finisher, reason: str | None, progress: HttpProgress) -> str:
    kept = f"{progress.rows} rows kept, never published"
    if reason == "cancelled":
        return finish(CANCELLED, f"cancelled after {progress.done} of {progress.total} executions; {kept}")
    if reason and reason.startswith("time limit"):
        return finish(FAILED, f"{reason} after {progress.done} of {progress.total} executions; {kept}; "
                              "nothing submitted")
    if reason in (LOST, REVOKED):
        log.warning("run request %s: %s", finish.request_id, reason)
        return "lost-claim" if reason == LOST else "token-revoked"
    return finish(FAILED, f"interrupted ({reason or 'SIGINT'}) after {progress.done} executions; {kept}")


def _report_hardware(watch: RunWatch, result_dir: Path) -> None:
    try:
        hardware = json.loads((result_dir / "hardware.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    watch.call(lambda: watch.client.hardware(watch.request_id, watch.claim, hardware))
