"""`/api/v1/runs/`: approved, public results only, read-only."""

from __future__ import annotations

from django.db.models import Count, IntegerField, OuterRef, Subquery
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from registry_site.catalogue import evidence
from registry_site.catalogue.api.base import CatalogueDetailView, CatalogueListView
from registry_site.catalogue.api.filters import KeptFilterSetBackend, RunFilter
from registry_site.catalogue.api.packs import PackSerializer
from registry_site.catalogue.models import PublishedCase, PublishedRun


class CaseSerializer(serializers.ModelSerializer):
    class Meta:
        model = PublishedCase
        fields = ["case", "fingerprint", "fingerprint_fields", "rows", "ok_rows", "passed_rows", "suspicious_rows",
                  "wall_s", "ttft_s", "tpot_s", "decode_rate", "decode_tps", "total_tps", "prompt_tokens", "cached_prompt_tokens"]


class ReproductionEvidenceSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    url = serializers.CharField()
    tolerance = serializers.JSONField()
    cases = serializers.JSONField()


class ReproducesSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    verdict = serializers.CharField()
    independent = serializers.BooleanField()
    reasons = serializers.JSONField()


class ReproductionSerializer(serializers.Serializer):
    state = serializers.CharField(help_text="the reproduction badge's verdict; empty when none was attempted")
    evidence = ReproductionEvidenceSerializer(allow_null=True)
    reproduces = ReproducesSerializer(allow_null=True)
    attempts = serializers.IntegerField()


class RunSummarySerializer(serializers.ModelSerializer):
    """The list's shape: a run's cases and reproduction evidence are on its detail URL (a run may have thousands)."""

    case_count = serializers.IntegerField(read_only=True)
    url = serializers.SerializerMethodField()
    pack = PackSerializer(source="pack_id", read_only=True)

    class Meta:
        model = PublishedRun
        fields = ["id", "url", "label", "pack_id", "pack", "pack_version", "adapter", "model", "runtime", "hardware_class",
                  "provenance", "provenance_basis", "claimed_provenance", "is_demo", "row_count", "ok_count",
                  "case_count", "published_at", "plausibility_status", "plausibility", "imported_from"]
        extra_kwargs = {"imported_from": {"help_text": '"imported from TOOL VERSION" when another tool measured '
                                                       'the run and `benchpack import` made its bundle; "" when '
                                                       'Benchpack measured it'}}

    def get_url(self, obj) -> str:
        return f"/api/v1/runs/{obj.pk}/"


class RunSerializer(RunSummarySerializer):
    cases = CaseSerializer(many=True, read_only=True)
    reproduction = serializers.SerializerMethodField()
    suspicious_answers = serializers.SerializerMethodField(
        help_text="ok rows whose repo-task verdict is `suspicious` (the answer introspected its caller or "
                  "environment): scored as failed in `passed_rows`, counted apart here; 0 for other runs")

    class Meta(RunSummarySerializer.Meta):
        fields = RunSummarySerializer.Meta.fields + ["suspicious_answers", "reproduction", "cases"]

    def get_suspicious_answers(self, obj) -> int:
        return sum(case.suspicious_rows for case in obj.cases.all())  # the prefetched cases: no query

    @extend_schema_field(ReproductionSerializer)
    def get_reproduction(self, obj):
        return evidence.reproduction_summary(obj)  # the run queue owns this evidence and provides it


def _with_case_count(runs):
    # A correlated count, evaluated for the rows of one page only (a JOIN + GROUP BY
    # would count every case of every run before the page is cut).
    per_run = (PublishedCase.objects.filter(run=OuterRef("pk")).order_by().values("run")
               .annotate(n=Count("pk")).values("n"))
    return runs.annotate(case_count=Subquery(per_run, output_field=IntegerField()))


class RunList(CatalogueListView):
    """Published runs, newest first; filter by pack, model, runtime, hardware class, provenance and date."""

    serializer_class = RunSummarySerializer
    filterset_class = RunFilter
    filter_backends = [KeptFilterSetBackend]
    filterset = None  # the request's, once KeptFilterSetBackend has validated it

    def precounted_total(self) -> int | None:
        """The list's `count` from the precomputed counts (issue 34 item 4: COUNT over the public runs is linear,
        2–6 s at 10M case rows cold), or None where a filter is not one the count table keys on (dates)."""
        filterset = self.filterset
        if filterset is None or not filterset.is_bound or filterset.errors:
            return None
        return filterset.precounted_total()

    def get_queryset(self):
        # Newest first by publication order: ids rise with each publication (published_at is set on
        # insert), and the primary key is indexed where published_at is not (0.2 s vs 2 ms at 160k runs).
        return _with_case_count(PublishedRun.objects.public()).order_by("-pk")


class RunDetail(CatalogueDetailView):
    """One published run with its per-case medians and its reproduction evidence."""

    serializer_class = RunSerializer

    noun = "run"

    def get_queryset(self):
        return _with_case_count(PublishedRun.objects.public()).prefetch_related("cases")
