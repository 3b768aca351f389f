"""The `<tr>`s of a leaderboard table, built in Python.

Why not the template: a board page is 50 rows of ~15 cells, each a median,
its spread, links and badges. Through template tags and `{% url %}` that is
~20,000 variable lookups and ~200 URL reversals per request, ~20 ms of CPU
(measured on the 1M-row catalogue): most of the page's time, and what caps
its requests/s. The same markup built here with f-strings takes about a
millisecond. Every value that is not a number we formatted goes through
`html.escape` (quotes included), so the output is as safe as autoescaping.
"""

from __future__ import annotations

from html import escape
from urllib.parse import quote, urlencode

from django.utils.safestring import SafeString, mark_safe

from benchpack.measurement.stats import is_number
from benchpack.results import metrics as metric_registry
from registry_site.catalogue.templatetags.catalogue import percent, sig


def _path(prefix: str, value: str) -> str:
    """A model/runtime/hardware page URL, as `{% url %}` gives it (names may hold slashes)."""
    return escape(f"/{prefix}/{quote(value, safe='/')}/")


def badges(e) -> str:
    parts = ['<span class="badge badge-demo">demo data</span>'] if e.is_demo else []
    if e.imported_from:  # measured by another tool (docs/interop.md): said in words, not only on hover
        parts.append('<span class="badge badge-imported" title="measured by another tool, not by Benchpack; ranked '
                     f'only with runs imported from the same tool">{escape(e.imported_from)}</span>')
    parts.append('<span class="badge badge-provenance" title="strongest provenance among the runs behind this row">'
                 f"{escape(e.provenance)}</span>")
    if e.reproduced:
        parts.append('<span class="badge badge-reproduced" title="matched by another submitter on another host">reproduced elsewhere</span>')
    if e.flagged:
        parts.append(f'<span class="badge badge-flagged" title="{escape(e.flag_note)}">flagged</span>')
    if not e.system_complete:
        parts.append('<span class="badge" title="the run does not say this, so rows that differ in it may share '
                     f'this row">{escape(e.unknown_text)}</span>')
    return " ".join(parts)


# What a row's "N suspicious" says on hover; the words beside it are metrics.suspicious_text's count.
SUSPICIOUS_TITLE = ("answers that introspected the verifier (inspected their caller or environment: frames, "
                    "interpreter flags, /proc, …): scored as failed, counted apart from wrong answers")


def suspicious_mark(e) -> str:
    """"1 suspicious" beneath a row's correct count when some of its failed answers were suspicious (issue 31
    item 3): such an answer is never passed, and a board says how many of the failures were that."""
    count = getattr(e, "suspicious_answers", 0)
    if not count:
        return ""
    return f'<br><span class="suspicious" title="{escape(SUSPICIOUS_TITLE)}">{count} suspicious</span>'


def correct_cell(e) -> str:
    """Passed of scored ("2/3"), and beneath it how many of the failures were suspicious answers."""
    return "—" if e.scored is None else f"{e.correct}/{e.scored}{suspicious_mark(e)}"


def pass_cell(e) -> str:
    """The pooled pass rate (tasks passed ÷ tasks scored over every run) and its 95 % Wilson interval."""
    interval = e.pass_interval
    if interval is None:
        return "—"
    return (f'{percent(e.pass_rate)}<br><span class="spread" title="95 % Wilson interval of '
            f'{e.correct} passed of {e.scored} scored">{percent(interval[0])}–{percent(interval[1])}</span>')


VERDICT_WORDS = {"plausible": "plausible", "unchecked": "not checked", "implausible": "implausible"}


def verdict(e) -> str:
    """The row's plausibility verdict in words, its run counts in the title."""
    status = e.plausibility or "unchecked"
    return (f'<span class="verdict plausibility-{escape(status)}" title="{escape(e.plausibility_text)}">'
            f"{escape(VERDICT_WORDS.get(status, status))}</span>")


def _metric_cell(e, name: str, multi: bool) -> str:
    low = getattr(e, f"{name}_min")
    spread = f'<br><span class="spread">{sig(low)}–{sig(getattr(e, f"{name}_max"))}</span>' \
        if multi and is_number(low) else ""
    return f'<td class="num">{sig(getattr(e, name))}{spread}</td>'


def _link_or_dash(prefix: str, value: str, extra: str = "") -> str:
    if not value:
        return "—"
    suffix = f" <small>{escape(extra)}</small>" if extra else ""
    return f'<a href="{_path(prefix, value)}">{escape(value)}</a>{suffix}'


def phone_figure(e, ranked: str | None) -> str:
    """The ranked figure beside the model name, shown only on a phone (issue 32 item 7: at 390 px the
    ranked column was off-screen): the same number the column shows, with its unit."""
    name = (ranked or "").lstrip("-").removesuffix("_min").removesuffix("_max")
    if name not in metric_registry.METRICS:
        return ""
    metric = metric_registry.metric(name)
    value = getattr(e, name, None)
    text = percent(value) if name == "pass_rate" else f"{sig(value)} {metric.unit}".strip()
    return f'<span class="phone-figure">{escape(metric.label)} {escape(text)}</span>'


