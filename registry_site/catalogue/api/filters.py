"""Query-parameter filters for the public API (django-filter).

Every filter refuses what it does not understand, naming the parameter:
a value of the wrong type, an ordering outside the whitelist, and a value
that names nothing in the public catalogue (`?pack=no-such-pack` is a 400,
not an empty page, so a typo is never mistaken for "no results"). Whether a
value is known is asked of the same public queryset the list is cut from
(the run list asks its precomputed counts, which hold a row for exactly the
values public runs have: registry_site.catalogue.run_counts), so an
unpublished pack is exactly as unknown as a misspelt one.
"""

from __future__ import annotations

import datetime as dt

import django_filters
from django.core.exceptions import ValidationError
from django_filters.constants import EMPTY_VALUES
from django_filters.rest_framework import DjangoFilterBackend

from benchpack.results.provenance import EARNED as PROVENANCES
from registry_site.catalogue import run_counts
from registry_site.catalogue.models import PublishedRun


class CatalogueFilterSet(django_filters.FilterSet):
    """A FilterSet whose `known_values` filters must name something in `self.queryset`."""

    known_values: dict[str, str] = {}  # filter name -> model field it must match exactly

    def is_valid(self) -> bool:
        if not super().is_valid():
            return False
        for name, flt in self.filters.items():
            # django-filter reads `?order=` or `?since=` as "no filter"; the schema says a value is a
            # choice, a date or a number, and "" is none of them. Text filters may be empty.
            if not isinstance(flt, django_filters.CharFilter) and self.data.get(name) == "":
                self.form.add_error(name, "must not be empty: give a value or leave the parameter out")
        for name, field in self.known_values.items():
            value = self.form.cleaned_data.get(name)
            if value in (None, ""):
                continue
            if not self.is_known(field, value):
                # django-filter formats each message with `%`: the value goes in as a parameter, never
                # into the message text, or a value holding '%' breaks the formatting (a 500).
                self.form.add_error(name, ValidationError("no public result has %(name)s %(value)s",
                                                          params={"name": name, "value": repr(value)}))
        return not self.form.errors

    def is_known(self, field: str, value) -> bool:
        """Whether a row of `self.queryset` has `value` in `field`."""
        return self.queryset.filter(**{field: value}).exists()

    @classmethod
    def query_parameters(cls) -> set[str]:
        """The query-string names this FilterSet reads (a range filter reads `<name>_after`/`<name>_before`)."""
        names = set()
        for name, flt in cls.base_filters.items():
            suffixes = getattr(flt.field.widget, "suffixes", None)
            if suffixes:
                names.update(f"{name}_{suffix}" for suffix in suffixes)
            else:
                names.add(name)
        return names


class KeptFilterSetBackend(DjangoFilterBackend):
    """django-filter's backend, leaving the filterset it validated on the view (`view.filterset`): the run
    list answers its count from it (`RunFilter.precounted_total`) without validating the query again."""

    def get_filterset(self, request, queryset, view):
        filterset = super().get_filterset(request, queryset, view)
        view.filterset = filterset
        return filterset


def _utc_midnight(day: dt.date) -> dt.datetime:
    return dt.datetime.combine(day, dt.time.min, tzinfo=dt.timezone.utc)


class PublishedDayFilter(django_filters.DateFilter):
    """A day (UTC) as a range on `published_at`: on or after it is `>=` its midnight, on or before it is `<` the
    next day's midnight. The same runs as `published_at__date__gte/lte` with TIME_ZONE = "UTC", but a range an
    index on published_at serves, where the `__date` cast of every row is served by none (issue 34 item 4)."""

    def __init__(self, *, on_or_after: bool, **kwargs):
        self.on_or_after = on_or_after
        super().__init__(field_name="published_at", lookup_expr="gte" if on_or_after else "lt", **kwargs)

    def filter(self, qs, value):
        if value in EMPTY_VALUES:
            return qs
        if self.on_or_after:
            return qs.filter(published_at__gte=_utc_midnight(value))
        if value == dt.date.max:
            return qs  # every run was published on or before the last day there is (and it has no next day)
        return qs.filter(published_at__lt=_utc_midnight(value + dt.timedelta(days=1)))


