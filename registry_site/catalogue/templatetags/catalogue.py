"""Number formatting for the catalogue pages: `{{ value|sig }}` shows 3–4 significant figures."""

from __future__ import annotations

from django import template

from benchpack.measurement.stats import is_number
from registry_site.catalogue.pack_words import pack_words as words_of

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
def correct_cell(entry) -> str:
    """A leaderboard row's "2/3", and "1 suspicious" beneath it when some failures were suspicious answers:
    the boards' own markup (pages.board_rows), so every page that shows a row's correct count says the same."""
    from django.utils.safestring import mark_safe

    from registry_site.catalogue.pages.board_rows import correct_cell as cell

    return mark_safe(cell(entry))  # escaped where it holds text (board_rows.suspicious_mark)


@register.inclusion_tag("registry_site/_run_placements.html")
def run_placements(run):
    """Where this run is ranked, with links (issue 32 item 3)."""
    from registry_site.catalogue.leaderboard import placements

    found, more = placements(run)
    return {"placements": found, "more": more, "run": run}


_UPPER = {"amd", "nvidia", "rtx", "gtx", "gpu", "epyc", "ai", "hbm3", "mi300x", "xt", "xtx"}


@register.filter
def hardware_words(hardware_class: str) -> str:
    """A hardware class in words (issue 32 item 5): "amd-ryzen-9-7950x+nvidia-geforce-rtx-4090+64gb" ->
    "AMD Ryzen 9 7950X · NVIDIA GeForce RTX 4090 · 64 GB"; "apple-m4-pro-64gb" -> "Apple M4 Pro · 64 GB";
    "…+no-gpu+16gb" -> "… · no GPU · 16 GB". The class itself stays the link and the filter value."""
    import re

    if not hardware_class:
        return "hardware not recorded"

    def words(part: str) -> str:
        out = []
        for token in part.split("-"):
            if re.fullmatch(r"\d+x", token):  # "2x-nvidia-…": two of them
                out.append(f"{token[:-1]} ×")
                continue
            if token in _UPPER or (re.search(r"\d", token) and len(token) <= 6 and not token.isdigit()):
                token = token.upper() if token != "geforce" else "GeForce"
            elif token == "geforce":
                token = "GeForce"
            else:
                token = token.capitalize() if token not in ("no",) else token
            out.append(token)
        return " ".join(out).replace("No GPU", "no GPU")

    parts = hardware_class.split("+")
    ram = re.fullmatch(r"(\d+)gb", parts[-1])
    if len(parts) == 1:  # Apple silicon: chip and memory in one
        found = re.fullmatch(r"(.+)-(\d+)gb", hardware_class)
        return f"{words(found.group(1))} · {found.group(2)} GB" if found else words(hardware_class)
    shown = [words(p) if p != "no-gpu" else "no GPU" for p in (parts[:-1] if ram else parts)]
    return " · ".join(shown + ([f"{ram.group(1)} GB"] if ram else []))


@register.filter
def pack_words(pack_id: str):
    """`{% with w=run.pack_id|pack_words %}`: the pack's kind of work, title and description
    (registry_site.catalogue.pack_words; issue 32 item 5)."""
    return words_of(pack_id or "")


@register.filter
def pack_label(pack_id: str) -> str:
    """"Chat speed · Short, medium and long prompts"; the id itself for a pack with no words."""
    return pack_words(pack_id).label
