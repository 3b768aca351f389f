"""A published run's public status: withdrawn, unpublished, flagged; and its reproduction badge.

Every change is one conditional UPDATE (`WHERE pk = … AND status = …`) whose
row count says whether this caller made it (the pattern of
submissions.services); only then are the run's leaderboard rows rewritten and
`signals.run_status_changed` sent (the submissions app writes it to the
submission's audit trail), all in one transaction, so no ranking shows a run
that is no longer public.

- withdraw: the submitter takes their published result off the public side
  (a reason is required; it stays in the audit trail, not on the site).
- unpublish: an operator takes a result off the public side (reason kept).
- republish: an operator puts an unpublished run back (not a withdrawn one:
  that was the submitter's decision).
- flag / unflag: an operator attaches a public note; the run stays public.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from accounts.operators import is_operator
from registry_site.catalogue import leaderboard
from registry_site.catalogue.models import PUBLISHED, UNPUBLISHED, WITHDRAWN, PublishedRun
from registry_site.catalogue.signals import run_status_changed

MAX_NOTE_CHARS = 2000


class TransitionRefused(Exception):
    """The caller may not make this change, or the input is not acceptable; the message says which."""


def _text(value: str, what: str) -> str:
    text = (value or "").strip()
    if not text:
        raise TransitionRefused(f"{what} is required")
    if len(text) > MAX_NOTE_CHARS:
        raise TransitionRefused(f"{what} is longer than {MAX_NOTE_CHARS} characters")
    return text


def _event(run: PublishedRun, actor, from_state: str, to_state: str, reason: str) -> None:
    run_status_changed.send(sender=PublishedRun, run=run, actor=actor, from_state=from_state, to_state=to_state,
                            reason=reason)


def _move(run_id: int, from_status: str, to_status: str, actor, reason: str) -> bool:
    with transaction.atomic():
        changed = PublishedRun.objects.filter(pk=run_id, status=from_status).update(
            status=to_status, status_reason=reason, status_changed_at=timezone.now())
        if changed != 1:
            return False
        run = PublishedRun.objects.get(pk=run_id)
        leaderboard.refresh_for_runs([run])
        _event(run, actor, from_status, to_status, reason)
    return True


def withdraw(run_id: int, user, reason: str) -> bool:
    """The submitter withdraws their published run. False: it was not published (any more)."""
    reason = _text(reason, "a reason for the withdrawal")
    run = PublishedRun.objects.select_related("submission").filter(pk=run_id).first()
    if run is None or not user.is_authenticated or run.submission.submitter_id != user.pk:
        raise TransitionRefused("only the submitter of this run may withdraw it")
    return _move(run_id, PUBLISHED, WITHDRAWN, user, reason)


def _require_operator(user) -> None:
    if not is_operator(user):
        raise TransitionRefused("only an operator may do this")


def unpublish(run_id: int, operator, reason: str) -> bool:
    _require_operator(operator)
    return _move(run_id, PUBLISHED, UNPUBLISHED, operator, _text(reason, "a reason for unpublishing"))


def republish(run_id: int, operator, reason: str = "") -> bool:
    _require_operator(operator)
    return _move(run_id, UNPUBLISHED, PUBLISHED, operator, (reason or "").strip())


def flag(run_id: int, operator, note: str) -> bool:
    """Attach (or replace) a public note; the run stays public. False: the run is not published."""
    _require_operator(operator)
    note = _text(note, "a public note")
    with transaction.atomic():
        run = PublishedRun.objects.select_for_update().filter(pk=run_id, status=PUBLISHED).first()
        if run is None or run.flag_note == note:
            return False
        if PublishedRun.objects.filter(pk=run_id, status=PUBLISHED, flag_note=run.flag_note).update(flag_note=note) != 1:
            return False
        _event(run, operator, PUBLISHED, "flagged", note)
        run.flag_note = note
        leaderboard.refresh_for_runs([run])
    return True


def unflag(run_id: int, operator, reason: str = "") -> bool:
    _require_operator(operator)
    with transaction.atomic():
        run = PublishedRun.objects.filter(pk=run_id).exclude(flag_note="").first()
        if run is None or PublishedRun.objects.filter(pk=run_id, flag_note=run.flag_note).update(flag_note="") != 1:
            return False
        _event(run, operator, run.status, "unflagged", (reason or "").strip())
        leaderboard.refresh_for_runs([run])
    return True


# --- reproduction badge -------------------------------------------------------------
# The evidence (Reproduction attempts) belongs to the run queue (submissions.runqueue.reproduction),
# which decides the state and hands it here; the catalogue stores it and rewrites the rankings.


def set_reproduction_state(run: PublishedRun, state: str) -> None:
    """Store the run's badge ("", reproduced, not-reproduced) and rewrite its leaderboard rows if it changed."""
    if PublishedRun.objects.filter(pk=run.pk).exclude(reproduction_state=state).update(reproduction_state=state):
        run.reproduction_state = state
        leaderboard.refresh_for_runs([run])


def record_reproduction(original: PublishedRun, reproduction: PublishedRun, upgraded_provenance: str | None,
                        original_state: str) -> None:
    """A counted verdict was recorded (inside the approval transaction): provenance + badge + entries."""
    if upgraded_provenance:
        # The only way a run earns independently-reproduced (benchpack.results.provenance).
        basis = f"matched run #{original.pk} on another host (reproduction judge)"
        PublishedRun.objects.filter(pk=reproduction.pk).update(provenance=upgraded_provenance, provenance_basis=basis)
        reproduction.provenance, reproduction.provenance_basis = upgraded_provenance, basis
        leaderboard.refresh_for_runs([reproduction])
    set_reproduction_state(original, original_state)
