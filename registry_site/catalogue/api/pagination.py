"""Every list answers one envelope: {"count", "next", "previous", "results"}.

DRF's PageNumberPagination already writes that envelope and its schema; this
class only refuses what DRF would quietly bend: a page size above the maximum
(DRF clamps it), a page size or page that is not a positive integer (DRF
falls back to the default, or answers an unnamed 404).
"""

from __future__ import annotations

import functools

from django.conf import settings
from django.core.paginator import Paginator
from django.utils.functional import cached_property
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.pagination import PageNumberPagination

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 500


def positive_int(request, name: str) -> int | None:
    raw = request.query_params.get(name)
    if raw is None:
        return None
    if not raw.isascii() or not raw.isdigit() or int(raw) < 1:
        raise ValidationError({name: [f"must be a whole number of at least 1, not {raw[:40]!r}"]})
    return int(raw)


class _KnownCountPaginator(Paginator):
    """Django's Paginator told the list's length when the view knows it already (the run list's precounted
    total, registry_site.catalogue.run_counts); it counts the list itself otherwise."""

    def __init__(self, object_list, per_page, *, known_count: int | None = None, **kwargs):
        super().__init__(object_list, per_page, **kwargs)
        self.known_count = known_count

    @cached_property
    def count(self) -> int:
        return Paginator.count.func(self) if self.known_count is None else self.known_count


class CataloguePagination(PageNumberPagination):
    page_size = getattr(settings, "API_PAGE_SIZE", DEFAULT_PAGE_SIZE)
    page_size_query_param = "page_size"
    max_page_size = MAX_PAGE_SIZE

    def get_page_size(self, request):
        asked = positive_int(request, self.page_size_query_param)
        if asked is None:
            return self.page_size
        if asked > self.max_page_size:
            raise ValidationError({self.page_size_query_param: [f"at most {self.max_page_size}, not {asked}"]})
        return asked

    def paginate_queryset(self, queryset, request, view=None):
        number = positive_int(request, self.page_query_param) or 1
        # A view that knows how many rows its filtered list holds without counting them says so
        # (`precounted_total`, the run list); the page is cut from the queryset either way.
        precounted = getattr(view, "precounted_total", None)
        self.known_count = precounted() if precounted is not None else None
        self.django_paginator_class = functools.partial(_KnownCountPaginator, known_count=self.known_count)
        try:
            return super().paginate_queryset(queryset, request, view)
        except NotFound:
            raise NotFound(f"page {number} is past the last page ({self._last_page(queryset, request)})") from None

    def _last_page(self, queryset, request) -> int:
        size = self.get_page_size(request)
        # The board index pages a list, not a queryset (list.count() takes an argument: it was a 500).
        total = (self.known_count if self.known_count is not None
                 else len(queryset) if isinstance(queryset, (list, tuple)) else queryset.count())
        return max(1, -(-total // size))

    @property
    def query_parameters(self) -> set[str]:
        return {self.page_query_param, self.page_size_query_param}
