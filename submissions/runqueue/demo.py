"""The embedded run queue of `manage.py demo`: a local runner host whose allowlist
holds the built-in scripted endpoint, its worker, and demo data made through it
(one run request end to end, one reproduction of a seeded upload).

Everything is labelled demo data; the scripted endpoint is not a model.
"""

from __future__ import annotations

import sys
import time
from typing import Callable

from django.utils import timezone

from submissions.runqueue import states
from submissions.runqueue.models import RunnerHost, RunRequest

LOCAL_HOST = "local"
ENDPOINT = "refserver"
MODEL = "scripted-demo"
PACKS = ("smoke-chat", "runtime-sweep")


def ensure_local_host(operator, endpoint_url: str) -> tuple[RunnerHost, str]:
    """Register (or refresh) the local host; the scripted endpoint's port changes per start.

    Returns the host and a fresh host token (the previous start's token ends):
    the local worker reaches the registry only over HTTP with it, as a host on
    another machine does.
    """
    from submissions.runqueue import tokens
    from submissions.runqueue.hosts import allow_endpoint, allow_pack, endpoint_fields, pack_entry_fields

    host, _ = RunnerHost.objects.get_or_create(
        name=LOCAL_HOST, defaults={"owner": operator, "is_demo": True,
                                   "description": "this machine, running the built-in scripted endpoint"})
    allow_endpoint(host, ENDPOINT, **endpoint_fields(endpoint_url, "openai-chat", [f"{MODEL}=none"],
                                                     "benchpack-refserver", "scripted", ["127.0.0.1"]))
    for pack in PACKS:
        allow_pack(host, **pack_entry_fields(pack))
    if not host.hardware_class:
        # The demo's operator starts the local host on this very machine: approving this machine's
        # class is the operator's act (manage.py runner_host approve for hosts elsewhere).
        from benchpack.registry.fingerprint import hardware_class
        from benchpack.run.hardware import collect_hardware
        from submissions.runqueue.hosts import approve_hardware

        approve_hardware(host, hardware_class(collect_hardware()) or "demo-unknown-hardware")
    return host, tokens.issue(host)


def worker_argv(host: str = LOCAL_HOST) -> list[str]:
    """How a runner worker starts: its own queue, one run at a time (deploy/systemd/benchpack-runner@.service)."""
    return [sys.executable, "-m", "celery", "-A", "submissions.runqueue.runner.app", "worker", "-Q", f"runs.{host}",
            "--concurrency", "1", "--prefetch-multiplier", "1", "--loglevel=WARNING", "-n", f"{host}-runner@%h",
            "--without-gossip", "--without-mingle", "--without-heartbeat"]


# What a runner host's environment never holds: the registry's database and its secret key.
REGISTRY_ONLY = ("DATABASE_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE", "CACHE_URL", "EMAIL_HOST_PASSWORD",
                 "RUNNER_BROKER_URL")


def worker_env(environ: dict, *, host: str, token: str, registry_url: str, broker_url: str,
               broker_dir: str | None = None, heartbeat_s: float = 15.0) -> dict:
    """A runner worker's whole environment: the caller's minus every registry secret, plus the
    host's two secrets (token, broker login) and the registry's address."""
    env = {key: value for key, value in environ.items() if key not in REGISTRY_ONLY}
    env.update(BENCHPACK_RUNNER_HOST=host, BENCHPACK_HOST_TOKEN=token, BENCHPACK_REGISTRY_URL=registry_url,
               CELERY_BROKER_URL=broker_url, BENCHPACK_HEARTBEAT_S=str(heartbeat_s))
    if broker_dir:
        env["BENCHPACK_BROKER_DIR"] = broker_dir
    return env


def _wait(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.3)
    raise TimeoutError(f"demo: {what} did not happen within {timeout_s:.0f} s")


def _through_review(request: RunRequest, operator, say: Callable[[str], None], timeout_s: float):
    """Wait for the worker and the validation worker, then approve like an operator would."""
    from registry_site.catalogue.models import PublishedRun
    from submissions.review import approve_with_reason

    seen = None
    def settled():
        nonlocal seen
        current = RunRequest.objects.select_related("submission").get(pk=request.pk)
        if current.state != seen:
            seen = current.state
            say(f"demo: run request {request.pack} on {LOCAL_HOST}: {current.state}")
        if current.is_final and current.state != states.FINISHED:
            raise RuntimeError(f"demo: run request {request.pk} {current.state}: {current.failure_reason}")
        return current if current.submission and current.submission.state in ("quarantined", "invalid") else None

    done = _wait(settled, timeout_s, f"run request {request.pk}")
    say(f"demo: its submission is {done.submission.state}")
    if done.submission.state != "quarantined" or not approve_with_reason(
            done.submission.pk, operator, "demo run on this machine, approved by the demo console"):
        return None
    say("demo: approved and public")
    return PublishedRun.objects.filter(submission=done.submission).first()


def seed_runs(operator, say: Callable[[str], None] = print, timeout_s: float = 300) -> int:
    """One run request end to end, then a re-measurement of the seeded smoke-chat upload (the operator's own
    upload on this machine, so the registry records it as not independent)."""
    from registry_site.catalogue.models import PublishedRun
    from submissions.runqueue.reproduction import matching_targets, reproduce
    from submissions.runqueue.services import create_run_request

    if RunRequest.objects.filter(is_demo=True).exists():
        say("demo: run queue data already present; skipping")
        return 0
    host = RunnerHost.objects.get(name=LOCAL_HOST)
    started = timezone.now()
    request = create_run_request(operator, host=host.name, endpoint=ENDPOINT, model=MODEL, pack="smoke-chat",
                                 is_demo=True)
    made = 1 if _through_review(request, operator, say, timeout_s) else 0

    # The seeded smoke-chat upload made on this machine with the local host's own script
    # (registry_site.demo_data: model scripted-demo, DEMO_TIMING), so the reproduction can match.
    original = (PublishedRun.objects.filter(is_demo=True, pack_id="smoke-chat", model=MODEL,
                                            submission__run_request__isnull=True).order_by("pk").first())
    if original is None:
        say("demo: no seeded smoke-chat run to reproduce")
        return made
    targets, misses = matching_targets(original, operator)
    if not targets:
        say("demo: cannot reproduce run #%d here: %s" % (original.pk, "; ".join(misses)))
        return made
    request = reproduce(original, operator, targets[0].value)
    say(f"demo: re-measuring run #{original.pk} ({original.pack_id}, host {(original.hardware or {}).get('hostname')}) "
        f"on {LOCAL_HOST}")
    reproduction = _through_review(request, operator, say, timeout_s)
    if reproduction is not None:
        say(reproduction_words(original.pk, reproduction.reproduces, (timezone.now() - started).total_seconds()))
        made += 1
    return made


def reproduction_words(original_pk: int, evidence, seconds: float) -> str:
    """The console's line for a re-measurement: "independent" only when the registry judged it so; a re-run
    by the same owner or on the same host is said to be one, with the registry's reasons (issue 32 item 5)."""
    verdict = evidence.get_verdict_display().lower()
    if evidence.independent:
        return (f"demo: run #{original_pk} {verdict} by run #{evidence.reproduction_id} (independent: another owner "
                f"on another host) in {seconds:.0f} s")
    return (f"demo: run #{original_pk} re-measured by run #{evidence.reproduction_id}: {verdict}, but not an "
            f"independent reproduction ({'; '.join(evidence.reasons)}) — that needs another owner on another host; "
            f"{seconds:.0f} s")