def published_on_or_after() -> PublishedDayFilter:
    return PublishedDayFilter(on_or_after=True, help_text="published on or after this day (YYYY-MM-DD, UTC)")


def published_on_or_before() -> PublishedDayFilter:
    return PublishedDayFilter(on_or_after=False, help_text="published on or before this day (YYYY-MM-DD, UTC)")


class TieBrokenOrderingFilter(django_filters.OrderingFilter):
    """`?order=`, with ties broken by id in the direction of the first key (`-published` is newest first, and
    newest id first among runs published at the same instant), so the order is total: a page number always
    cuts the same rows, and an index over (key…, id) serves it (django-filter's own order_by had no tie-break)."""

    def filter(self, qs, value):
        if value in EMPTY_VALUES:
            return qs
        ordering = [self.get_ordering_value(param) for param in value]
        if not any(key.lstrip("-") in ("id", "pk") for key in ordering):
            ordering.append("-id" if ordering[0].startswith("-") else "id")
        return qs.order_by(*ordering)


class RunFilter(CatalogueFilterSet):
    pack = django_filters.CharFilter(field_name="pack_id", help_text="pack id, e.g. smoke-chat")
    pack_version = django_filters.CharFilter(help_text="pack version, e.g. 1.0.0 (with or without pack)")
    model = django_filters.CharFilter(help_text="model name exactly as published")
    runtime = django_filters.CharFilter(help_text="runtime name and version, e.g. 'llama.cpp b4000'")
    hardware_class = django_filters.CharFilter(help_text="hardware class exactly as published")
    provenance = django_filters.ChoiceFilter(choices=[(p, p) for p in PROVENANCES])
    # All runs by default (a list of runs hides nothing; the board index leaves imported boards out unless
    # asked, docs/interop.md); `exclude` keeps only runs Benchpack measured, `only` those another tool did.
    imported = django_filters.ChoiceFilter(
        choices=[("include", "include"), ("exclude", "exclude"), ("only", "only")], method="filter_imported",
        help_text="runs measured by another tool and imported (`benchpack import`, `imported_from` set): "
                  "include (default), exclude or only")
    since = published_on_or_after()
    until = published_on_or_before()
    order = TieBrokenOrderingFilter(
        fields=(("published_at", "published"), ("pack_id", "pack"), ("model", "model"), ("runtime", "runtime"),
                ("hardware_class", "hardware_class"), ("row_count", "rows"), ("id", "id")),
        help_text="sort key; prefix '-' for descending; default -published",
    )

    def filter_imported(self, queryset, name, value):
        if value == "exclude":
            return queryset.filter(imported_from="")
        if value == "only":
            return queryset.exclude(imported_from="")
        return queryset

    known_values = {"pack": "pack_id", "pack_version": "pack_version", "model": "model", "runtime": "runtime",
                    "hardware_class": "hardware_class"}

    # Filters the precomputed count table answers (registry_site.catalogue.run_counts): filter name -> its
    # column, each an equality on it. `order` sorts and filters nothing. Any other filter given (since, until)
    # and the count is the list's own COUNT.
    PRECOUNTED = {**known_values, "provenance": "provenance"}
    IMPORTED = {"exclude": False, "only": True}  # imported=include is no filter

    def is_known(self, field: str, value) -> bool:
        # A public run has the value exactly when a count row has it (a group with no public run has no row):
        # a lookup in the small count table, not in the runs.
        return run_counts.is_known(field, value)

    def precounted_total(self) -> int | None:
        """The number of public runs this (valid) filtering selects, from the count table; None when a filter
        it does not key on is given, and the caller counts the filtered list itself."""
        columns = {}
        for name, value in self.form.cleaned_data.items():
            if value in (None, "") or name == "order" or (name == "imported" and value == "include"):
                continue  # not given, or no filter: django-filter leaves the list as it is
            if name == "imported":
                columns["imported"] = self.IMPORTED[value]
            elif name in self.PRECOUNTED:
                columns[self.PRECOUNTED[name]] = value
            else:
                return None
        return run_counts.total(**columns)

    class Meta:
        model = PublishedRun
        fields = ["pack", "pack_version", "model", "runtime", "hardware_class", "provenance", "since", "until"]

