"""Request size limits that hold before a byte of the body is read.

Two layers, for every view:

- `RequestBodyLimitMiddleware` refuses a request whose `Content-Length` is
  over the view's limit with 413, before CSRF, sessions or the view read the
  body (Django reads exactly `Content-Length` bytes, so a body without one is
  read as empty). Upload views (`UPLOAD_URL_NAMES`) may carry one archive of
  `SUBMISSION_MAX_BYTES` plus form overhead; every other view
  `REQUEST_MAX_BYTES`.
- `SizeLimitedUploadHandler` counts each file part while it streams in and
  stops it the moment it passes `SUBMISSION_MAX_BYTES` (and refuses file parts
  outright on views that take none), so nothing bigger is buffered in memory
  or written to a temporary file. The upload views answer 413 from
  `upload_refusal(request)`.
"""

from __future__ import annotations

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, StopUpload
from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string


def is_upload_view(request) -> bool:
    match = getattr(request, "resolver_match", None)
    return match is not None and match.view_name in settings.UPLOAD_URL_NAMES


def body_limit(request) -> int:
    if is_upload_view(request):
        return settings.SUBMISSION_MAX_BYTES + settings.UPLOAD_REQUEST_OVERHEAD_BYTES
    return settings.REQUEST_MAX_BYTES


def too_large_response(request, message: str):
    if request.path.startswith("/api/"):
        return JsonResponse({"error": message, "status": 413, "code": "too_large"}, status=413)
    html = render_to_string("413.html", {"message": message}, request=request)
    return HttpResponse(html, status=413)


class RequestBodyLimitMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        raw = request.META.get("CONTENT_LENGTH") or "0"
        try:
            length = int(raw)
        except ValueError:
            length = -1
        if length < 0:
            return too_large_response(request, "the request's Content-Length is not a number")
        limit = body_limit(request)
        if length > limit:
            if is_upload_view(request):
                message = (f"the upload is {length} bytes; archives may be at most {settings.SUBMISSION_MAX_BYTES} "
                           "bytes (bundles carry compact artifacts only)")
            else:
                message = f"the request body is {length} bytes; this page accepts at most {limit}"
            return too_large_response(request, message)
        return None


def upload_refusal(request) -> str | None:
    """Why the upload handler stopped a file part of this request, if it did."""
    return getattr(request, "_upload_refusal", None)


class SizeLimitedUploadHandler(FileUploadHandler):
    """Counts each file part as it streams and stops it past the limit; hands the data on unchanged."""

    def new_file(self, field_name, file_name, content_type, content_length, charset=None, content_type_extra=None):
        super().new_file(field_name, file_name, content_type, content_length, charset, content_type_extra)
        self.received = 0
        if self.request is not None and not is_upload_view(self.request):
            self._refuse("this page does not accept file uploads")

    def receive_data_chunk(self, raw_data, start):
        self.received += len(raw_data)
        if self.received > settings.SUBMISSION_MAX_BYTES:
            self._refuse(
                f"{self.file_name}: over the {settings.SUBMISSION_MAX_BYTES}-byte limit; "
                "bundles carry compact artifacts only"
            )
        return raw_data

    def file_complete(self, file_size):
        return None  # the next handler (memory or temporary file) builds the file

    def _refuse(self, message: str):
        if self.request is not None:
            self.request._upload_refusal = message
        # The rest of the body is bounded by the Content-Length check; reading it
        # lets the client see the 413 instead of a reset connection.
        raise StopUpload(connection_reset=False)
