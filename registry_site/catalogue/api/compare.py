"""`/api/v1/compare/?runs=3,5[,…]`: 2–4 public runs side by side, as the compare page shows them.

The numbers and the reasons come from `registry_site.catalogue.compare`
(shared with the page and, through it, `benchpack compare`). The first run is
the baseline of every ratio; cases are paged (`page`), CASES_PER_PAGE a page.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from registry_site.catalogue.api.base import ConditionalGetMixin, StrictQueryMixin
from registry_site.catalogue import compare as shared


class RunColumnSerializer(serializers.Serializer):
    run_id = serializers.IntegerField()
    label = serializers.CharField()
    pack = serializers.CharField()
    model = serializers.CharField()
    runtime = serializers.CharField()
    hardware_class = serializers.CharField()
    provenance = serializers.CharField()
    is_demo = serializers.BooleanField()
    from_rows = serializers.BooleanField(help_text="false: compared from stored medians (no noise band)")


class CellSerializer(serializers.Serializer):
    present = serializers.BooleanField()
    ok = serializers.IntegerField()
    n = serializers.IntegerField()
    passed = serializers.IntegerField(allow_null=True)
    scored = serializers.IntegerField()
    medians = serializers.DictField(child=serializers.FloatField(allow_null=True))
    bands = serializers.JSONField()
    ratios = serializers.JSONField(help_text='metric -> {"ratio", "low", "high", "verdict"} against the first run')


class CaseLineSerializer(serializers.Serializer):
    case = serializers.CharField()
    parity = serializers.CharField(help_text="D-013 prefill parity; prefill figures compare only when 'comparable'")
    parity_reason = serializers.CharField()
    cells = CellSerializer(many=True)


class ComparisonSerializer(serializers.Serializer):
    runs = RunColumnSerializer(many=True)
    cases = CaseLineSerializer(many=True)
    comparable = serializers.BooleanField()
    reasons = serializers.ListField(child=serializers.CharField(), help_text="why the runs are not comparable")
    warnings = serializers.ListField(child=serializers.DictField())
    case_count = serializers.IntegerField()
    page = serializers.IntegerField()
    pages = serializers.IntegerField()


RUN_IDS_PATTERN = r"^ *[1-9][0-9]{0,17} *(, *[1-9][0-9]{0,17} *){1,3}$"


class Compare(ConditionalGetMixin, StrictQueryMixin, APIView):
    """2–4 public runs side by side: per-case medians, ratios to the first run, prefill parity, and why
    they are not comparable when they are not."""

    extra_query_parameters = frozenset({"runs", "page"})
    repeatable_query_parameters = frozenset({"runs"})  # ?runs=3&runs=5 as well as ?runs=3,5

    @extend_schema(
        parameters=[OpenApiParameter("runs", str, required=True, description="2–4 different run ids, comma-separated",
                                     pattern=RUN_IDS_PATTERN),
                    OpenApiParameter("page", int, description="page of cases")],
        responses=ComparisonSerializer)
    def get(self, request):
        try:
            ids = shared.parse_run_ids(request.query_params.getlist("runs"))
            page = shared.parse_page(request.query_params.get("page"))
        except shared.CompareRequestError as error:
            raise ValidationError({error.parameter: [error.reason]}) from None
        try:
            comparison = shared.compare_published(ids, page=page)
        except shared.CompareRequestError as error:
            if error.parameter == "page":  # a well-formed page past the last: 404, as for every list (docs/api.md)
                raise NotFound(f"page {page} is past the last page: {error.reason}") from None
            raise ValidationError({error.parameter: [error.reason]}) from None
        return Response(ComparisonSerializer(comparison).data)
