"""`/api/v1/timelines/`: one metric of one case for a fixed model + hardware class, across runtime
versions and dates, with the change detection of `registry_site.catalogue.timelines` (shared with the page)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from registry_site.api.base import StrictQueryMixin
from registry_site.catalogue import timelines as shared
from registry_site.models import PublishedCase, PublishedRun

REQUIRED = ("model", "hardware_class", "pack", "case")


class VerdictSerializer(serializers.Serializer):
    verdict = serializers.ChoiceField(choices=[shared.REGRESSION, shared.IMPROVEMENT, shared.NO_CHANGE,
                                               shared.NO_VERDICT])
    prior = serializers.IntegerField(help_text="earlier runs in the lookback window")
    baseline_median = serializers.FloatField(allow_null=True)
    baseline_min = serializers.FloatField(allow_null=True)
    baseline_max = serializers.FloatField(allow_null=True)
    change = serializers.FloatField(allow_null=True, help_text="value / baseline median - 1")
    reason = serializers.CharField()


class PointSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    published_at = serializers.DateTimeField()
    runtime_version = serializers.CharField()
    value = serializers.FloatField(allow_null=True)
    is_demo = serializers.BooleanField()
    change = VerdictSerializer(allow_null=True, help_text="null when the point has no value")


class VersionSerializer(serializers.Serializer):
    runtime_version = serializers.CharField()
    runs = serializers.IntegerField()
    median = serializers.FloatField()
    min = serializers.FloatField()
    max = serializers.FloatField()
    first_published = serializers.DateTimeField()


class RuleSerializer(serializers.Serializer):
    min_prior = serializers.IntegerField()
    lookback = serializers.IntegerField()
    min_effect = serializers.FloatField()


class TimelineSerializer(serializers.Serializer):
    model = serializers.CharField()
    hardware_class = serializers.CharField()
    pack_id = serializers.CharField()
    case = serializers.CharField()
    workload = serializers.CharField(allow_null=True)
    metric = serializers.CharField()
    unit = serializers.CharField()
    higher_is_better = serializers.BooleanField()
    rule = RuleSerializer()
    points = PointSerializer(many=True)
    versions = VersionSerializer(many=True)


def _require_known(params) -> dict:
    missing = [name for name in REQUIRED if not params.get(name)]
    if missing:
        raise ValidationError({name: ["required"] for name in missing})
    public = PublishedRun.objects.public()
    for name, column in (("model", "model"), ("hardware_class", "hardware_class"), ("pack", "pack_id")):
        if not public.filter(**{column: params[name]}).exists():
            raise ValidationError({name: [f"no public run has {name} {params[name]!r}"]})
    if not PublishedCase.objects.filter(run__in=public.filter(pack_id=params["pack"]), case=params["case"]).exists():
        raise ValidationError({"case": [f"pack {params['pack']!r} has no public case {params['case']!r}"]})
    metric = params.get("metric") or "decode_tps"
    if metric not in shared.METRICS:
        raise ValidationError({"metric": [f"{metric!r} is not one of {', '.join(shared.METRICS)}"]})
    return {"model": params["model"], "hardware_class": params["hardware_class"], "pack_id": params["pack"],
            "case": params["case"], "metric": metric, "workload_key": params.get("workload") or None}


class Timeline(StrictQueryMixin, APIView):
    extra_query_parameters = frozenset({*REQUIRED, "metric", "workload"})

    @extend_schema(
        parameters=[*[OpenApiParameter(name, str, required=True) for name in REQUIRED],
                    OpenApiParameter("metric", str, enum=list(shared.METRICS), description="default decode_tps"),
                    OpenApiParameter("workload", str, description="workload key; default: every workload of the case")],
        responses=TimelineSerializer)
    def get(self, request):
        asked = _require_known(request.query_params)
        points = shared.points_for(**asked)
        verdicts = {v.run_id: v.to_dict() for v in shared.detect_changes(points, asked["metric"])}
        label, unit, higher = shared.METRICS[asked["metric"]]
        body = {
            "model": asked["model"], "hardware_class": asked["hardware_class"], "pack_id": asked["pack_id"],
            "case": asked["case"], "workload": asked["workload_key"], "metric": asked["metric"], "unit": unit,
            "higher_is_better": higher,
            "rule": {"min_prior": shared.MIN_PRIOR, "lookback": shared.LOOKBACK, "min_effect": shared.MIN_EFFECT},
            "points": [{"run": p.run_id, "published_at": p.published_at, "runtime_version": p.runtime_version,
                        "value": p.value, "is_demo": p.is_demo, "change": verdicts.get(p.run_id)} for p in points],
            "versions": [vars(v) for v in shared.by_runtime_version(points)],
        }
        return Response(TimelineSerializer(body).data)
