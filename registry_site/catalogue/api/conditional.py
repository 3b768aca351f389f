"""Conditional GET for the catalogue API: an ETag from the catalogue's generation, so a 304 skips the queries.

The ETag of a GET is a digest of (the catalogue generation, the API's code,
host, scheme, path and query, Accept). The generation
(`registry_site.catalogue.models.CatalogueGeneration`) grows inside every transaction
that changes what the public side shows, so two answers with the same ETag
have the same bytes; the digest of this package's source stands in for a
deploy that changes a response's shape. A request whose If-None-Match holds
the current ETag gets 304 after one one-row query and the view's query-string
check, authentication and throttles (a 304 is counted like any answer),
before the view's own queries run.

Without a generation row (a database not migrated that far) the ETag is a
hash of the rendered body instead (Django's ConditionalGetMiddleware): still
correct, but the view runs every time.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from django.http import HttpResponseNotModified
from django.middleware.http import ConditionalGetMiddleware
from django.utils.decorators import decorator_from_middleware
from django.utils.http import parse_etags

from registry_site.catalogue.cache import current_generation

by_body_hash = decorator_from_middleware(ConditionalGetMiddleware)


@functools.cache
def _code_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).resolve().parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def catalogue_etag(request) -> str | None:
    generation = current_generation()
    if generation is None:
        return None
    parts = (_code_digest(), str(generation), request.get_host(), request.scheme, request.get_full_path(),
             request.META.get("HTTP_ACCEPT", ""))
    return '"' + hashlib.sha256("\n".join(parts).encode()).hexdigest()[:40] + '"'


def conditional(view):
    fallback = by_body_hash(view)

    @functools.wraps(view)
    def wrapped(request, *args, **kwargs):
        if request.method not in ("GET", "HEAD"):
            return view(request, *args, **kwargs)
        etag = catalogue_etag(request)
        if etag is None:
            return fallback(request, *args, **kwargs)
        asked = parse_etags(request.META.get("HTTP_IF_NONE_MATCH", ""))
        if etag in asked or "*" in asked:
            # Answered by the view's `initial` (ConditionalGetMixin) once its query check, authentication
            # and throttles have run: a 304 is counted like any answer (uncounted, 600 of 600 passed).
            request.catalogue_not_modified = etag
            return view(request, *args, **kwargs)
        response = view(request, *args, **kwargs)
        if response.status_code == 200:
            response["ETag"] = etag
            response["Vary"] = "Accept"
        return response

    return wrapped


def not_modified(etag: str) -> HttpResponseNotModified:
    response = HttpResponseNotModified()
    response["ETag"] = etag
    response["Vary"] = "Accept"
    return response
