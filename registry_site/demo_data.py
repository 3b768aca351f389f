"""Demo data for a newcomer: bundled packs run against the built-in scripted
endpoint, pushed through the real submit → validate → approve pipeline and
labelled as demo data.

Nothing here pretends to be a measurement of a real model: the submissions
carry `is_demo=True` and the run metadata says `scripted reference endpoint`.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable

DEMO_SUBMITTER = "demo-submitter@benchpack.local"

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
DEMO_PACKS = ["smoke-chat", "tool-json", "desktop-django-wrap", "runtime-sweep"]


def _replies_for(pack) -> list:
    return SCRIPTED_REPLIES.get(pack.id, [])


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


def seed(server_url: str, operator, say: Callable[[str], None] = print) -> int:
    """Run, bundle, submit, wait, approve. Returns how many runs were published."""
    from accounts.models import ApiToken
    from benchpack.bundles.create import create_bundle
    from benchpack.packs.loader import load_pack, resolve_pack_path
    from benchpack.refserver.server import RefServer
    from benchpack.run.runner import RunOptions, run_pack
    from benchpack.bundles.submit import submit_bundle
    from submissions.models import Submission
    from submissions.review import approve

    submitter = ensure_demo_submitter()
    if Submission.objects.filter(submitter=submitter).exists():
        say("demo data already present; skipping seeding")
        return 0
    _, token = ApiToken.issue(submitter, "demo seeding")
    published = 0
    with tempfile.TemporaryDirectory(prefix="benchpack-demo-") as tmp:
        for pack_id in DEMO_PACKS:
            pack = load_pack(resolve_pack_path(pack_id))
            say(f"demo: running {pack.id} {pack.version} against the scripted endpoint")
            with RefServer(responses=_replies_for(pack), **DEMO_TIMING) as ref:
                out = Path(tmp) / f"{pack.id}-scripted"
                metadata = {
                    "runtime": {"name": "benchpack-refserver", "version": "scripted"},
                    "model": {"quantization": "none"},
                    "notes": "Demo data: the built-in scripted reference endpoint, not a real model.",
                }
                run_pack(pack, RunOptions(adapter="openai-chat", model="scripted-demo", endpoint=ref.openai_url,
                                          out=out, host_label="demo-host", run_metadata=metadata))
            bundle = create_bundle([out], Path(tmp) / f"{pack.id}-bundle", "operator-curated")
            result = submit_bundle(bundle, server_url, token, timeout_s=120,
                                   on_state=lambda state, p=pack.id: say(f"demo: {p} submission {state}"))
            submission_id = result.submission["id"]
            Submission.objects.filter(pk=submission_id).update(is_demo=True)
            if result.submission["state"] != "quarantined":
                say(f"demo: {pack.id} ended {result.submission['state']}; not approving")
                continue
            if approve(submission_id, operator):
                published += 1
                say(f"demo: {pack.id} approved and public")
    return published


def leaderboard_summary(server_url: str) -> str:
    """One line for the banner: where the leaderboards are and how many boards the data fills."""
    from registry_site.catalogue import leaderboard as lb

    boards = lb.boards()
    packs = sorted({b["pack_id"] for b in boards})
    if not boards:
        return f"leaderboards: {server_url}/leaderboards/ (empty: no approved results yet)"
    return (f"leaderboards: {server_url}/leaderboards/ ({len(boards)} boards over {len(packs)} packs: "
            f"{', '.join(packs)}; demo rows are labelled and leave a ranking once real results exist)")
