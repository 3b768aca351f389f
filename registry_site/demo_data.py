"""Demo data for a newcomer: bundled packs run against the built-in scripted
endpoint, pushed through the real submit → validate → approve pipeline and
labelled as demo data.

Nothing here pretends to be a measurement of a real model: the submissions
carry `is_demo=True` and the run metadata says `scripted reference endpoint`.
"""

from __future__ import annotations

import contextlib
import json
import queue
import sys
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from registry_site import demo_physics as physics

DEMO_SUBMITTER = "demo-submitter@benchpack.local"
# The written reason the demo records for its scripted runs, which no plausibility bound checks
# (unchecked is not plausible: approval needs a reason; submissions.review).
DEMO_REASON = "demo data from the scripted reference endpoint: its speeds are made up, not measured"

# What the scripted endpoint answers for each pack, so scoring has something real to check.
# The local runner host's endpoint (submissions/runqueue/demo.py) answers DEMO_REPLY with
# DEMO_TIMING too, so its runs can reproduce the seeded ones.
DEMO_REPLY = ("The capital of France is Paris. This scripted reply comes from the built-in reference endpoint, "
              "which sends one word every few milliseconds so that timings can be shown without a model.")
# Slow enough that a busy machine's jitter stays inside the reproduction tolerance.
DEMO_TIMING = {"ttft_s": 0.2, "itl_s": 0.005}
SCRIPTED_REPLIES = {
    "smoke-chat": [DEMO_REPLY],
    "runtime-sweep": [DEMO_REPLY],
    "tool-json": [],
    "desktop-django-wrap": [
        "DDS_WRAP_PLAN\nInspect: read settings and urls.\nElectron shell: main.js starts Django.\n"
        "Django runtime: bundled Python runs manage.py.\nPackaging: electron-builder.\nVerification: smoke test the window."
    ],
}


def ensure_demo_submitter():
    return ensure_submitter(DEMO_SUBMITTER)


def ensure_submitter(email: str):
    """A login-less user that owns generated data (demo runs, the synthetic catalogue)."""
    from allauth.account.models import EmailAddress
    from django.contrib.auth import get_user_model

    User = get_user_model()
    user, created = User.objects.get_or_create(username=email, defaults={"email": email})
    if created:
        user.set_unusable_password()
        user.save()
    EmailAddress.objects.get_or_create(user=user, email=email, defaults={"verified": True, "primary": True})
    return user


# Demo machines and models: registry_site.demo_physics, a model of the hardware that gives every
# system speeds a real machine could reach (decode bound by bandwidth, prefill by compute, both
# falling with depth; only combinations that fit in memory). hardware.json is written over the one
# a scripted run probed; the OS line says it is a demo profile. `None`: this machine as probed (the
# runs the local runner host reproduces must be on its hardware class).
DEMO_MACHINES = {key: machine.hardware for key, machine in physics.MACHINES.items()}
DEMO_MODELS = physics.MODELS
RUNTIME = "benchpack-refserver"
BOARD_PACK = "desktop-django-wrap"  # the big board and the timeline
DEMO_NOTE = "Demo data: the built-in scripted reference endpoint, not a real model."
DAY = 86_400
# Seeding's runs spend their time waiting on the scripted endpoint's sleeps (the physics' speeds:
# a 70B model offloaded to RAM decodes a few tokens a second), not on the CPU: one after another they
# took 470 s on two cores, on six endpoints at once about a quarter of that. Each run has an endpoint
# of its own while it runs; the runs of one bundle are submitted together once all have finished.
SEED_PARALLEL_RUNS = 6


