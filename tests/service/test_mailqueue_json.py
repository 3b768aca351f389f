"""The outbox stores messages as JSON (never pickled) and sends them back whole."""

from __future__ import annotations

import json

import pytest
from django.core import mail
from django.core.mail import EmailMultiAlternatives
from django.test import override_settings

from submissions.mailqueue import QueuedEmailBackend, deliver_pending, message_from_json, message_to_json
from submissions.models import QueuedEmail


def _message() -> EmailMultiAlternatives:
    message = EmailMultiAlternatives("Subject ✓", "plain body", "from@example.org", ["a@example.org"],
                                     cc=["c@example.org"], bcc=["b@example.org"], reply_to=["r@example.org"],
                                     headers={"X-Benchpack": "1"})
    message.attach_alternative("<p>html body</p>", "text/html")
    message.attach("notes.txt", "text attachment", "text/plain")
    message.attach("blob.bin", bytes(range(256)), "application/octet-stream")
    return message


def test_a_message_round_trips_through_json():
    original = _message()
    copy = message_from_json(message_to_json(original))
    for name in ("subject", "body", "from_email", "to", "cc", "bcc", "reply_to", "extra_headers", "alternatives"):
        assert getattr(copy, name) == getattr(original, name), name
    assert copy.attachments[0][:2] == ("notes.txt", "text attachment")
    assert copy.attachments[1][1] == bytes(range(256))


@pytest.mark.django_db(transaction=True)
@override_settings(EMAIL_DELIVERY_BACKEND="django.core.mail.backends.locmem.EmailBackend")
def test_the_outbox_row_is_json_and_is_delivered():
    assert QueuedEmailBackend().send_messages([_message()]) == 1
    row = QueuedEmail.objects.get()
    stored = bytes(row.message)
    assert stored[:1] != b"\x80", "the row is a pickle"
    assert json.loads(stored)["subject"] == "Subject ✓"
    if row.sent_at is None:  # a worker was not run eagerly on commit: deliver as the beat schedule does
        assert deliver_pending() == 1
    assert QueuedEmail.objects.get().sent_at is not None
    assert mail.outbox[-1].subject == "Subject ✓" and mail.outbox[0].alternatives[0][1] == "text/html"
