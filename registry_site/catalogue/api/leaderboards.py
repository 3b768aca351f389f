"""`/api/v1/leaderboards/`: the index of boards, and one board per pack (whole pack) or pack + case.

Rankings come from `registry_site.catalogue.leaderboard` (the pages call the
same functions): the same workload choice, filters, order and demo rule.
This module only turns its answers and its `QueryError`s into HTTP.

A board answers the list envelope plus a `board` object (the workload shown,
the other workloads of this pack/case, the order), and `?format=csv` answers
every filtered row (up to CSV_MAX_ROWS) as CSV with the same columns.
"""

from __future__ import annotations

import csv
import io

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.response import Response

from registry_site.catalogue.api.base import CatalogueListView, CataloguePagedView
from registry_site.catalogue.api.packs import PackSerializer
from registry_site.catalogue import leaderboard as lb
from registry_site.catalogue.models import METRICS, LeaderboardEntry

CSV_MAX_ROWS = 10_000
# A filter value must name something on some public board (else 400, like the other lists).
KNOWN_VALUE_COLUMNS = {"model": "model", "model_family": "model_family", "quantization": "model_quantization",
                       "runtime": "runtime_name", "runtime_version": "runtime_version",
                       "hardware_class": "hardware_class"}
ENTRY_FIELDS = [
    "pack_id", "pack_version", "case", "workload_key", "system_key", "adapter", "cache_state",
    "model", "model_family", "model_quantization", "runtime_name", "runtime_version", "hardware_class", "accelerator",
    *[name for metric in METRICS for name in (metric, f"{metric}_min", f"{metric}_max")],
    "run_count", "rows", "answered", "scored", "correct", "suspicious_answers", "plausibility", "plausibility_runs", "provenance", "reproduced", "flagged", "flag_note",
    "is_demo", "workload_complete", "system_complete", "first_published_at", "last_published_at", "imported_from",
]


class CaseFiguresSerializer(serializers.Serializer):
    """One base case of a whole-pack row: the system's row on that case's board (leaderboard.case_figures)."""

    case = serializers.CharField()
    workload_key = serializers.CharField(help_text="the case board's workload (its `?workload=`)")
    ttft_s = serializers.FloatField(allow_null=True, help_text="median TTFT over the runs behind the case row (s)")
    decode_rate = serializers.FloatField(allow_null=True, help_text="median decode, 1/TPOT, over those runs (tok/s)")
    runs = serializers.IntegerField(help_text="runs behind the case row; more than the whole-pack row's `run_count` "
                                              "when some of the system's runs ran only some of the cases")


class EntryListSerializer(serializers.ListSerializer):
    """Looks up every whole-pack row's per-case figures in one query before serializing the rows."""

    def to_representation(self, data):
        entries = list(data.all() if hasattr(data, "all") else data)
        self.context.setdefault("case_figures", {}).update(lb.case_figures(entries))
        return super().to_representation(entries)


class EntrySerializer(serializers.ModelSerializer):
    rank = serializers.SerializerMethodField(help_text="1 = best by the board's order, counted across pages; "
                                                       "null outside a board")
    run = serializers.IntegerField(source="representative_run_id", help_text="the latest run behind the row")
    run_url = serializers.SerializerMethodField()
    pass_interval = serializers.ListField(
        child=serializers.FloatField(), allow_null=True, read_only=True,
        help_text="95 % Wilson interval [low, high] of pass_rate (tasks passed ÷ tasks scored over every run "
                  "behind the row; pass_rate_min/max are the runs' own lowest and highest)")
    suspicious_answers = serializers.IntegerField(
        read_only=True, help_text="of `scored`, answers whose repo-task verdict is `suspicious` (they introspected "
                                  "their caller or environment): never passed, so not in `correct`, and counted "
                                  "apart here; 0 when none")
    plausibility = serializers.CharField(help_text="plausible if every run behind the row was judged plausible, "
                                                   "implausible if any was, else unchecked; boards rank "
                                                   "plausible rows first")
    plausibility_runs = serializers.DictField(child=serializers.IntegerField(), allow_null=True,
                                              help_text="runs behind the row per plausibility verdict")
    imported_from = serializers.CharField(help_text='"imported from TOOL VERSION" when the runs behind the row were '
                                                    'measured by another tool and imported (`benchpack import`); '
                                                    '"" when Benchpack measured them')

    cases = serializers.SerializerMethodField(
        help_text="a whole-pack row's figures per base case, by case name: the system's row on each case's board "
                  "(the whole-pack medians pool unlike prompts, issue 32 item 4); null on a case board's row, and "
                  f"when the pack has more than {lb.PER_CASE_MAX} base cases (each case's board has them)")

    class Meta:
        model = LeaderboardEntry
        fields = ["rank", *ENTRY_FIELDS, "pass_interval", "cases", "run", "run_url"]
        list_serializer_class = EntryListSerializer

    @extend_schema_field(CaseFiguresSerializer(many=True, allow_null=True))
    def get_cases(self, obj) -> list[dict] | None:
        if obj.case:
            return None
        found = self.context.get("case_figures") or {}
        figures = found[obj.pk] if obj.pk in found else lb.case_figures([obj]).get(obj.pk)
        return None if figures is None else CaseFiguresSerializer(figures, many=True).data

    def get_rank(self, obj) -> int | None:
        if "first_rank" not in self.context:
            return None
        return self.context["first_rank"] + self.context["position"][id(obj)]

    def get_run_url(self, obj) -> str:
        return f"/api/v1/runs/{obj.representative_run_id}/"