@dataclass(frozen=True)
class DemoRun:
    """One scripted run: which pack, what the endpoint pretends to be, how fast it answers."""

    pack_id: str
    model: str = "scripted-demo"
    machine: str | None = None  # a DEMO_MACHINES key; None: this machine
    runtime_version: str = "scripted"
    ttft_s: float = DEMO_TIMING["ttft_s"]
    itl_s: float = DEMO_TIMING["itl_s"]
    replies: tuple = ()
    lanes: tuple = ()
    max_depth: int | None = None
    prefill_s_per_token: float = 0.0
    prefill_s_per_token_pair: float = 0.0
    itl_s_per_context_token: float = 0.0
    quantization: str = "none"
    # A coding run whose tasks the demo's scripted agent solves through the measuring proxy (its rows
    # carry an agent_session): registry_site/demo_agent/scripted_agent.py, the endpoint's prompt cache on.
    agent: bool = False
    days_ago: float = 0.0  # published this long before seeding ends (a timeline spread over weeks)

    @property
    def slug(self) -> str:
        return "-".join(part for part in (self.model.replace("/", "-"), self.machine or "this-machine",
                                          self.runtime_version) if part)

    def refserver(self) -> dict:
        return {"responses": list(self.replies), "ttft_s": self.ttft_s, "itl_s": self.itl_s,
                "prefill_s_per_token": self.prefill_s_per_token,
                "prefill_s_per_token_pair": self.prefill_s_per_token_pair,
                "itl_s_per_context_token": self.itl_s_per_context_token,
                # an agent re-sends its conversation every turn; a real server serves the shared start from
                # its prompt cache (llama-server keeps one per slot): the demo's cache-hit share is one a
                # server would show
                "prompt_cache": self.agent,
                # the runner's own request per case, which under an agent only opens the case: one token
                "default_tokens": 1 if self.agent else 16}


def _timed(pack_id: str, model: str, machine: str, slowdown: float = 1.0, **fields) -> DemoRun:
    """A run of `model` on a demo machine at the speeds demo_physics gives it."""
    fields.setdefault("replies", tuple(SCRIPTED_REPLIES.get(pack_id, [])))
    speed = physics.speed(model, machine, fields.get("runtime_version", ""), slowdown)
    timing = speed.refserver()
    return DemoRun(pack_id, model, machine, quantization=physics.QUANTIZATION, **timing, **fields)


def demo_plan() -> list[tuple[str, list[DemoRun]]]:
    """The demo's submissions, in order: (what it shows, the runs of its one bundle).

    - smoke-chat: the upload the local runner host re-measures (this machine, DEMO_TIMING; the operator's
      own upload, so the re-measurement is not independent);
    - desktop-django-wrap: every demo model on every demo machine and this one (54 systems: more than
      a board's page);
    - runtime-sweep with its depth and concurrency lanes on four machines (curves for both lanes);
    - tool-json on four machines;
    - python-regression-fix (a coding pack): four systems, three runs each, solved by the demo's
      scripted coding agent through the measuring proxy, the known-good patch in some of them (pass
      rate beside the agent's own speed over its turns, with a dominated system off the Pareto front), and one
      answer the pack's verifier marks suspicious (the fix plus a line reading the interpreter's flags), so the
      boards, the run page and the review page show the mark (issue 31 item 3);
    - a timeline: one system on desktop-django-wrap, six runs on one runtime version and three on a slower one.
    """
    smoke = [DemoRun("smoke-chat", replies=(DEMO_REPLY,))]
    # desktop-django-wrap streams (smoke-chat does not), so its board ranks by decode rate.
    wrap = [_timed(BOARD_PACK, model, machine) for model, machine in physics.fitting()]
    # The depth curves: systems whose prompt evaluation at depth 0 takes tens of milliseconds or more,
    # so the request's own overhead (a millisecond or two) does not hide that prefill falls with depth
    # (on a 10k tok/s GPU a 53-token prompt is 5 ms: its measured rate is mostly overhead). Depths
    # stop where a deeper point would take minutes on that machine.
    sweep = [_timed("runtime-sweep", model, machine, max_depth=depth, lanes=lanes)
             for model, machine, depth, lanes in (
                 ("demo/scripted-8b", "studio", 8192, ("base", "depth", "concurrency")),
                 ("demo/scripted-8b", "mini", 2048, ("base", "depth", "concurrency")),
                 ("demo/scripted-1b", "laptop", 1024, ("base", "depth")))]
    tools = [_timed("tool-json", "demo/scripted-8b", machine) for machine in ("laptop", "mini", "desktop", "server")]
    good, bad = _coding_replies()
    sly = suspicious_fix(good)
    coding = []
    # (model, machine, replies of its three runs): fast and sloppy, slow and right, and a dominated one;
    # SUSPICIOUS_SYSTEM's one failure is a suspicious answer, not a missing diff (failed either way).
    for model, machine, replies in (
            ("demo/scripted-coder-32b", "workstation", (good, good, good)),
            ("demo/scripted-coder-7b", "desktop", (good, good, sly)),
            ("demo/scripted-1b", "server", (good, bad, bad)),
            ("demo/scripted-coder-7b", "gaming-laptop", (good, bad, bad))):
        coding += [_timed("python-regression-fix", model, machine, replies=_agent_script(reply), agent=True)
                   for reply in replies]
    # A timeline over six weeks: six runs of one version, one every four days, then a slower build
    # (decode halved), which the timeline's change detection flags. Halved, not a third down: the step is
    # flagged only when all three slower runs fall below the slowest of the six before, and short scripted
    # replies measured six at a time on a busy machine once read a fast run a third slow (the walk missed it).
    timeline = [_timed(BOARD_PACK, TIMELINE_MODEL, TIMELINE_MACHINE, runtime_version="scripted-2",
                       days_ago=42 - 4 * n) for n in range(6)]
    timeline += [_timed(BOARD_PACK, TIMELINE_MODEL, TIMELINE_MACHINE, 2.0, runtime_version="scripted-3",
                        days_ago=18 - 4 * n) for n in range(3)]
    # Six runs of one version before the slower one: the change detection needs five earlier runs
    # (registry_site.catalogue.timelines.MIN_PRIOR) and three that confirm the step (CONFIRM).
    # Three submissions, published one after another: the timeline has three moments, not one.
    timelines = [(f"a timeline, part {n + 1} of 3", timeline[3 * n:3 * n + 3]) for n in range(3)]
    return [("smoke-chat: the upload the local runner host re-measures", smoke),
            (f"{BOARD_PACK}: {len(wrap)} systems", wrap), ("runtime-sweep with depth and concurrency lanes", sweep),
            ("tool-json", tools), ("coding: python-regression-fix", coding), *timelines]


