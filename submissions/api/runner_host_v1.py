"""`/api/runner/v1/`: the runner-host API, the only way a runner worker talks to the registry.

A runner host holds no registry credential but its host token (submissions.runqueue.tokens):
no database URL, no secret key. Every call carries `Authorization: Bearer bph_…`;
the token names the host, and the server checks each call against the run
request's assigned host (submissions.runqueue.claims): a token cannot claim,
report on, heartbeat, finish or cancel another host's run (403, nothing
changed). A revoked or rotated token is refused (401) on the next call, which
stops the worker (submissions.runqueue.runner.heartbeat).
"""

from __future__ import annotations

import json
import uuid

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import authentication, exceptions, permissions, serializers
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response
from rest_framework.views import APIView

from registry_site.catalogue.api.errors import error_response
from registry_site.catalogue.api.parsers import MAX_JSON_DEPTH, JSONParser, json_depth
from registry_site.limits import upload_refusal
from submissions.runqueue import claims, states, tokens
from submissions.runqueue.models import RunnerHost

MAX_ROWS_PER_CALL = 200
# Counts a host sends (attempt, done, total, a row's index and repetition) land in 32-bit
# positive integer columns; anything beyond this is not a count of one benchmark run.
MAX_COUNT = 10_000_000


class HostPrincipal:
    """`request.user` of a runner-host call: the host, never an account."""

    is_authenticated = True
    is_active = True
    is_anonymous = False
    pk = None

    def __init__(self, host: RunnerHost):
        self.host = host

    def __str__(self) -> str:
        return f"runner host {self.host.name}"


class HostTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        parts = header.split()
        if len(parts) != 2 or parts[0] != self.keyword:
            raise exceptions.NotAuthenticated("use 'Authorization: Bearer <host token>' (manage.py runner_host add)")
        host = tokens.host_for(parts[1])
        if host is None:
            raise exceptions.AuthenticationFailed("invalid or revoked host token (or the host is disabled)")
        return HostPrincipal(host), host

    def authenticate_header(self, request):
        return self.keyword


class HostTokenScheme(OpenApiAuthenticationExtension):
    target_class = "submissions.api.runner_host_v1.HostTokenAuthentication"
    name = "hostToken"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer",
                "description": "a runner host's token (bph_…), printed once by manage.py runner_host add/rotate"}


class IsRunnerHost(permissions.BasePermission):
    message = "runner hosts only (a host token)"

    def has_permission(self, request, view):
        return isinstance(request.auth, RunnerHost)


class _HostView(APIView):
    authentication_classes = [HostTokenAuthentication]
    permission_classes = [IsRunnerHost]
    # A host runs one benchmark at a time; its calls are bounded by that, not by the public API's rates.
    throttle_classes: list = []
    parser_classes = [JSONParser]

    def dispatch_checked(self, call):
        try:
            check_values(self.request.data)
            return Response(call())
        except claims.NotYours as exc:
            return error_response(str(exc), 403, "forbidden")
        except claims.Lost as exc:
            return error_response(str(exc), 409, "conflict")
        except BodyError as exc:
            return error_response(str(exc), 400, "invalid")


class BodyError(ValueError):
    pass


def check_values(data, path: str = "") -> None:
    """Every text in the body (keys too) storable as it is: no NUL (PostgreSQL refuses it in text and
    jsonb) and no lone surrogate (not UTF-8) — refused here with the field's name, never a 500 later."""
    if hasattr(data, "lists"):  # a multipart QueryDict: every value of every field
        for key, values in data.lists():
            check_values(key, path or "field names")
            for value in values:
                check_values(getattr(value, "name", value) if not isinstance(value, str) else value, key)
        return
    if isinstance(data, str):
        if "\x00" in data:
            raise BodyError(f"{path or 'body'}: NUL characters are refused")
        try:
            data.encode("utf-8")
        except UnicodeEncodeError:
            raise BodyError(f"{path or 'body'}: a lone surrogate (not UTF-8 text) is refused") from None
    elif isinstance(data, dict):
        for key, value in data.items():
            check_values(key, f"{path} (a key)" if path else "field names")
            name = _label(key)
            check_values(value, f"{path}.{name}" if path else name)
    elif isinstance(data, list):
        for number, value in enumerate(data):
            check_values(value, f"{path}[{number}]")


def _label(key) -> str:
    """A key as the error may quote it (it was checked just before: printable in a JSON answer)."""
    return str(key)[:60]


