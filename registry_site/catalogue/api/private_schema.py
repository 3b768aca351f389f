"""The schema of the token-only APIs under /api/v1/ (submissions, run requests, runner hosts), declared here
rather than on their views: drf-spectacular cannot read an APIView's answers, and keeping the description in
one module leaves the views (and the engineers adding runner-host endpoints) free of schema decorations.

Shapes are what the views write (submissions/api/v1.py, submissions/api/runqueue_v1.py); fields whose type
varies with the state (timings, reports) are left open rather than guessed. Every operation also answers the
shared error shape (schema.error_responses); 401 when no valid token is sent.
"""

from __future__ import annotations

from django.conf import settings
from drf_spectacular.extensions import OpenApiViewExtension
from drf_spectacular.utils import OpenApiResponse, extend_schema

ANY: dict = {}
TEXT = {"type": "string"}
WHEN = {"type": ["string", "null"], "format": "date-time"}

EVENT = {"type": "object", "properties": {"from_state": TEXT, "to_state": TEXT, "reason": TEXT,
                                          "created_at": {"type": "string", "format": "date-time"}}}
SUBMISSION = {
    "type": "object",
    "required": ["id", "state", "archive_name", "archive_sha256", "archive_size", "created_at", "error_codes"],
    "properties": {
        "id": {"type": "string", "format": "uuid"}, "state": TEXT, "archive_name": TEXT,
        "archive_sha256": TEXT, "archive_size": {"type": "integer", "minimum": 0}, "provenance": TEXT,
        "created_at": {"type": "string", "format": "date-time"}, "updated_at": {"type": "string", "format": "date-time"},
        "decision_reason": TEXT, "error_codes": {"type": "array", "items": TEXT},
        "validation_report": {"type": ["object", "null"], "description": "the bundle validation report"},
        "events": {"type": "array", "items": EVENT},
    },
}
RUN_REQUEST = {
    "type": "object",
    "required": ["id", "state"],
    "properties": {
        "id": {"type": "string", "format": "uuid"}, "state": TEXT, "host": TEXT, "endpoint": TEXT, "model": TEXT,
        "pack": {"type": "object", "properties": {"id": TEXT, "version": TEXT}},
        "options": {"type": "object"}, "requested_by": TEXT, "attempts": {"type": "integer"},
        "max_attempts": {"type": "integer"}, "progress": {"type": "object"},
        "rows": {"type": "array", "items": {"type": "object"}}, "log_tail": ANY, "failure_reason": ANY,
        "timings": ANY, "submission": {"type": ["object", "null"]}, "reproduction_of": ANY,
        "is_demo": {"type": "boolean"}, "created_at": WHEN, "started_at": WHEN, "heartbeat_at": WHEN,
        "finished_at": WHEN, "events": {"type": "array", "items": {"type": "object"}},
    },
}
NO_NUL = {"type": "string", "pattern": "^[^\\x00]*$"}
RUN_REQUEST_BODY = {
    "type": "object",
    "additionalProperties": False,
    "required": ["host", "endpoint", "model", "pack"],
    "properties": {
        "host": {**NO_NUL, "description": "a runner host's name (GET /api/v1/runner-hosts/)"},
        "endpoint": {**NO_NUL, "description": "an allowlisted endpoint's name on that host; never a URL"},
        "model": NO_NUL, "pack": {**NO_NUL, "description": "pack id"}, "pack_version": NO_NUL,
        "openai_stream_usage": {"enum": ["include", "omit"], "description": "openai-chat endpoints only"},
        "repetitions": {"type": "integer", "minimum": 1, "maximum": settings.RUN_REQUEST_MAX_REPETITIONS},
        "time_limit_s": {"type": "integer", "minimum": 1, "maximum": settings.RUN_REQUEST_MAX_S},
    },
}
RUNNER_HOST = {"type": "object", "properties": {
    "name": TEXT, "queue": TEXT, "online": {"type": "boolean"}, "heartbeat_at": WHEN, "enabled": {"type": "boolean"},
    "hardware_class": TEXT, "worker": TEXT, "endpoints": {"type": "array", "items": {"type": "object"}},
    "packs": {"type": "array", "items": {"type": "object"}}}}