TIMELINE_MODEL, TIMELINE_MACHINE = "demo/scripted-7b", "mini"


def _coding_replies() -> tuple[str, str]:
    """The pack's own audit fixtures: the known-good fix, and a reply without a diff."""
    from benchpack.packs.loader import resolve_pack_path

    audit = resolve_pack_path("python-regression-fix") / "audit" / "fix-prerelease-order"
    return (audit / "known-good.md").read_text(encoding="utf-8"), (audit / "missing-diff.md").read_text(encoding="utf-8")


# The demo system whose coding runs hold the suspicious answer (demo_plan).
SUSPICIOUS_SYSTEM = ("demo/scripted-coder-7b", "desktop")
SUSPICIOUS_LINE = "            _isolated = sys.flags.isolated"  # what the verifier's screen flags (interpreter flags)


def suspicious_fix(good: str) -> str:
    """The known-good fix plus one added line that reads the interpreter's flags: it still fixes the bug, and
    no fix of the task needs that line, so the pack's verifier screens the answer `suspicious` — failed, counted
    apart on the boards (issue 31 item 3; docs/audits.md "Every signal considered")."""
    sly = good.replace("@@ -57,7 +57,12 @@", "@@ -57,7 +57,13 @@").replace(
        "+        if self.prerelease:\n", f"+        if self.prerelease:\n+{SUSPICIOUS_LINE}\n", 1)
    if sly.count("sys.flags") != 1 or "@@ -57,7 +57,13 @@" not in sly:
        raise ValueError("python-regression-fix audit/fix-prerelease-order/known-good.md: the hunk header "
                         "'@@ -57,7 +57,12 @@' or the line '+        if self.prerelease:' changed; "
                         "demo_data.suspicious_fix cannot add its line")
    return sly


# The scripted agent's own answers, short as an agent's thinking turns are; its last turn gets the fix.
AGENT_TURNS = ("Reading versionkit/version.py first.", "Prerelease identifiers compare as strings.")


def _agent_script(final_reply: str) -> tuple[dict, ...]:
    """The scripted endpoint's answers for one agent run, picked by the agent's step markers (latest
    first: a conversation holds every earlier marker). The runner's own request per case matches none
    and gets the endpoint's short default answer: under an agent, the agent's turns are the work."""
    from registry_site.demo_agent.scripted_agent import STEP_MARKERS

    replies = (*AGENT_TURNS, final_reply)
    return tuple({"match": marker, "content": reply} for marker, reply in reversed(list(zip(STEP_MARKERS, replies))))


AGENT_SCRIPT = Path(__file__).resolve().parent / "demo_agent" / "scripted_agent.py"


