"""One JSON error shape for everything under /api/.

    {"error": "<one sentence naming what is wrong>", "status": 400, "code": "invalid",
     "fields": {"<parameter or field>": ["<why>", ...]}}        # `fields` only when a parameter is at fault

Three doors lead to an error and all of them end here:

- DRF views raise (`ValidationError`, `NotFound`, `Throttled`, ...):
  `exception_handler` (settings.REST_FRAMEWORK["EXCEPTION_HANDLER"]).
- Django answers before or outside a DRF view (no URL matched, a bad Host,
  an unhandled exception): `handler404/400/403/500` in registry_site.urls
  call the functions below, which answer JSON under /api/ and the site's own
  pages elsewhere. `api_not_found` is also a catch-all URL under /api/, so an
  unknown API path is JSON even with DEBUG on (Django's debug 404 page would
  skip handler404).
- Views that refuse on their own return `error_response(...)`.
"""

from __future__ import annotations

from django.http import JsonResponse
from django.urls import Resolver404, resolve
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

API_PREFIX = "/api/"


def error_body(message: str, status_code: int, code: str, fields: dict[str, list[str]] | None = None) -> dict:
    body = {"error": message, "status": status_code, "code": code}
    if fields:
        body["fields"] = fields
    return body


# The code a view's own refusal gets when it does not name one.
CODE_OF_STATUS = {400: "invalid", 401: "not_authenticated", 403: "permission_denied", 404: "not_found",
                  409: "conflict", 413: "too_large", 429: "throttled", 503: "unavailable"}


def error_response(message: str, status_code: int, code: str | None = None, **extra) -> Response:
    """A DRF response in the shared shape; `extra` keys ride along (e.g. the existing submission on a 409)."""
    body = error_body(message, status_code, code or CODE_OF_STATUS.get(status_code, "error"))
    return Response({**body, **extra}, status=status_code)


MAX_MESSAGE = 300  # a message may quote the value it refuses; a 100 kB value is not echoed back whole


def _short(text) -> str:
    text = str(text)
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def _flatten(detail) -> dict[str, list[str]]:
    """DRF's nested ValidationError detail as {name: [messages]}; non-field errors under "non_field_errors"."""
    if isinstance(detail, dict):
        return {_short(name)[:60]: [_short(m) for m in (value if isinstance(value, list) else [value])]
                for name, value in detail.items()}
    items = detail if isinstance(detail, list) else [detail]
    return {"non_field_errors": [_short(m) for m in items]}


def _validation_message(fields: dict[str, list[str]]) -> str:
    parts = [f"{name}: {' '.join(messages)}" if name != "non_field_errors" else " ".join(messages)
             for name, messages in fields.items()]
    return "; ".join(parts)


def exception_handler(exc, context):
    response = drf_exception_handler(exc, context)  # maps Http404/PermissionDenied, sets Retry-After/WWW-Authenticate
    if response is None:
        return None  # an unexpected exception: Django's handler500 answers (JSON under /api/)
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail)
        response.data = error_body(_validation_message(fields), response.status_code, "invalid", fields)
        return response
    detail = getattr(exc, "detail", None)
    message = str(detail) if detail is not None and not isinstance(detail, (dict, list)) else str(exc)
    if isinstance(exc, exceptions.Throttled) and exc.wait is not None:
        message = f"too many requests; try again in {int(exc.wait) + 1} s"
    code = detail.code if hasattr(detail, "code") else getattr(exc, "default_code", "error")
    if response.status_code == status.HTTP_404_NOT_FOUND:
        code, message = "not_found", (message if message not in ("", "Not found.", "No Page matches the given query.")
                                      else "not found, or not public")
    response.data = error_body(_short(message), response.status_code, code)
    return response


def is_api(request) -> bool:
    return request.path.startswith(API_PREFIX)


def _json(message: str, status_code: int, code: str) -> JsonResponse:
    return JsonResponse(error_body(message, status_code, code), status=status_code)


@csrf_exempt  # a 404 changes nothing; without this a POST carrying a session cookie got Django's HTML CSRF page
def api_not_found(request, *args, **kwargs):
    path = request.path
    if not path.endswith("/"):
        try:
            match = resolve(path + "/")
        except Resolver404:
            match = None
        if match is not None and match.func is not api_not_found:
            # Django would redirect (and refuse to for a POST, losing its body); say where it is instead.
            return _json(f"no API endpoint at {path}; did you mean {path}/ ?", 404, "not_found")
    return _json(f"no API endpoint at {path}", 404, "not_found")


def not_found(request, exception=None):
    if is_api(request):
        return api_not_found(request)
    return defaults.page_not_found(request, exception)


def bad_request(request, exception=None):
    if is_api(request):
        return _json(f"bad request: {exception}" if exception else "bad request", 400, "bad_request")
    return defaults.bad_request(request, exception)


def permission_denied(request, exception=None):
    if is_api(request):
        return _json(str(exception) or "permission denied", 403, "permission_denied")
    return defaults.permission_denied(request, exception)


def csrf_failure(request, reason=""):
    """settings.CSRF_FAILURE_VIEW: JSON under /api/ like every other answer there."""
    if is_api(request):
        return _json(f"CSRF verification failed: {reason}" if reason else "CSRF verification failed", 403,
                     "permission_denied")
    from django.views.csrf import csrf_failure as default_csrf_failure

    return default_csrf_failure(request, reason)


def server_error(request):
    if is_api(request):
        # No detail: the traceback is in the log (Django's request logger), never in the answer.
        return _json("internal server error; it has been logged", 500, "server_error")
    return defaults.server_error(request)
