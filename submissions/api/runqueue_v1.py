"""`/api/v1/run-requests/` and `/api/v1/runner-hosts/`: queue runs and follow them.

Operators and host owners only (token or session). A request names its
endpoint by its allowlist name; a body that carries a URL, or any field this
endpoint does not know, is refused before anything else is looked at.
"""

from __future__ import annotations

from benchpack.results.metrics import decode_rate_of

from django.http import Http404
from rest_framework import permissions, serializers, status
from registry_site.catalogue.api.parsers import JSONParser  # a 400, not a 500, for a body nested 1,500 deep
from rest_framework.response import Response
from rest_framework.views import APIView

from registry_site.catalogue.api.errors import error_response

from submissions.runqueue.models import RunnerHost, RunRequest
from submissions.runqueue.services import RequestRefused, cancel_run_request, create_run_request

FIELDS = {"host": str, "endpoint": str, "model": str, "pack": str, "pack_version": str,
          "openai_stream_usage": str, "repetitions": int, "time_limit_s": int}
REQUIRED = ("host", "endpoint", "model", "pack")
API_ROWS = 500


class RunRequestSerializer(serializers.ModelSerializer):
    host = serializers.CharField(source="host.name")
    endpoint = serializers.CharField(source="endpoint.name")
    pack = serializers.SerializerMethodField()
    options = serializers.SerializerMethodField()
    progress = serializers.SerializerMethodField()
    rows = serializers.SerializerMethodField()
    submission = serializers.SerializerMethodField()
    requested_by = serializers.CharField(source="requested_by.email")
    events = serializers.SerializerMethodField()

    class Meta:
        model = RunRequest
        fields = ["id", "state", "host", "endpoint", "model", "pack", "options", "requested_by", "attempts",
                  "max_attempts", "progress", "rows", "log_tail", "failure_reason", "timings", "submission",
                  "reproduction_of", "is_demo", "created_at", "started_at", "heartbeat_at", "finished_at", "events"]

    def get_pack(self, obj):
        return {"id": obj.pack.pack_id, "version": obj.pack.version}

    def get_options(self, obj):
        return {"openai_stream_usage": obj.openai_stream_usage, "repetitions": obj.repetitions,
                "time_limit_s": obj.time_limit_s}

    def get_progress(self, obj):
        return {"done": obj.progress_done, "total": obj.progress_total, "current": obj.current}

    def get_rows(self, obj):
        return [
            {"attempt": row.attempt, "case": row.case, "repetition": row.repetition, "ok": row.ok,
             "wall_s": row.timing.get("wall_s"), "ttft_s": row.timing.get("ttft_s"),
             "decode_rate": decode_rate_of({"timing": row.timing}), "decode_tps": row.timing.get("decode_tps"),
             "error": row.error or None}
            for row in obj.rows.all()[:API_ROWS]
        ]

    def get_submission(self, obj):
        if obj.submission is None:
            return None
        return {"id": str(obj.submission.pk), "state": obj.submission.state}

    def get_events(self, obj):
        return [{"from_state": e.from_state, "to_state": e.to_state, "reason": e.reason, "worker": e.worker,
                 "created_at": serializers.DateTimeField().to_representation(e.created_at)}
                for e in obj.events.all()]


def _visible(request, pk) -> RunRequest:
    found = (RunRequest.objects.visible_to(request.user)
             .select_related("host", "endpoint", "pack", "requested_by", "submission").filter(pk=pk).first())
    if found is None:
        raise Http404
    return found


def _whole_numbers(data):
    """`"repetitions": 25.0` is the integer 25 in JSON (and in the schema's JSON Schema): accept it as one."""
    if not isinstance(data, dict):
        return data
    return {key: int(value) if FIELDS.get(key) is int and isinstance(value, float) and value.is_integer() else value
            for key, value in data.items()}


def _body_problem(data) -> str | None:
    if not isinstance(data, dict):
        return "send a JSON object"
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        hint = " (endpoints are chosen by their allowlist name; a URL is never accepted)" if any(
            "url" in key.lower() for key in unknown) else ""
        return f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(FIELDS)}{hint}"
    missing = [key for key in REQUIRED if key not in data]
    if missing:
        return f"missing field(s): {', '.join(missing)}"
    for key, kind in FIELDS.items():
        value = data.get(key)
        if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
            return f"{key} must be {'a string' if kind is str else 'an integer'}"
        if isinstance(value, str) and "\x00" in value:  # PostgreSQL refuses NUL in text: it was a 500 there
            return f"{key} must not contain NUL characters"
    return None


class RunRequestList(APIView):
    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [JSONParser]

    def get(self, request):
        found = (RunRequest.objects.visible_to(request.user)
                 .select_related("host", "endpoint", "pack", "requested_by", "submission")
                 .prefetch_related("rows", "events")[:100])
        return Response(RunRequestSerializer(found, many=True).data)

    def post(self, request):
        data = _whole_numbers(request.data)
        problem = _body_problem(data)
        if problem:
            return error_response(problem, 400)
        try:
            created = create_run_request(request.user, **data)
        except RequestRefused as refused:
            return error_response(refused.message, refused.status)
        return Response(RunRequestSerializer(_visible(request, created.pk)).data, status=status.HTTP_201_CREATED)


class RunRequestDetail(APIView):
    permission_classes = [permissions.IsAuthenticated]

    def get(self, request, pk):
        return Response(RunRequestSerializer(_visible(request, pk)).data)


class RunRequestCancel(APIView):
    permission_classes = [permissions.IsAuthenticated]

    def post(self, request, pk):
        found = _visible(request, pk)
        outcome = cancel_run_request(found.pk, request.user)
        body = RunRequestSerializer(_visible(request, pk)).data
        return Response({"cancel": outcome, "run_request": body}, status=200 if outcome != "final" else 409)


class RunnerHostList(APIView):
    permission_classes = [permissions.IsAuthenticated]

    def get(self, request):
        hosts = RunnerHost.objects.visible_to(request.user).prefetch_related("endpoints", "packs")
        return Response([
            {"name": h.name, "queue": h.queue, "online": h.is_online, "heartbeat_at": h.heartbeat_at,
             "enabled": h.enabled, "hardware_class": h.hardware_class, "worker": h.worker_name,
             "endpoints": [{"name": e.name, "adapter": e.adapter, "models": e.model_names(),
                            "runtime": f"{e.runtime_name} {e.runtime_version}"} for e in h.endpoints.filter(enabled=True)],
             "packs": [{"id": p.pack_id, "version": p.version} for p in h.packs.filter(enabled=True)]}
            for h in hosts
        ])