def _run_one(run: DemoRun, ref, out: Path) -> None:
    from benchpack.packs.loader import load_pack, resolve_pack_path
    from benchpack.run.runner import RunOptions, run_pack

    pack = load_pack(resolve_pack_path(run.pack_id))
    ref.configure(**run.refserver())
    metadata = {"runtime": {"name": RUNTIME, "version": run.runtime_version},
                "model": {"id": run.model, "quantization": run.quantization}, "notes": DEMO_NOTE}
    options = dict(adapter="openai-chat", model=run.model, endpoint=ref.openai_url, out=out,
                   host_label="demo-host", run_metadata=metadata, probe_server=False)
    if run.lanes:
        options.update(lanes=tuple(run.lanes), max_depth=run.max_depth)
    # every repo-task case solved by the scripted agent, measured by the proxy (docs/agents.md); -I -S: the
    # agent needs the standard library only, and its start is part of the time to solution
    if run.agent:
        options.update(agent="demo-scripted-agent", external_agent_argv=[sys.executable, "-I", "-S", str(AGENT_SCRIPT)],
                       agent_timeout_s=120)
    outcome = run_pack(pack, RunOptions(**options))
    if getattr(outcome, "interrupted", False):
        # run_pack keeps its rows on Ctrl-C and returns; seeding must stop here, not start the next run
        raise KeyboardInterrupt
    if run.machine is not None:
        (out / "hardware.json").write_text(json.dumps(DEMO_MACHINES[run.machine], indent=2) + "\n", encoding="utf-8")


def seed(server_url: str, operator, say: Callable[[str], None] = print, seed_port: int = 0) -> int:
    """Run, bundle, submit, wait, approve; then flag one run. Returns how many runs were published.

    `seed_port`: the port of the scripted endpoint the seeding runs call (0: a free one)."""
    from accounts.models import ApiToken
    from benchpack.bundles.create import create_bundle
    from benchpack.bundles.submit import submit_bundle
    from benchpack.refserver.server import RefServer
    from submissions.models import Submission
    from submissions.review import approve_with_reason

    submitter = ensure_demo_submitter()
    if Submission.objects.filter(submitter=submitter).exists():
        say("demo data already present; skipping seeding")
        return 0
    _, token = ApiToken.issue(submitter, "demo seeding")
    # A bundle of runs on this machine is the operator's own upload: the person who starts the demo owns this
    # machine and its local runner host, so the runner host re-measuring it later is the same owner on the
    # same machine — a re-run, never an independent reproduction (issue 32 item 5; reproduction.independence).
    _, operator_token = ApiToken.issue(operator, "demo seeding: this machine")
    published = 0
    # The scripted endpoints are entered after the pool, so they stop first on the way out: each is a child in
    # its own session (RefServer), out of reach of the terminal's Ctrl-C, and a run in flight streams from one
    # until its scripted sleeps end — the pool's exit waited for that (3 s at a Ctrl-C as the big board starts,
    # docs/testing.md). Stopped first, they end those runs at once; nothing of the bundle is submitted.
    with (tempfile.TemporaryDirectory(prefix="benchpack-demo-") as tmp,
          ThreadPoolExecutor(SEED_PARALLEL_RUNS, thread_name_prefix="demo-seed") as pool,
          contextlib.ExitStack() as servers):
        idle: queue.SimpleQueue = queue.SimpleQueue()
        for n in range(SEED_PARALLEL_RUNS):
            idle.put(servers.enter_context(RefServer(port=seed_port if n == 0 else 0)))

        plan = [(what, runs, [Path(tmp) / f"{number}" / f"{index:02d}-{run.slug}"
                              for index, run in enumerate(runs, start=1)])
                for number, (what, runs) in enumerate(demo_plan(), start=1)]
        started: set[str] = set()
        started_lock = threading.Lock()

        def run_on_an_idle_server(what: str, count: int, run: DemoRun, out: Path) -> None:
            ref = idle.get()  # one run per scripted endpoint at a time: each run configures its own speeds
            try:
                with started_lock:
                    first = what not in started
                    started.add(what)
                if first:
                    say(f"demo: {what}: {count} scripted run{'s' if count != 1 else ''}")
                _run_one(run, ref, out)
            finally:
                idle.put(ref)

        # Every submission's runs are queued at once, not one submission's after another's: a submission's
        # runs are independent of the others', and waiting for each submission's slowest run left endpoints
        # idle (the runtime sweep's three runs, 83 s the longest, held three of the six while the other
        # three waited). Runs with lanes go first (each case runs once per depth and level: the longest);
        # the submissions still go to the registry in the plan's order (a timeline's parts are its moments).
        queued = sorted(((what, len(runs), run, out) for what, runs, outs in plan for run, out in zip(runs, outs)),
                        key=lambda item: -len(item[2].lanes))
        futures = {item[3]: pool.submit(run_on_an_idle_server, *item) for item in queued}
        for number, (what, runs, outs) in enumerate(plan, start=1):
            try:
                for out in outs:
                    futures[out].result()
            except BaseException:
                # The runs not started yet never start; those in flight end when the endpoints stop (above).
                for future in futures.values():
                    future.cancel()
                raise
            bundle = create_bundle(outs, Path(tmp) / f"bundle-{number}", "operator-curated")
            this_machine = all(run.machine is None for run in runs)
            result = submit_bundle(bundle, server_url, operator_token if this_machine else token, timeout_s=300,
                                   on_state=lambda state, w=what: say(f"demo: {w}: submission {_state_words(state)}"))
            submission_id = result.submission["id"]
            Submission.objects.filter(pk=submission_id).update(is_demo=True)
            if result.submission["state"] != "quarantined":
                say(f"demo: {what} ended {result.submission['state']}; not approving")
                continue
            if approve_with_reason(submission_id, operator, DEMO_REASON):
                published += len(runs)
                _backdate(submission_id, runs)
    _spread_dates()
    flag_one(operator, say)
    return published


