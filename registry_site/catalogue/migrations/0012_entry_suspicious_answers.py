"""Leaderboard rows count their suspicious answers apart (issue 31 item 3): `suspicious_answers`, the scored
answers whose repo-task verdict is `suspicious` (failed in `correct`, like a wrong answer). Runs published
before 0011 get their cases' `suspicious_rows` recounted from their stored rows (they read 0), then every
row is rebuilt from the public runs."""

from django.db import migrations, models


def forwards(apps, schema_editor):
    from registry_site.catalogue.backfill import backfill_suspicious
    from registry_site.catalogue.leaderboard import rebuild_all

    run, case, row, entry = (apps.get_model("registry_site", name)
                             for name in ("PublishedRun", "PublishedCase", "PublishedRow", "LeaderboardEntry"))
    if not run.objects.exists():
        return
    backfill_suspicious(case, row)
    rebuild_all(models=(run, case, entry))


class Migration(migrations.Migration):

    dependencies = [
        ('registry_site', '0011_case_suspicious_rows'),
    ]

    operations = [
        migrations.AddField(
            model_name='leaderboardentry',
            name='suspicious_answers',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
