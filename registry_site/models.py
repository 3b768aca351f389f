"""The public catalogue: approved results only.

Rows here are written once, by `registry_site.publishing.publish`, inside the
transaction that approves a submission; nothing edits them afterwards
(a correction is a new submission).
"""

from __future__ import annotations

from django.db import models

from registry_site.querysets import PublishedRunQuerySet


class PublishedRun(models.Model):
    submission = models.ForeignKey("submissions.Submission", on_delete=models.PROTECT, related_name="published_runs")
    label = models.CharField(max_length=255)
    pack_id = models.CharField(max_length=128, db_index=True)
    pack_version = models.CharField(max_length=64)
    adapter = models.CharField(max_length=64)
    model = models.CharField(max_length=255, db_index=True)
    runtime = models.CharField(max_length=255, blank=True)
    hardware_class = models.CharField(max_length=255, blank=True, db_index=True)
    provenance = models.CharField(max_length=32)
    is_demo = models.BooleanField(default=False)
    hardware = models.JSONField(null=True, blank=True)
    run_metadata = models.JSONField(null=True, blank=True)
    row_count = models.PositiveIntegerField()
    ok_count = models.PositiveIntegerField()
    published_at = models.DateTimeField(auto_now_add=True)

    objects = PublishedRunQuerySet.as_manager()

    class Meta:
        ordering = ["-published_at", "pk"]
        constraints = [
            models.UniqueConstraint(fields=["submission", "label"], name="unique_published_run_per_submission")
        ]

    def __str__(self) -> str:
        return f"{self.pack_id} {self.pack_version} · {self.model} ({self.label})"


class PublishedCase(models.Model):
    """Per-case medians of one published run, with its comparability fingerprint."""

    run = models.ForeignKey(PublishedRun, on_delete=models.CASCADE, related_name="cases")
    case = models.CharField(max_length=128)
    fingerprint = models.CharField(max_length=64, db_index=True)
    fingerprint_fields = models.JSONField()
    rows = models.PositiveIntegerField()
    ok_rows = models.PositiveIntegerField()
    passed_rows = models.PositiveIntegerField(null=True)
    wall_s = models.FloatField(null=True)
    ttft_s = models.FloatField(null=True)
    tpot_s = models.FloatField(null=True)
    decode_tps = models.FloatField(null=True)
    total_tps = models.FloatField(null=True)
    prompt_tokens = models.FloatField(null=True)
    cached_prompt_tokens = models.FloatField(null=True)

    class Meta:
        ordering = ["run", "pk"]


class PublishedRow(models.Model):
    run = models.ForeignKey(PublishedRun, on_delete=models.CASCADE, related_name="rows")
    case = models.CharField(max_length=128)
    repetition = models.PositiveIntegerField(null=True)
    ok = models.BooleanField()
    raw = models.JSONField()

    class Meta:
        ordering = ["run", "pk"]