def validated(request, serializer) -> dict:
    """The body checked against the very serializer the schema documents (types, ranges, required
    fields), after check_values; the first problem is the one 400, naming the field."""
    data = request.data
    if not isinstance(data, dict):
        raise BodyError("the body must be a JSON object")
    check_values(data)
    checked = type(serializer)(data=data)
    if not checked.is_valid():
        raise BodyError(_first_error(checked.errors))
    return dict(checked.validated_data)


def _first_error(errors, path: str = "") -> str:
    if isinstance(errors, dict):
        for name, value in errors.items():
            found = _first_error(value, f"{path}.{name}" if path else str(name))
            if found:
                return found
        return ""
    if isinstance(errors, list):
        for number, value in enumerate(errors):
            if isinstance(value, (dict, list)):
                found = _first_error(value, f"{path}[{number}]")
                if found:
                    return found
            elif value:
                return f"{path or 'body'}: {value}"
        return ""
    return f"{path or 'body'}: {errors}"


class _Text(serializers.RegexField):
    """Text and only text: DRF's CharField would take 0 or false and store "0" / "False"."""

    def to_internal_value(self, data):
        if not isinstance(data, str):
            self.fail("invalid_type")
        return super().to_internal_value(data)

    default_error_messages = {"invalid_type": "must be a string"}


def _text(**kwargs):
    """A text field as the schema states it: no NUL (PostgreSQL cannot store one; check_values refuses it)."""
    # Kept as sent: DRF would strip whitespace and then call "\x1c" blank, which the schema allows.
    return _Text(r"^[^\x00]*$", trim_whitespace=False, **kwargs)


def _count_field(**kwargs):
    return serializers.IntegerField(min_value=0, max_value=MAX_COUNT, **kwargs)


Worker = inline_serializer("RunnerWorker", {"worker": _text(help_text="the worker's name, for events")})
HostBeat = inline_serializer("RunnerHostBeat", {
    "worker": _text(),
    "hardware": serializers.DictField(required=False, allow_null=True, help_text="hardware.json, sent with the first beat"),
})
ClaimOnly = inline_serializer("RunnerClaim", {"claim": serializers.UUIDField()})
Stop = inline_serializer("RunnerStop", {"stop": serializers.ChoiceField(choices=["cancelled", "lost"], allow_null=True),
                                        "reason": serializers.CharField()})
Claimed = inline_serializer("RunnerClaimed", {
    "claimed": serializers.BooleanField(), "claim": serializers.UUIDField(required=False),
    "spec": serializers.DictField(required=False, help_text="endpoint (url, addresses, adapter), model, pack, options"),
    "state": serializers.CharField(required=False), "reason": serializers.CharField(required=False),
})
Row = inline_serializer("RunnerRow", {
    "index": _count_field(), "case": _text(max_length=128),
    "repetition": _count_field(required=False, allow_null=True),
    "ok": serializers.BooleanField(), "raw": serializers.DictField(help_text="the row as run.jsonl holds it"),
})
Progress = inline_serializer("RunnerProgress", {
    "claim": serializers.UUIDField(), "attempt": _count_field(help_text="the claimed attempt"),
    "done": _count_field(), "total": _count_field(), "current": _text(allow_blank=True),
    "log_tail": _text(allow_blank=True),
    "rows": serializers.ListField(child=Row, max_length=MAX_ROWS_PER_CALL),
})
Hardware = inline_serializer("RunnerHardware", {"claim": serializers.UUIDField(), "hardware": serializers.DictField()})
Ended = inline_serializer("RunnerEnd", {
    "claim": serializers.UUIDField(), "state": serializers.ChoiceField(choices=[states.FAILED, states.CANCELLED]),
    "reason": _text(), "log_tail": _text(allow_blank=True, required=False),
    "timings": serializers.DictField(required=False, allow_null=True),
})
Finished = inline_serializer("RunnerFinish", {
    "claim": serializers.UUIDField(), "bundle": serializers.FileField(help_text="the bundle archive (.tar.gz)"),
    "log_tail": _text(allow_blank=True, required=False),
    "timings": _text(required=False, allow_blank=True, help_text="a JSON object, as text"),
    "rows": _count_field(required=False),
})
Submitted = inline_serializer("RunnerSubmitted", {"submission": serializers.UUIDField(), "state": serializers.CharField()})


