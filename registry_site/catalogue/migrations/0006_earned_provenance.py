"""Published provenance is earned, not claimed: the bundle's word moves to
`claimed_provenance`, and every published run's provenance is re-derived from
what the registry knows (uploader, runner host and who queued it, the
reproduction judge). Runs measured against the scripted endpoint become demo
data. Says how many runs changed; leaderboard rows are rebuilt when any did.
"""

from django.conf import settings
from django.db import migrations, models
from django.db.models import Q

from benchpack.results.provenance import INDEPENDENTLY_REPRODUCED, earned_provenance, is_scripted


def _operator_ids(apps) -> set:
    user = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    permission = apps.get_model("auth", "Permission").objects.filter(
        codename="review_submission", content_type__app_label="submissions").first()
    who = Q(is_superuser=True)
    if permission is not None:
        who |= Q(groups__permissions=permission) | Q(user_permissions=permission)
    return set(user.objects.filter(who, is_active=True).values_list("pk", flat=True))


def forwards(apps, schema_editor):
    run_model = apps.get_model("registry_site", "PublishedRun")
    request_model = apps.get_model("submissions", "RunRequest")
    reproduction_model = apps.get_model("submissions", "Reproduction")
    if not run_model.objects.exists():
        return
    operators = _operator_ids(apps)
    requests = {r.submission_id: r for r in request_model.objects.filter(submission__isnull=False)
                .select_related("host")}
    matched = set(reproduction_model.objects.filter(independent=True, verdict="reproduced")
                  .values_list("reproduction_id", flat=True))
    total = changed = demo = 0
    for run in run_model.objects.select_related("submission").iterator():
        total += 1
        request = requests.get(run.submission_id)
        if run.pk in matched:
            earned, basis = INDEPENDENTLY_REPRODUCED, "matched on another host by the reproduction judge"
        elif request is None:
            by_operator = run.submission.submitter_id in operators
            earned = earned_provenance(uploaded_by_operator=by_operator)
            basis = "uploaded by an operator" if by_operator else "uploaded; what the bundle says is not verified"
        else:
            earned = earned_provenance(uploaded_by_operator=False, runner_host=request.host.name,
                                       queued_by_operator=request.requested_by_id in operators,
                                       host_run_by_operator=request.host.owner_id in operators)
            who = "queued by its owner" if request.requested_by_id == request.host.owner_id else "queued by another user"
            basis = f"runner host {request.host.name}, {who}"[:255]
        scripted = is_scripted(run.run_metadata)
        if earned != run.provenance or (scripted and not run.is_demo):
            changed += 1
        demo += scripted and not run.is_demo
        run_model.objects.filter(pk=run.pk).update(
            provenance=earned, claimed_provenance=run.submission.provenance or "", provenance_basis=basis,
            is_demo=run.is_demo or scripted)
    print(f"\n  earned provenance: {changed} of {total} published runs changed "
          f"({demo} measured against the scripted endpoint, now demo data)")
    if changed:
        from registry_site.catalogue.leaderboard import rebuild_all

        rebuild_all(models=(run_model, apps.get_model("registry_site", "PublishedCase"),
                            apps.get_model("registry_site", "LeaderboardEntry")))


class Migration(migrations.Migration):
    dependencies = [
        ("registry_site", "0005_decode_rate_and_plausibility"),  # its rebuild reads the plausibility columns
        ("submissions", "0003_runner_hosts_and_requests"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]

    operations = [
        migrations.AddField(model_name="publishedrun", name="claimed_provenance",
                            field=models.CharField(blank=True, default="", max_length=32)),
        migrations.AddField(model_name="publishedrun", name="provenance_basis",
                            field=models.CharField(blank=True, default="", max_length=255)),
        migrations.AlterField(model_name="publishedrun", name="provenance",
                              field=models.CharField(db_index=True, max_length=32)),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