def _state_words(state: str) -> str:
    """A submission state as the demo console says it: quarantine is the normal review step, not a fault."""
    if state == "quarantined":
        return "quarantined — validated and waiting for an operator's review (the normal step); the demo approves it"
    return state


def _backdate(submission_id, runs: list[DemoRun]) -> None:
    """Publish the runs that say so some days back: a timeline spans weeks, as real ones do, not
    the ninety seconds seeding takes. Bundle runs publish in label order (`NN-slug`)."""
    import datetime as dt

    from django.utils import timezone

    from registry_site.catalogue.models import PublishedRun

    published = list(PublishedRun.objects.filter(submission_id=submission_id).order_by("label", "pk"))
    now = timezone.now()
    for row, run in zip(published, runs):
        if run.days_ago:
            PublishedRun.objects.filter(pk=row.pk).update(published_at=now - dt.timedelta(days=run.days_ago))


def _spread_dates() -> None:
    """The leaderboard rows' first/last published dates follow the backdated runs."""
    from registry_site.catalogue import leaderboard

    leaderboard.rebuild_all()  # quietly: the console stays a screenful (test_e2e_demo_walk)


FLAG_NOTE = ("Demo flag: an operator marks a result they doubt; the run stays public with this note beside it. "
             "(This one is the slowest system on its board, flagged to show what a flag looks like.)")


FLAGGED_MACHINE = "desktop"  # 70B on a 24 GB GPU, two thirds of it offloaded to system RAM: the slowest


def flag_one(operator, say: Callable[[str], None] = print) -> None:
    from registry_site.catalogue import transitions
    from registry_site.catalogue.models import PublishedRun

    from benchpack.registry.fingerprint import hardware_class

    run = (PublishedRun.objects.public().filter(is_demo=True, pack_id=BOARD_PACK, model="demo/scripted-70b",
                                                hardware_class=hardware_class(DEMO_MACHINES[FLAGGED_MACHINE]))
           .order_by("pk").first())
    if run is not None and transitions.flag(run.pk, operator, FLAG_NOTE):
        say(f"demo: run #{run.pk} flagged")


def leaderboard_summary(server_url: str) -> str:
    """One line for the banner: where the leaderboards are and how many boards the data fills."""
    from registry_site.catalogue import leaderboard as lb

    boards = lb.boards()
    packs = sorted({b["pack_id"] for b in boards})
    if not boards:
        return f"leaderboards: {server_url}/leaderboards/ (empty: no approved results yet)"
    return (f"leaderboards: {server_url}/leaderboards/ ({len(boards)} boards over {len(packs)} packs: "
            f"{', '.join(packs)}; demo rows are labelled and leave a ranking once real results exist)")