class WorkloadSerializer(serializers.Serializer):
    key = serializers.CharField()
    pack_version = serializers.CharField()
    case = serializers.CharField()
    inputs = serializers.JSONField(source="fields", help_text="the workload key's inputs, which are unknown, where each came from")
    complete = serializers.BooleanField()
    systems = serializers.IntegerField()
    demo_only = serializers.BooleanField()


class BoardSerializer(serializers.Serializer):
    pack_id = serializers.CharField()
    pack = PackSerializer(source="pack_id", read_only=True)
    case = serializers.CharField(help_text='"" is the whole-pack board')
    order = serializers.CharField()
    order_label = serializers.CharField(help_text="the ranked figure's label, unit and formula (benchpack.results.metrics)")
    figures_over = serializers.CharField(
        help_text="what each run's speeds on this board aggregate, in words: on a whole-pack board the median over "
                  "the pack's base cases (named; unlike prompts pooled, lane levels left out), on a case board that "
                  "case's rows")
    workload = WorkloadSerializer(allow_null=True)
    workloads = WorkloadSerializer(many=True)


class BoardPageSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    board = BoardSerializer()
    results = EntrySerializer(many=True)


class BoardIndexSerializer(serializers.Serializer):
    pack_id = serializers.CharField()
    pack = PackSerializer(source="pack_id", read_only=True)
    case = serializers.CharField(help_text='"" is the whole-pack board')
    workloads = serializers.IntegerField()
    systems = serializers.IntegerField()
    imported_from = serializers.CharField(help_text='"imported from TOOL VERSION" for a board of runs another tool '
                                                    'measured; "" for a board of Benchpack-measured runs')
    url = serializers.SerializerMethodField()

    def get_url(self, obj) -> str:
        return f"/api/v1/leaderboards/{obj['pack_id']}/" + (f"{obj['case']}/" if obj["case"] else "")


# One CSV line per row: the per-case list is not a column (each case board's own CSV has those rows).
CSV_FIELDS = [name for name in EntrySerializer.Meta.fields if name != "cases"]


class LeaderboardCSVRenderer(BaseRenderer):
    media_type = "text/csv"
    format = "csv"
    charset = "utf-8"

    def render(self, data, accepted_media_type=None, renderer_context=None):
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for row in data or []:
            writer.writerow({k: ("" if v is None else v) for k, v in row.items()})
        return out.getvalue().encode(self.charset)


def _filters(params) -> lb.Filters:
    try:
        filters = lb.Filters.from_params(params)
    except lb.QueryError as error:
        raise ValidationError({error.param: [error.message]}) from None
    for name, column in KNOWN_VALUE_COLUMNS.items():
        value = getattr(filters, name)
        if value is not None and not LeaderboardEntry.objects.public().filter(**{column: value}).exists():
            raise ValidationError({name: [f"no public leaderboard row has {name} {value!r}"]})
    return filters


