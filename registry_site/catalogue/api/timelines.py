"""`/api/v1/timelines/`: one metric of one workload for a fixed model + hardware class (optionally
runtime and quantization), across runtime versions and dates, with the change detection of
`registry_site.catalogue.timelines`. Same parameters and same functions as the timeline page."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from registry_site.catalogue.api.base import ConditionalGetMixin, StrictQueryMixin
from registry_site.catalogue.api.pagination import positive_int
from registry_site.catalogue import timelines as shared
from registry_site.catalogue.models import LeaderboardEntry, PublishedRun

REQUIRED = ("workload", "model", "hardware_class")
OPTIONAL = ("runtime", "quantization", "metric", "limit")
# Changes are judged over the whole series; the answer carries its newest points
# (a busy series has thousands: 5,646 points were 1.1 MB and seconds per request).
DEFAULT_POINTS = 500
MAX_POINTS = 5000


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


class SeriesCountSerializer(serializers.Serializer):
    model = serializers.CharField()
    hardware_class = serializers.CharField()
    runtime_name = serializers.CharField()
    quantization = serializers.CharField()
    runs = serializers.IntegerField()


class RuleSerializer(serializers.Serializer):
    min_prior = serializers.IntegerField(help_text="earlier runs needed before a point can be judged")
    lookback = serializers.IntegerField(help_text="at most this many earlier runs form the baseline")
    confirm = serializers.IntegerField(help_text="the step's first run and the next ones, this many in all, must "
                                                 "all lie beyond the baseline's spread")
    min_effect = serializers.FloatField(help_text="and their median must move at least this much (relative)")


class SeriesSerializer(serializers.Serializer):
    model = serializers.CharField()
    hardware_class = serializers.CharField()
    runtime = serializers.CharField(source="runtime_name", help_text='"" = every runtime')
    quantization = serializers.CharField(help_text='"" = every quantization')


class TimelineSerializer(serializers.Serializer):
    workload = serializers.CharField()
    series = SeriesSerializer()
    metric = serializers.CharField()
    unit = serializers.CharField()
    higher_is_better = serializers.BooleanField()
    rule = RuleSerializer()
    points_total = serializers.IntegerField(help_text="runs in the series; `points` holds the newest `limit` of them")
    points = PointSerializer(many=True)
    versions = VersionSerializer(many=True)
    other_series = SeriesCountSerializer(many=True, help_text="other model/hardware series on this workload")


def _series(params) -> tuple[shared.Series, str]:
    try:
        series = shared.Series.from_params(params)
        metric = shared.parse_metric(params.get("metric"))
    except shared.TimelineQueryError as error:
        raise ValidationError({error.param: [error.message]}) from None
    public = PublishedRun.objects.public()
    # Leaderboard rows hold public results only, indexed by workload (a PublishedCase query with
    # run__in=public lists every public run first: 0.3 s at 160k runs).
    if not LeaderboardEntry.objects.public().filter(workload_key=series.workload_key).exists():
        raise ValidationError({"workload": [f"no public result has workload {series.workload_key[:80]!r}"]})
    for name, column, value in (("model", "model", series.model),
                                ("hardware_class", "hardware_class", series.hardware_class),
                                ("runtime", "runtime_name", series.runtime_name),
                                ("quantization", "model_quantization", series.quantization)):
        if value and not public.filter(**{column: value}).exists():
            raise ValidationError({name: [f"no public run has {name} {value!r}"]})
    return series, metric


class Timeline(ConditionalGetMixin, StrictQueryMixin, APIView):
    """One metric of one workload for a model + hardware class over runtime versions and dates; each
    point says whether it is a change, with the evidence."""

    extra_query_parameters = frozenset({*REQUIRED, *OPTIONAL})

    @extend_schema(
        parameters=[OpenApiParameter("workload", str, required=True, description="workload key (see a leaderboard)"),
                    OpenApiParameter("model", str, required=True),
                    OpenApiParameter("hardware_class", str, required=True),
                    OpenApiParameter("runtime", str, description="runtime name; default every runtime"),
                    OpenApiParameter("quantization", str),
                    OpenApiParameter("metric", str, enum=list(shared.METRICS), description="default decode_rate (1/tpot_s)"),
                    OpenApiParameter("limit", int, description=f"newest points returned; default {DEFAULT_POINTS}, "
                                                               f"at most {MAX_POINTS}")],
        responses=TimelineSerializer)
    def get(self, request):
        series, metric = _series(request.query_params)
        limit = positive_int(request, "limit") or DEFAULT_POINTS
        if limit > MAX_POINTS:
            raise ValidationError({"limit": [f"at most {MAX_POINTS}, not {limit}"]})
        points = shared.points_for(series, metric)
        verdicts = {v.run_id: _verdict(v) for v in shared.detect_changes(points, metric)}
        _, unit, higher = shared.METRICS[metric]
        body = TimelineSerializer({
            "workload": series.workload_key, "series": series, "metric": metric, "unit": unit,
            "higher_is_better": higher,
            "rule": {"min_prior": shared.MIN_PRIOR, "lookback": shared.LOOKBACK, "confirm": shared.CONFIRM,
                     "min_effect": shared.MIN_EFFECT},
            "points_total": len(points), "points": [], "versions": [vars(v) for v in shared.by_runtime_version(points)],
            "other_series": shared.series_of(series.workload_key, limit=50),
        }).data
        # A series may have thousands of points: written as plain dicts in PointSerializer's shape
        # (DRF field objects cost ~25 µs a point; test_schema checks the shape against the schema).
        when = serializers.DateTimeField()
        body["points"] = [{"run": p.run_id, "published_at": when.to_representation(p.published_at),
                           "runtime_version": p.runtime_version, "value": p.value, "is_demo": p.is_demo,
                           "change": verdicts.get(p.run_id)} for p in points[-limit:]]
        return Response(body)


VERDICT_FIELDS = tuple(VerdictSerializer().fields)


def _verdict(verdict: shared.Verdict) -> dict:
    return {name: getattr(verdict, name) for name in VERDICT_FIELDS}
