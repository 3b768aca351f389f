"""Upload limits checked before a byte of the body is read (issue 22 §3).

32 parallel 20.8 MB uploads by one user took the web workers from 291 MB to
1,935 MB RSS: every body was read (into memory) before the per-user hourly
limit refused 23 of them. `UploadGateMiddleware` runs in `process_view`,
before CSRF (which reads a form body) and before the view, and refuses with
429 — without reading the body — when the uploader

- has already sent `SUBMISSION_RATE_LIMIT_PER_HOUR` archives in the last
  hour (the same count `submissions.intake` repeats atomically with the
  insert, which stays the exact check), or
- already has `SUBMISSION_MAX_CONCURRENT_UPLOADS` uploads in progress: a
  counter per user in the shared cache, taken here and given back when the
  response is done (it expires after UPLOAD_SLOT_TTL_S, so a killed process
  cannot hold a slot for ever).

The uploader is the session's user (web form) or the API token's user
(`Authorization: Bearer`, looked up the way the API does; a bad token is
left to the view's 401). Anonymous and unverified uploaders are left to the
view, which refuses them without using what it read. Bodies that do get
read stream to a temporary file past Django's 2.5 MB default
(FILE_UPLOAD_MAX_MEMORY_SIZE), not into memory.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.cache import cache
from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.utils import timezone

from registry_site.limits import is_upload_view

UPLOAD_SLOT_TTL_S = 15 * 60


def uploader(request):
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return user
    if request.META.get("HTTP_AUTHORIZATION"):
        from rest_framework.exceptions import AuthenticationFailed

        from accounts.authentication import ApiTokenAuthentication

        try:
            found = ApiTokenAuthentication().authenticate(request)
        except AuthenticationFailed:
            return None
        return found[0] if found else None
    return None


def _slot_key(user) -> str:
    return f"uploads_in_flight_{user.pk}"


def _refusal(request, message: str) -> HttpResponse:
    if request.path.startswith("/api/"):
        response = JsonResponse({"error": message, "status": 429, "code": "throttled"}, status=429)
    else:
        response = HttpResponse(render_to_string("submissions/upload_refused.html", {"message": message},
                                                 request=request), status=429)
    response["Retry-After"] = "60"
    return response


class UploadGateMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        key = getattr(request, "_upload_slot", None)
        if key is not None:
            try:
                cache.decr(key)
            except ValueError:  # expired meanwhile (an upload longer than UPLOAD_SLOT_TTL_S)
                pass
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.method != "POST" or not is_upload_view(request):
            return None
        user = uploader(request)
        if user is None:
            return None
        from submissions.models import Submission

        limit = settings.SUBMISSION_RATE_LIMIT_PER_HOUR
        recent = Submission.objects.filter(submitter=user, created_at__gte=timezone.now() - timedelta(hours=1)).count()
        if recent >= limit:
            return _refusal(request, f"you have submitted {recent} bundles in the last hour; the limit is {limit}. "
                                     "Try again later.")
        key = _slot_key(user)
        cache.add(key, 0, UPLOAD_SLOT_TTL_S)
        try:
            in_flight = cache.incr(key)
        except ValueError:  # expired between add and incr
            cache.add(key, 1, UPLOAD_SLOT_TTL_S)
            in_flight = 1
        cap = settings.SUBMISSION_MAX_CONCURRENT_UPLOADS
        if in_flight > cap:
            try:
                cache.decr(key)
            except ValueError:
                pass
            return _refusal(request, f"you already have {in_flight - 1} uploads in progress; at most {cap} at once. "
                                     "Send the next when one has finished.")
        request._upload_slot = key
        return None
