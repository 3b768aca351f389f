"""`/api/v1/answer/`: the answer page's question as JSON (registry_site.catalogue.answer).

The same parameters as `/answer/`: `work` (a pack id, or "coding"), `min_decode` (tok/s),
`max_ttft` (s), `min_pass` (percent), `hardware_class`, `max_memory_gb`. `meets` lists the
systems meeting every condition, best first; when it is empty, `closest` lists the ones that
came closest with what each missed (docs/answer.md). For a row whose runs measured an external
agent's sessions, `min_decode` and `max_ttft` are judged on the agent's figures (`agent_decode_rate`,
`agent_ttft_s`; `speed_basis` says which).
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from registry_site.catalogue.api.base import ConditionalGetMixin, StrictQueryMixin
from registry_site.catalogue.api.packs import PackSerializer
from registry_site.catalogue import answer as shared


class AnswerMissSerializer(serializers.Serializer):
    text = serializers.CharField(help_text="the condition missed, in words")
    gap = serializers.FloatField(help_text="how far off, relative (0 met, 1 not measured)")


class AnswerSystemSerializer(serializers.Serializer):
    pack_id = serializers.CharField(source="entry.pack_id")
    pack = PackSerializer(source="entry.pack_id", read_only=True)
    pack_version = serializers.CharField(source="entry.pack_version")
    model = serializers.CharField(source="entry.model")
    runtime_name = serializers.CharField(source="entry.runtime_name")
    runtime_version = serializers.CharField(source="entry.runtime_version")
    hardware_class = serializers.CharField(source="entry.hardware_class")
    memory_gb = serializers.IntegerField(allow_null=True)
    decode_rate = serializers.FloatField(source="entry.decode_rate", allow_null=True, help_text="1/TPOT, tok/s (median)")
    decode_rate_min = serializers.FloatField(source="entry.decode_rate_min", allow_null=True)
    decode_rate_max = serializers.FloatField(source="entry.decode_rate_max", allow_null=True)
    ttft_s = serializers.FloatField(source="entry.ttft_s", allow_null=True)
    ttft_s_min = serializers.FloatField(source="entry.ttft_s_min", allow_null=True)
    ttft_s_max = serializers.FloatField(source="entry.ttft_s_max", allow_null=True)
    agent_decode_rate = serializers.FloatField(
        source="entry.agent_decode_rate", allow_null=True,
        help_text="the agent's decode over its turns, tok/s: median over the runs of 1 / the median TPOT of each "
                  "task's turns (null: no agent session measured)")
    agent_decode_rate_min = serializers.FloatField(source="entry.agent_decode_rate_min", allow_null=True)
    agent_decode_rate_max = serializers.FloatField(source="entry.agent_decode_rate_max", allow_null=True)
    agent_ttft_s = serializers.FloatField(source="entry.agent_ttft_s", allow_null=True,
                                          help_text="the agent's median TTFT over its turns, s (median over the runs)")
    time_to_solution_s = serializers.FloatField(source="entry.time_to_solution_s", allow_null=True,
                                                help_text="agent started → agent exited per task, s (median)")
    speed_basis = serializers.CharField(help_text='"agent": min_decode and max_ttft were judged on the agent\'s '
                                                  'figures; "request": on the runner\'s own request per case')
    pass_rate = serializers.FloatField(allow_null=True, help_text="tasks passed / tasks scored over every run "
                                                                  "behind the row (the boards' figure)")
    pass_interval = serializers.ListField(source="entry.pass_interval", child=serializers.FloatField(), allow_null=True,
                                          help_text="95 % Wilson interval of pass_rate [low, high]")
    scored = serializers.IntegerField(source="entry.scored", allow_null=True)
    correct = serializers.IntegerField(source="entry.correct", allow_null=True)
    suspicious_answers = serializers.IntegerField(
        source="entry.suspicious_answers", help_text="of `scored`, answers whose repo-task verdict is `suspicious` "
                                                     "(they introspected their caller or environment): failed, "
                                                     "counted apart")
    run_count = serializers.IntegerField(source="entry.run_count")
    reproduced = serializers.BooleanField(source="entry.reproduced")
    provenance = serializers.CharField(source="entry.provenance")
    flagged = serializers.BooleanField(source="entry.flagged")
    is_demo = serializers.BooleanField(source="entry.is_demo")
    plausibility = serializers.CharField(source="plausibility_verdict",
                                         help_text="implausible if any run behind the row is, plausible if all are, "
                                                   "else unchecked")
    plausibility_runs = serializers.DictField(source="plausibility", child=serializers.IntegerField(),
                                              help_text="runs behind the row per plausibility verdict")
    caveat = serializers.CharField(help_text="why the row's figures may not hold: unchecked or implausible "
                                             "runs ('' when every run behind it is plausible)")
    run_url = serializers.SerializerMethodField()
    misses = AnswerMissSerializer(many=True)

    def get_run_url(self, obj) -> str:
        return f"/api/v1/runs/{obj.entry.representative_run_id}/"


class AnswerSerializer(serializers.Serializer):
    question = serializers.SerializerMethodField()
    packs = serializers.ListField(child=serializers.CharField())
    nothing_meets = serializers.BooleanField()
    total_meeting = serializers.IntegerField()
    checked_meeting = serializers.IntegerField(help_text="of total_meeting, rows whose every run was judged "
                                                         "plausible (they come first)")
    considered = serializers.IntegerField(help_text="systems with results for this work on the hardware asked for")
    meets = AnswerSystemSerializer(many=True)
    closest = AnswerSystemSerializer(many=True, help_text="when nothing meets: the nearest misses, nearest first")

    def get_question(self, obj) -> dict:
        q = obj.question
        return {"work": q.work, "min_decode_tps": q.min_decode_tps, "max_ttft_s": q.max_ttft_s,
                "min_pass_rate": q.min_pass_rate, "hardware_class": q.hardware_class,
                "max_memory_gb": q.max_memory_gb}


def _bounded(name: str, description: str) -> OpenApiParameter:
    """A numeric parameter with the bounds the view enforces (catalogue.answer.NUMBER_BOUNDS)."""
    low, high, _ = shared.NUMBER_BOUNDS[name]
    return OpenApiParameter(name, {"type": "number", "minimum": low, "maximum": high}, description=description)


class Answer(ConditionalGetMixin, StrictQueryMixin, APIView):
    """Which model + runtime + machine is fast enough and correct enough for this work: the systems
    that meet every condition, ranked, each with its evidence; or, when none does, the closest."""

    extra_query_parameters = frozenset(shared.Question.PARAMS)

    @extend_schema(
        parameters=[OpenApiParameter("work", str, required=True, description='a pack id, or "coding"'),
                    _bounded("min_decode", "minimum decode rate, tok/s"),
                    _bounded("max_ttft", "maximum time to the first token, s"),
                    _bounded("min_pass", "minimum pass rate, percent (0–100)"),
                    OpenApiParameter("hardware_class", str, description="exactly this hardware class"),
                    _bounded("max_memory_gb", "machines with at most this much RAM")],
        responses=AnswerSerializer)
    def get(self, request):
        try:
            found = shared.answer(shared.Question.from_params(request.query_params))
        except shared.QuestionError as error:
            raise ValidationError({error.param: [error.message]}) from None
        return Response(AnswerSerializer(found).data)
