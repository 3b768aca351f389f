"""What every public catalogue view shares: read-only, strict about its
query string, conditional GET (ETag + 304, conditional.py).

A query parameter the view does not read is refused (400 naming it): a
misspelt filter (`?packs=smoke-chat`) would otherwise return everything and
look like an answer.
"""

from __future__ import annotations

from django.http import Http404
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import generics
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.renderers import JSONRenderer

from registry_site.catalogue.api.conditional import conditional, not_modified
from registry_site.catalogue.api.lookups import whole_number_id
from registry_site.catalogue.api.pagination import CataloguePagination



MAX_NAMED_UNKNOWN = 10


class StrictQueryMixin:
    extra_query_parameters: frozenset[str] = frozenset()
    repeatable_query_parameters: frozenset[str] = frozenset()  # may be given more than once (e.g. compare's runs)

    def query_parameters(self) -> set[str]:
        names = set(self.extra_query_parameters)
        filterset_class = getattr(self, "filterset_class", None)
        if filterset_class is not None:
            names |= filterset_class.query_parameters()
        paginator = getattr(self, "paginator", None)
        if paginator is not None:
            names |= paginator.query_parameters
        return names

    def initial(self, request, *args, **kwargs):
        # Before content negotiation: DRF would answer an unknown ?format= with a bare 404.
        if any("\x00" in str(value) for value in kwargs.values()):
            raise NotFound("no such object: the address contains a NUL character")
        params = request.query_params
        nul = sorted(name for name in params if any("\x00" in value for value in params.getlist(name)))
        if nul:
            raise ValidationError({name[:60]: ["must not contain NUL characters"] for name in nul})
        allowed = self.query_parameters()
        unknown = sorted(set(params) - allowed)
        if unknown:
            accepted = ", ".join(sorted(allowed)) or "none"
            named = {name[:60]: [f"unknown query parameter; this endpoint accepts: {accepted}"]
                     for name in unknown[:MAX_NAMED_UNKNOWN]}
            if len(unknown) > MAX_NAMED_UNKNOWN:
                named["non_field_errors"] = [f"and {len(unknown) - MAX_NAMED_UNKNOWN} more unknown parameters"]
            raise ValidationError(named)
        repeated = sorted(name for name in params if len(params.getlist(name)) > 1
                          and name not in self.repeatable_query_parameters)
        if repeated:
            # One value each: which of two `pack` values would win is not something to guess.
            raise ValidationError({name: ["given more than once; give it once"] for name in repeated})
        super().initial(request, *args, **kwargs)

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if ((response.status_code >= 400 or request.method not in ("GET", "HEAD"))
                and not isinstance(response.accepted_renderer, JSONRenderer)):
            # An error asked for as CSV is still answered in the JSON error shape, and so is OPTIONS's
            # description of the view (a dict, which the CSV renderer cannot write: it was a 500).
            response.accepted_renderer, response.accepted_media_type = JSONRenderer(), "application/json"
        return response


class ConditionalGetMixin:
    # ETag + 304 (conditional.py). A comment, not a docstring: drf-spectacular would show it as every
    # undocumented view's description.
    @classmethod
    def as_view(cls, **initkwargs):
        return conditional(super().as_view(**initkwargs))

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)  # query check, authentication, permissions, throttles
        etag = getattr(request._request, "catalogue_not_modified", None)
        if etag is not None:
            raise _NotModified(etag)

    def handle_exception(self, exc):
        if isinstance(exc, _NotModified):
            return not_modified(exc.etag)
        return super().handle_exception(exc)


class _NotModified(Exception):
    """The client's copy is current: raised after the throttles counted the request, answered as 304."""

    def __init__(self, etag: str):
        super().__init__(etag)
        self.etag = etag


class CatalogueListView(ConditionalGetMixin, StrictQueryMixin, generics.ListAPIView):
    """A paginated, filtered, ordered public list with an ETag."""

    filter_backends = [DjangoFilterBackend]
    pagination_class = CataloguePagination


class CataloguePagedView(ConditionalGetMixin, StrictQueryMixin, generics.GenericAPIView):
    """A paged answer with more than the list envelope (its view writes `get` and declares its schema)."""

    filter_backends = []
    pagination_class = CataloguePagination


class CatalogueDetailView(ConditionalGetMixin, StrictQueryMixin, generics.RetrieveAPIView):
    """One public object by its whole-number id; anything else is a 404 that says what was looked for."""

    noun = "object"
    pagination_class = None  # not paged: ?page= on a detail would be accepted and ignored

    def get_object(self):
        pk = whole_number_id(self.kwargs[self.lookup_field], self.noun)
        try:
            return super().get_object()
        except Http404:
            raise NotFound(f"no public {self.noun} with id {pk}") from None
