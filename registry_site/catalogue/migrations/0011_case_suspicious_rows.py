"""A case's suspicious repo-task answers (issue 31 item 3): ok rows whose `repo_task.status` is
`suspicious`, counted apart from wrong answers (they are failed in passed_rows too). Default 0: a run
published before this reads as having none (its rows stay in PublishedRow.raw; republishing would count them)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('registry_site', '0010_agent_session_figures'),
    ]

    operations = [
        migrations.AddField(
            model_name='publishedcase',
            name='suspicious_rows',
            field=models.PositiveIntegerField(default=0),
        ),
    ]
