"""Queued e-mails are stored as JSON, no longer pickled (submissions.mailqueue).

Rows still waiting were pickled by this project's own earlier code: they are
converted once here; after this migration nothing in the service unpickles.
"""

import pickle

from django.db import migrations


def pickled_to_json(apps, schema_editor):
    from submissions.mailqueue import message_to_json

    QueuedEmail = apps.get_model("submissions", "QueuedEmail")
    for row in QueuedEmail.objects.filter(sent_at__isnull=True).iterator():
        raw = bytes(row.message)
        if raw[:1] != b"\x80":  # not a pickle (already JSON)
            continue
        message = pickle.loads(raw)  # noqa: S301 - rows written by this project's previous release
        QueuedEmail.objects.filter(pk=row.pk).update(message=message_to_json(message).encode())


class Migration(migrations.Migration):
    dependencies = [("submissions", "0004_runner_host_tokens")]

    operations = [
        migrations.RunPython(pickled_to_json, migrations.RunPython.noop),
    ]