class BoardIndex(CatalogueListView):
    """Every (pack, case) that has a leaderboard; case "" is the whole-pack board. Boards of results imported
    from other tools are left out unless `imported=include` (or `only`) asks for them."""

    serializer_class = BoardIndexSerializer
    queryset = LeaderboardEntry.objects.none()  # for the schema generator only; get_queryset answers
    extra_query_parameters = frozenset({"imported"})

    @extend_schema(parameters=[OpenApiParameter(
        "imported", str, enum=list(lb.IMPORTED_CHOICES),
        description="boards of runs measured by another tool and imported (`benchpack import`): exclude "
                    "(default), include, or only those")])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        value = self.request.query_params.get("imported")
        if value == "":  # the schema's enum has no empty value: refused, as the other filters refuse it
            raise ValidationError({"imported": ["must not be empty: give a value or leave the parameter out"]})
        try:
            imported = lb.imported_choice(value)
        except lb.QueryError as error:
            raise ValidationError({error.param: [error.message]}) from None
        return lb.boards(imported)


BOARD_PARAMETERS = [
    OpenApiParameter("workload", str, description="workload key; default: the best-populated real workload of a bundled pack version"),
    OpenApiParameter("order", str, enum=[*lb.SORTABLE, *(f"-{c}" for c in lb.SORTABLE)],
                     description="column to rank by; '-' reverses"),
    *[OpenApiParameter(name, OpenApiTypes.DATE if name in ("since", "until") else
                       OpenApiTypes.BOOL if name == "reproduced" else str,
                       enum=list(lb.PROVENANCES) if name == "provenance" else None)
      for name in lb.Filters.params()],
    OpenApiParameter("format", str, enum=["json", "csv"], description="csv: every filtered row, not paged"),
    OpenApiParameter("page", int, description="page number (1, 2, …)"),
    OpenApiParameter("page_size", int, description="rows a page: 1 to 500, default 50"),
]


class Board(CataloguePagedView):
    """One leaderboard: one row per system on one workload, ranked and filtered like the page."""

    serializer_class = EntrySerializer
    renderer_classes = [JSONRenderer, LeaderboardCSVRenderer]
    extra_query_parameters = frozenset({"workload", "order", "format", *lb.Filters.params()})

    def board(self) -> lb.Leaderboard:
        pack_id, case = self.kwargs["pack_id"], self.kwargs.get("case", "")
        params = self.request.query_params
        empty = sorted(name for name in ("order", "provenance", "format", "reproduced", "since", "until")
                       if params.get(name) == "")
        if empty:  # the schema lists their values, and "" is none of them
            raise ValidationError({name: ["must not be empty: give a value or leave it out"] for name in empty})
        filters = _filters(params)
        try:
            board = lb.leaderboard(pack_id, case, params.get("workload") or None, filters, params.get("order") or None)
        except lb.QueryError as error:
            raise ValidationError({error.param: [error.message]}) from None
        if board.workload is None:
            raise NotFound(f"no leaderboard for pack {pack_id!r}" + (f" case {case!r}" if case else ""))
        return board

    def get(self, request, *args, **kwargs):
        board = self.board()
        if request.accepted_renderer.format == "csv":
            entries = list(board.entries[:CSV_MAX_ROWS])
            data = self._serialize(entries, first_rank=1)
            name = f"leaderboard-{board.pack_id}{'-' + board.case if board.case else ''}.csv"
            return Response(data, headers={"Content-Disposition": f'attachment; filename="{name}"'})
        page = self.paginate_queryset(board.entries)
        first_rank = (self.paginator.page.start_index() if page else 1)
        envelope = self.get_paginated_response(self._serialize(page, first_rank)).data
        return Response({"count": envelope["count"], "next": envelope["next"], "previous": envelope["previous"],
                         "board": BoardSerializer(board).data, "results": envelope["results"]})

    def _serialize(self, entries, first_rank: int):
        context = {**self.get_serializer_context(), "first_rank": first_rank,
                   "position": {id(e): i for i, e in enumerate(entries)}}
        return EntrySerializer(entries, many=True, context=context).data


class PackBoard(Board):
    """The whole-pack leaderboard of a pack (pass rate and speed over all its cases)."""

    @extend_schema(operation_id="leaderboard_pack", parameters=BOARD_PARAMETERS, responses=BoardPageSerializer)
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)


class CaseBoard(Board):
    """The leaderboard of one case of a pack."""

    @extend_schema(operation_id="leaderboard_case", parameters=BOARD_PARAMETERS, responses=BoardPageSerializer)
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)
