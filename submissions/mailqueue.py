"""Email from the worker, never from the request (an outbox in the database).

`QueuedEmailBackend` is Django's EMAIL_BACKEND in every mode but the unit
tests: `send_mail`, allauth's verification mail and our own notices only
write a `QueuedEmail` row, inside whatever transaction the caller is in (so a
state change and its email commit together, or not at all), then ask a
worker to deliver once that commits. `deliver_pending` is the worker's side:
it claims each row with a conditional UPDATE (two workers never send one
message twice at the same moment), sends it with EMAIL_DELIVERY_BACKEND, and
marks it sent; a failure (SMTP down) leaves it for the next run — the beat
schedule runs one every 30 s — until EMAIL_MAX_DELIVERY_ATTEMPTS.
Delivery is at-least-once: a worker killed between sending and marking sends
that one message again after the claim expires.

A row holds the message as JSON (`message_to_json`): subject, body, addresses,
headers, alternatives and attachments (bytes as base64) — data, never code
(a pickle in the database would run whatever a row holds when it is loaded).
"""

from __future__ import annotations

import base64
import json
import logging
from datetime import timedelta

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.core.mail.backends.base import BaseEmailBackend
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

log = logging.getLogger(__name__)

CLAIM_TIMEOUT = timedelta(minutes=5)


class QueuedEmailBackend(BaseEmailBackend):
    def send_messages(self, email_messages):
        from submissions.models import QueuedEmail

        rows = [
            QueuedEmail(
                message=message_to_json(message).encode(),
                recipients=", ".join(message.recipients())[:10_000],
                subject=str(message.subject)[:998],
            )
            for message in email_messages
        ]
        if not rows:
            return 0
        QueuedEmail.objects.bulk_create(rows)
        transaction.on_commit(kick_delivery, robust=True)
        return len(rows)


def _attachment(item) -> dict:
    if not isinstance(item, (tuple, list)) or len(item) != 3:  # a MIMEBase part: kept as its bytes
        return {"mime": base64.b64encode(item.as_bytes()).decode()}
    filename, content, mimetype = item
    if isinstance(content, str):
        return {"filename": filename, "text": content, "mimetype": mimetype}
    return {"filename": filename, "base64": base64.b64encode(content).decode(), "mimetype": mimetype}


def message_to_json(message) -> str:
    """An EmailMessage (or EmailMultiAlternatives) as JSON: everything `send()` uses, nothing executable."""
    return json.dumps({
        "subject": str(message.subject), "body": str(message.body), "from_email": message.from_email,
        "to": list(message.to), "cc": list(message.cc), "bcc": list(message.bcc),
        "reply_to": list(message.reply_to), "headers": dict(message.extra_headers or {}),
        "alternatives": [[str(content), mimetype] for content, mimetype in getattr(message, "alternatives", [])],
        "attachments": [_attachment(item) for item in message.attachments],
        "content_subtype": message.content_subtype,
    })


def message_from_json(text: str) -> EmailMultiAlternatives:
    from email import message_from_bytes

    data = json.loads(text)
    message = EmailMultiAlternatives(
        subject=data["subject"], body=data["body"], from_email=data["from_email"], to=data["to"], cc=data["cc"],
        bcc=data["bcc"], reply_to=data["reply_to"], headers=data["headers"],
        alternatives=[tuple(a) for a in data["alternatives"]])
    message.content_subtype = data.get("content_subtype", "plain")
    for item in data["attachments"]:
        if "mime" in item:
            message.attach(message_from_bytes(base64.b64decode(item["mime"])))
        elif "text" in item:
            message.attach(item["filename"], item["text"], item["mimetype"])
        else:
            message.attach(item["filename"], base64.b64decode(item["base64"]), item["mimetype"])
    return message


def kick_delivery() -> None:
    """Ask a worker to deliver now; if the broker is down the beat schedule does it later."""
    from registry_site.task_names import DELIVER_QUEUED_EMAIL, task

    try:
        task(DELIVER_QUEUED_EMAIL).delay()
    except Exception as exc:  # noqa: BLE001 - the rows are safe in the database
        # One line, no traceback: during a broker outage every queued email says this.
        log.warning("could not queue email delivery; the periodic run will send it (%s: %s)", type(exc).__name__, exc)


def deliver_pending(limit: int = 100) -> int:
    """Send up to `limit` queued messages; returns how many were sent."""
    from submissions.models import QueuedEmail

    now = timezone.now()
    ready = (
        QueuedEmail.objects.filter(sent_at__isnull=True, attempts__lt=settings.EMAIL_MAX_DELIVERY_ATTEMPTS)
        .filter(Q(claimed_at__isnull=True) | Q(claimed_at__lt=now - CLAIM_TIMEOUT))
        .values_list("pk", flat=True)[:limit]
    )
    sent = 0
    connection = None
    try:
        for pk in list(ready):
            claimed = QueuedEmail.objects.filter(pk=pk, sent_at__isnull=True).filter(
                Q(claimed_at__isnull=True) | Q(claimed_at__lt=now - CLAIM_TIMEOUT)
            ).update(claimed_at=timezone.now())
            if claimed != 1:
                continue  # another worker has it
            row = QueuedEmail.objects.get(pk=pk)
            message = message_from_json(bytes(row.message).decode())
            try:
                if connection is None:
                    connection = get_connection(settings.EMAIL_DELIVERY_BACKEND, fail_silently=False)
                message.connection = connection
                message.send()
            except Exception as exc:  # noqa: BLE001 - SMTP down, refused, timed out: try again later
                QueuedEmail.objects.filter(pk=pk).update(
                    claimed_at=None, attempts=row.attempts + 1, last_error=f"{type(exc).__name__}: {exc}"[:255]
                )
                log.warning("email %s not delivered (attempt %d): %s", pk, row.attempts + 1, exc)
                break  # the server is probably down: the next run tries again
            QueuedEmail.objects.filter(pk=pk).update(sent_at=timezone.now(), attempts=row.attempts + 1, last_error="")
            sent += 1
    finally:
        if connection is not None:
            try:
                connection.close()
            except Exception:  # noqa: BLE001
                pass
    return sent
