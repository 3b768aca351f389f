"""Leaderboard rows carry their runs' plausibility (issue 30 item 5) and the one pass rate (issue 32
item 1: tasks passed ÷ tasks scored over every run behind the row, where rows held the median of the
runs' own rates). Both are derived figures: every row is rebuilt from the public runs."""

from django.db import migrations, models


def forwards(apps, schema_editor):
    from registry_site.catalogue.leaderboard import rebuild_all

    run, case, entry = (apps.get_model("registry_site", name)
                        for name in ("PublishedRun", "PublishedCase", "LeaderboardEntry"))
    if not run.objects.exists():
        return
    rebuild_all(models=(run, case, entry))


class Migration(migrations.Migration):

    dependencies = [
        ('registry_site', '0006_earned_provenance'),
    ]

    operations = [
        migrations.AddField(
            model_name='leaderboardentry',
            name='plausibility',
            field=models.CharField(default='unchecked', max_length=12),
        ),
        migrations.AddField(
            model_name='leaderboardentry',
            name='plausibility_runs',
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
