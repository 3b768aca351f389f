"""Transactional emails to submitters, text + HTML, one function per event."""

from __future__ import annotations

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string
from django.urls import reverse

from submissions import states


def _send(submission, template: str, subject: str, extra: dict | None = None) -> None:
    context = {
        "submission": submission,
        "status_url": settings.SITE_URL.rstrip("/") + reverse("submissions:detail", args=[submission.pk]),
        "site_url": settings.SITE_URL,
        **(extra or {}),
    }
    text = render_to_string(f"submissions/email/{template}.txt", context)
    html = render_to_string(f"submissions/email/{template}.html", context)
    message = EmailMultiAlternatives(
        subject=f"[Benchpack] {subject}",
        body=text,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[submission.submitter.email],
    )
    message.attach_alternative(html, "text/html")
    message.send()


def send_received(submission) -> None:
    _send(submission, "received", f"Submission received: {submission.archive_name}")


def send_validation_outcome(submission) -> None:
    # Quarantined bundles wait silently for review; only failures need the submitter now.
    if submission.state == states.FAILED:
        _send(
            submission,
            "failed",
            f"Submission could not be validated: {submission.archive_name}",
            {"findings": (submission.validation_report or {}).get("findings", [])},
        )
    if submission.state == states.INVALID:
        _send(
            submission,
            "invalid",
            f"Submission failed validation: {submission.archive_name}",
            {"codes": submission.error_codes(), "findings": (submission.validation_report or {}).get("findings", [])},
        )


def send_decision(submission) -> None:
    if submission.state == states.APPROVED:
        _send(submission, "approved", f"Submission approved: {submission.archive_name}")
    elif submission.state == states.REJECTED:
        _send(submission, "rejected", f"Submission rejected: {submission.archive_name}")