class HostHeartbeat(_HostView):
    @extend_schema(request=HostBeat, responses={200: inline_serializer("RunnerHostBeatAnswer", {
        "host": serializers.CharField(), "recovered": serializers.ListField()})}, tags=["runner hosts"],
        summary="the host is online (and its hardware); recovers its own lost runs")
    def post(self, request):
        def call():
            data = validated(request, HostBeat)
            done = claims.host_beat(request.auth, data["worker"], data.get("hardware"))
            return {"host": request.auth.name, "recovered": [list(pair) for pair in done]}
        return self.dispatch_checked(call)


class HostStopping(_HostView):
    @extend_schema(request=Worker, responses={200: inline_serializer("RunnerOk", {"ok": serializers.BooleanField()})},
                   tags=["runner hosts"], summary="the worker stops: the host shows offline at once")
    def post(self, request):
        def call():
            claims.host_stopping(request.auth, validated(request, Worker)["worker"])
            return {"ok": True}
        return self.dispatch_checked(call)


class RunClaim(_HostView):
    @extend_schema(request=Worker, responses={200: Claimed}, tags=["runner hosts"],
                   summary="queued → running for this host (a conditional UPDATE: one winner)")
    def post(self, request, pk):
        return self.dispatch_checked(lambda: claims.claim(request.auth, pk, validated(request, Worker)["worker"]))


class RunHeartbeat(_HostView):
    @extend_schema(request=ClaimOnly, responses={200: Stop}, tags=["runner hosts"],
                   summary="the run's heartbeat; says whether to stop (cancelled, or the claim is gone)")
    def post(self, request, pk):
        return self.dispatch_checked(
            lambda: claims.beat(request.auth, pk, str(validated(request, ClaimOnly)["claim"])))


class RunProgress(_HostView):
    @extend_schema(request=Progress, responses={200: Stop}, tags=["runner hosts"],
                   summary="rows as they land, executions done/total, the current case, the log tail")
    def post(self, request, pk):
        def call():
            data = validated(request, Progress)
            rows = [dict(row) for row in data["rows"]]
            return claims.progress(request.auth, pk, str(data["claim"]), attempt=data["attempt"], done=data["done"],
                                   total=data["total"], current=data["current"], log_tail=data["log_tail"], rows=rows)
        return self.dispatch_checked(call)


class RunHardware(_HostView):
    @extend_schema(request=Hardware, responses={200: Stop}, tags=["runner hosts"],
                   summary="the run's hardware.json, kept for the operator (the hardware class is only ever an operator's)")
    def post(self, request, pk):
        def call():
            data = validated(request, Hardware)
            answer = claims.beat(request.auth, pk, str(data["claim"]))
            if answer["stop"] != "lost":
                claims.record_hardware(request.auth, data["hardware"])
            return answer
        return self.dispatch_checked(call)


class RunEnd(_HostView):
    @extend_schema(request=Ended, responses={200: inline_serializer("RunnerEnded", {"state": serializers.CharField()})},
                   tags=["runner hosts"], summary="the run failed or stopped on a cancel (rows kept, never published)")
    def post(self, request, pk):
        def call():
            data = validated(request, Ended)
            return {"state": claims.end(request.auth, pk, str(data["claim"]), data["state"], data["reason"],
                                        log_tail=data.get("log_tail") or "", timings=data.get("timings") or {})}
        return self.dispatch_checked(call)


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


class RunFinish(_HostView):
    parser_classes = [MultiPartParser]

    @extend_schema(request={"multipart/form-data": Finished}, responses={200: Submitted}, tags=["runner hosts"],
                   summary="the bundle: filed as a submission by the run request's submitter")
    def post(self, request, pk):
        if upload_refusal(request):
            return error_response(upload_refusal(request), 413)

        def call():
            data = validated(request, Finished)
            bundle = data["bundle"]
            text = data.get("timings") or "{}"
            if json_depth(text, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
                raise BodyError(f"timings: nested more than {MAX_JSON_DEPTH} levels deep")
            try:
                timings = json.loads(text, parse_constant=_no_constant)
            except ValueError:
                timings = None
            if not isinstance(timings, dict):
                raise BodyError("timings: must be a JSON object (as text)")
            check_values(timings, "timings")
            rows = data.get("rows") or 0
            submission = claims.finish(request.auth, pk, str(data["claim"]), name=bundle.name,
                                       data=bundle.read(), log_tail=data.get("log_tail") or "",
                                       timings=timings, row_count=rows)
            return {"submission": str(submission.pk), "state": submission.state}
        return self.dispatch_checked(call)