def _list(item: dict) -> dict:
    return {"type": "array", "items": item}


def _replace(target, **methods):
    """A subclass of `target` whose methods carry `extend_schema(**kwargs)` (the OpenApiViewExtension way)."""
    namespace = {}
    for name, kwargs in methods.items():
        original = getattr(target, name)

        def method(self, request, *args, _original=original, **kw):
            return _original(self, request, *args, **kw)

        namespace[name] = extend_schema(**kwargs)(method)
    return type(target.__name__, (target,), namespace)


class SubmissionListSchema(OpenApiViewExtension):
    target_class = "submissions.api.v1.SubmissionList"

    def view_replacement(self):
        return _replace(
            self.target_class,
            get=dict(operation_id="submissions_list", tags=["submissions"], summary="your latest 100 submissions",
                     responses={200: _list(SUBMISSION)}),
            post=dict(operation_id="submissions_create", tags=["submissions"],
                      summary="upload a bundle archive (what `benchpack submit` does)",
                      request={"multipart/form-data": {"type": "object", "required": ["archive"], "properties": {
                          "archive": {"type": "string", "format": "binary",
                                      "description": ".tar.gz or .zip made by `benchpack registry bundle create`"}}}},
                      responses={201: SUBMISSION,
                                 409: OpenApiResponse(description="this archive was already submitted"),
                                 413: OpenApiResponse(description="the archive is over the size limit")}),
        )


class SubmissionDetailSchema(OpenApiViewExtension):
    target_class = "submissions.api.v1.SubmissionDetail"

    def view_replacement(self):
        return _replace(self.target_class, get=dict(
            operation_id="submission_detail", tags=["submissions"], summary="one of your submissions: state, report",
            responses={200: SUBMISSION}))


class RunRequestListSchema(OpenApiViewExtension):
    target_class = "submissions.api.runqueue_v1.RunRequestList"

    def view_replacement(self):
        return _replace(
            self.target_class,
            get=dict(operation_id="run_requests_list", tags=["run requests"],
                     summary="run requests you may see (latest 100)", responses={200: _list(RUN_REQUEST)}),
            post=dict(operation_id="run_requests_create", tags=["run requests"],
                      summary="queue a run on a runner host (docs/runner-hosts.md)",
                      request={"application/json": RUN_REQUEST_BODY}, responses={201: RUN_REQUEST}),
        )


class RunRequestDetailSchema(OpenApiViewExtension):
    target_class = "submissions.api.runqueue_v1.RunRequestDetail"

    def view_replacement(self):
        return _replace(self.target_class, get=dict(
            operation_id="run_request_detail", tags=["run requests"], responses={200: RUN_REQUEST}))


class RunRequestCancelSchema(OpenApiViewExtension):
    target_class = "submissions.api.runqueue_v1.RunRequestCancel"

    def view_replacement(self):
        outcome = {"type": "object", "properties": {"cancel": TEXT, "run_request": RUN_REQUEST}}
        return _replace(self.target_class, post=dict(
            operation_id="run_request_cancel", tags=["run requests"], request=None,
            responses={200: outcome, 409: OpenApiResponse(outcome, description="already final")}))


class RunnerHostListSchema(OpenApiViewExtension):
    target_class = "submissions.api.runqueue_v1.RunnerHostList"

    def view_replacement(self):
        return _replace(self.target_class, get=dict(
            operation_id="runner_hosts_list", tags=["run requests"], summary="runner hosts you may queue runs on",
            responses={200: _list(RUNNER_HOST)}))


# (path, method) whose body is required: an empty POST is refused ("missing field(s)", "send the archive").
REQUIRED_BODIES = {("/api/v1/submissions/", "post"), ("/api/v1/run-requests/", "post")}


def required_request_bodies(result, generator, request, public):
    """drf-spectacular marks a raw request schema optional; these views refuse a POST without one."""
    for path, method in REQUIRED_BODIES:
        body = result.get("paths", {}).get(path, {}).get(method, {}).get("requestBody")
        if body is not None:
            body["required"] = True
    return result
