"""A run imported from another tool (`benchpack import`, docs/interop.md) says so: `imported_from` holds
"imported from TOOL VERSION" on the run and on its leaderboard rows. Runs published before this change take
it from their run-metadata.json `imported.label` (the bundle check `imported` accepted that section only in a
bundle whose manifest `source` carried the same label), and the boards are rebuilt when any did."""

from django.db import migrations, models


def forwards(apps, schema_editor):
    from registry_site.catalogue.leaderboard import rebuild_all

    run_model, case_model, entry_model = (apps.get_model("registry_site", name)
                                          for name in ("PublishedRun", "PublishedCase", "LeaderboardEntry"))
    changed = 0
    for run in run_model.objects.filter(pack_id__startswith="imported-").only("id", "run_metadata").iterator():
        imported = (run.run_metadata or {}).get("imported") if isinstance(run.run_metadata, dict) else None
        label = imported.get("label") if isinstance(imported, dict) else None
        if isinstance(label, str) and label.startswith("imported from "):
            run_model.objects.filter(pk=run.pk).update(imported_from=label[:128])
            changed += 1
    if changed:
        rebuild_all(models=(run_model, case_model, entry_model))


class Migration(migrations.Migration):

    dependencies = [
        ('registry_site', '0008_pack_workload_base_cases'),
    ]

    operations = [
        migrations.AddField(
            model_name='leaderboardentry',
            name='imported_from',
            field=models.CharField(blank=True, default='', max_length=128),
        ),
        migrations.AddField(
            model_name='publishedrun',
            name='imported_from',
            field=models.CharField(blank=True, db_index=True, default='', max_length=128),
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