def per_case(e, figures) -> str:
    """A whole-pack row's TTFT and decode per base case (issue 32 item 4), folded under the model name so a
    phone sees it without scrolling sideways: each case's row on its own board, linked there. The runs behind
    a case are said only where they differ from the row's (some runs ran only some cases). A one-case pack pools
    nothing unlike, so its rows have no fold (the API still lists the one case)."""
    if not figures or len(figures) < 2:
        return ""
    ttft, decode = (metric_registry.metric(name) for name in ("ttft_s", "decode_rate"))
    items = []
    for f in figures:
        href = escape(f"/leaderboards/{quote(e.pack_id, safe='')}/{quote(f.case, safe='')}/?"
                      + urlencode({"workload": f.workload_key}))
        runs = "" if f.runs == e.run_count else f" <small>({f.runs} run{'s' if f.runs != 1 else ''})</small>"
        items.append(f'<li><a href="{href}">{escape(f.case)}</a> {sig(f.ttft_s)} {ttft.unit} · '
                     f"{sig(f.decode_rate)} {decode.unit}{runs}</li>")
    return (f'<details class="per-case"><summary>per case</summary><ul title="{ttft.label} · {decode.label}, '
            f'the median over the runs behind each case\'s own row">{"".join(items)}</ul></details>')


def row(e, rank: int, metric_names: list[str], scored: bool, ranked: str | None = None,
        agent_names: tuple[str, ...] = (), case_figures: dict | None = None) -> str:
    multi = e.run_count > 1
    quantization = f" <small>{escape(e.model_quantization)}</small>" if e.model_quantization else ""
    quantization += phone_figure(e, ranked)
    quantization += per_case(e, (case_figures or {}).get(e.pk))
    cells = [
        f'<td class="num">{rank}</td>',
        f'<td><input type="checkbox" name="runs" value="{e.representative_run_id}" '
        f'aria-label="compare {escape(e.model)} on {escape(e.hardware_class)}"></td>',
        f'<td><a href="{_path("models", e.model)}">{escape(e.model)}</a>{quantization}</td>',
        f"<td>{_link_or_dash('runtimes', e.runtime_name, e.runtime_version)}</td>",
        f"<td class=hw>{_link_or_dash('hardware', e.hardware_class)}</td>",
        *(_metric_cell(e, name, multi) for name in metric_names),
        f'<td class="num">{e.answered}/{e.rows}</td>',
    ]
    if scored:
        cells.append(f'<td class="num">{correct_cell(e)}</td><td class="num">{pass_cell(e)}</td>')
    # the agent's speed over its turns, beside the pass rate of the same runs (metrics.AGENT_METRICS)
    cells.extend(_metric_cell(e, name, multi) for name in agent_names)
    cells.append(f'<td class="num">{e.run_count}</td>')
    cells.append(f"<td>{verdict(e)}</td>")
    cells.append(f"<td>{badges(e)}</td>")
    latest = f'<a href="/runs/{e.representative_run_id}/">{e.last_published_at:%Y-%m-%d}</a>'
    if e.case:
        query = urlencode({"workload": e.workload_key, "model": e.model, "hardware_class": e.hardware_class,
                           "runtime": e.runtime_name})
        latest += f' · <a href="/timelines/?{escape(query)}">timeline</a>'
    cells.append(f"<td>{latest}</td>")
    html = f'<tr{" class=demo-row" if e.is_demo else ""}>{"".join(cells)}</tr>'
    if e.flagged:
        html += (f'<tr class="flag-row"><td></td><td colspan="{len(cells) - 1}" class="flagged">'
                 f"Flagged: {escape(e.flag_note)}</td></tr>")
    return html


TIER_HEADINGS = {
    "unchecked": "Not checked for plausibility — nothing shows these figures are possible on their hardware; "
                 "ranked after the checked rows",
    "implausible": "Implausible for their hardware — published on an operator's written override; ranked last",
}


def rows(entries, first_rank: int, metric_names: list[str], scored: bool, ranked: str | None = None,
         agent_names: tuple[str, ...] = (), case_figures: dict | None = None) -> SafeString:
    """The ranked rows, checked ones first (leaderboard.checked_first), with a heading row where the
    unchecked and implausible groups begin, so they read apart rather than as lower ranks of one list."""
    html, previous = [], None
    width = 8 + len(metric_names) + (2 if scored else 0) + len(agent_names)
    for i, e in enumerate(entries):
        status = e.plausibility or "unchecked"
        if status != previous and status in TIER_HEADINGS and (previous is not None or first_rank > 1 or
                                                               status != "unchecked"):
            html.append(f'<tr class="tier-row tier-{status}"><td colspan="{width + 1}">{TIER_HEADINGS[status]}'
                        "</td></tr>")
        previous = status
        html.append(row(e, first_rank + i, metric_names, scored, ranked, agent_names, case_figures))
    return mark_safe("".join(html))


# The coding table's speeds, in its header's order: the agent's over its turns, then the runner's request.
CODING_TABLE_SPEEDS = (*metric_registry.AGENT_METRICS, "decode_rate", "wall_s")


def coding_rows(rows: list[dict]) -> SafeString:
    """The coding view's table: {"entry", "on_front"} per system, in the same markup style."""
    html = []
    for item in rows:
        e = item["entry"]
        html.append(
            f'<tr><td><a href="/runs/{e.representative_run_id}/">{escape(e.model)}</a></td>'
            f"<td>{escape(e.runtime_name)} {escape(e.runtime_version)}</td><td>{escape(e.hardware_class or '—')}</td>"
            f'<td class="num">{pass_cell(e)}</td><td class="num">{correct_cell(e)}</td>'
            + "".join(f'<td class="num">{sig(getattr(e, name))}</td>' for name in CODING_TABLE_SPEEDS) +
            f'<td class="num">{e.run_count}</td><td>{"on the front" if item["on_front"] else ""}</td>'
            f"<td>{verdict(e)}</td><td>{badges(e)}</td></tr>")
    return mark_safe("".join(html))
