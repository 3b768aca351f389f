"""Number formatting for the catalogue pages: `{{ value|sig }}` shows 3–4 significant figures."""

from __future__ import annotations

from django import template

from benchpack.measurement.stats import is_number

register = template.Library()


@register.filter
def sig(value, digits: int = 4) -> str:
    """0.012345 -> "0.01235", 1234.5 -> "1235", None -> "—"; large and small values stay readable."""
    if not is_number(value):
        return "—"
    if value == 0:
        return "0"
    if abs(value) >= 10 ** digits:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


@register.filter
def percent(value) -> str:
    return "—" if not is_number(value) else f"{value:.0%}"


@register.filter
def get_param(mapping, key):
    """`{{ params|get_param:name }}`: a lookup by a variable key (QueryDict, dict or None)."""
    if mapping is None:
        return None
    getter = getattr(mapping, "get", None)
    return getter(key) if getter else None


@register.filter
def metric(entry, name: str):
    return getattr(entry, name, None)


@register.filter
def metric_min(entry, name: str):
    return getattr(entry, f"{name}_min", None)


@register.filter
def metric_max(entry, name: str):
    return getattr(entry, f"{name}_max", None)


@register.inclusion_tag("registry_site/_run_placements.html")
def run_placements(run):
    """Where this run is ranked, with links (issue 32 item 3)."""
    from registry_site.catalogue.leaderboard import placements

    return {"placements": placements(run), "run": run}
