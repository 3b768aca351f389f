"""A run's pack workload is now its base cases only (benchpack.registry.fingerprint.pack_workload_key,
issue 32 item 3): a run that skipped depths its server cannot hold ranks on the pack's main board.
Every run's key is recomputed from its stored case workloads, and the boards are rebuilt."""

from django.db import migrations


def forwards(apps, schema_editor):
    from benchpack.registry.fingerprint import Key, pack_workload_key
    from registry_site.catalogue.leaderboard import rebuild_all

    run_model, case_model, entry_model = (apps.get_model("registry_site", name)
                                          for name in ("PublishedRun", "PublishedCase", "LeaderboardEntry"))
    if not run_model.objects.exists():
        return
    changed = 0
    for run_id, old in run_model.objects.values_list("id", "pack_workload_key").iterator(chunk_size=500):
        # workload_fields is the case key's to_dict(): its inputs are under "fields"
        keys = [Key("workload", digest, (stored or {}).get("fields") or {}) for digest, stored in
                case_model.objects.filter(run_id=run_id).exclude(workload_key="")
                .values_list("workload_key", "workload_fields")]
        new = pack_workload_key(keys).digest if keys else ""
        if new != old:
            run_model.objects.filter(pk=run_id).update(pack_workload_key=new)
            changed += 1
    if changed:
        rebuild_all(models=(run_model, case_model, entry_model))


class Migration(migrations.Migration):

    dependencies = [
        ('registry_site', '0007_entry_plausibility'),
    ]

    operations = [
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
