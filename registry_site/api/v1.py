"""`/api/v1/runs/`: approved results only, read-only."""

from __future__ import annotations

from django.db.models import Count
from django.shortcuts import get_object_or_404
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from registry_site.models import PublishedCase, PublishedRun


class CaseSerializer(serializers.ModelSerializer):
    class Meta:
        model = PublishedCase
        fields = ["case", "fingerprint", "fingerprint_fields", "rows", "ok_rows", "passed_rows", "wall_s",
                  "ttft_s", "tpot_s", "decode_tps", "total_tps", "prompt_tokens", "cached_prompt_tokens"]


class RunSerializer(serializers.ModelSerializer):
    cases = CaseSerializer(many=True, read_only=True)

    class Meta:
        model = PublishedRun
        fields = ["id", "label", "pack_id", "pack_version", "adapter", "model", "runtime", "hardware_class",
                  "provenance", "is_demo", "row_count", "ok_count", "published_at", "cases"]


class RunSummarySerializer(RunSerializer):
    """The list's shape: a run's cases are on its detail URL (a run may have thousands)."""

    case_count = serializers.IntegerField(read_only=True)

    class Meta(RunSerializer.Meta):
        fields = [f for f in RunSerializer.Meta.fields if f != "cases"] + ["case_count"]


class RunList(APIView):
    def get(self, request):
        runs = PublishedRun.objects.public().annotate(case_count=Count("cases"))[:200]
        return Response(RunSummarySerializer(runs, many=True).data)


class RunDetail(APIView):
    def get(self, request, pk):
        run = get_object_or_404(PublishedRun.objects.public().prefetch_related("cases"), pk=pk)
        return Response(RunSerializer(run).data)
