"""Leaderboard pages: the index of boards, one board per pack / case, and the coding view.

Every ranking comes from `registry_site.catalogue.leaderboard` (the API uses the
same functions); this module only turns request parameters into its
arguments and its rows into a page. Every view is a plain GET URL, so a
filtered, sorted, paged board can be shared as a link.
"""

from __future__ import annotations

import functools
from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.db.models import Q
from django.http import Http404
from django.shortcuts import render

from benchpack.reporting.xy_charts import XYPoint, pareto_front, scatter_chart
from benchpack.results import metrics as metric_registry
from registry_site.catalogue import leaderboard as lb
from registry_site.catalogue.pages import board_rows
from registry_site.catalogue.pages.depth_curves import DEPTH_MARK
from registry_site.catalogue.pages.fitted_charts import at_both_widths

PER_PAGE = 50
# Columns of a board: (metric, heading, unit), labels from benchpack.results.metrics. Each shows its
# median with the runs' min–max beside it. decode is 1/tpot_s; the legacy decode_tps is not a board column.
METRIC_COLUMNS = tuple((name, metric_registry.label(name), metric_registry.metric(name).unit)
                       for name in ("decode_rate", "ttft_s", "prefill_tps", "tpot_s", "wall_s"))
# Filters offered as a list of the values present on the board (the rest are free text or dates).
CHOICE_FILTERS = (("model_family", "Model family", "model_family"),
                  ("quantization", "Quantization", "model_quantization"),
                  ("runtime", "Runtime", "runtime_name"), ("runtime_version", "Runtime version", "runtime_version"),
                  ("hardware_class", "Hardware class", "hardware_class"))
# The agent's figures over its turns (metrics.AGENT_METRICS), shown beside the pass rate on a board
# whose runs measured an external agent's sessions (issue 29 item 5).
AGENT_COLUMNS = tuple((name, metric_registry.label(name), metric_registry.metric(name).unit)
                      for name in metric_registry.AGENT_METRICS)
CODING_SPEEDS = {"agent_decode_rate": ("agent decode over its turns (1/TPOT)", "tok/s", True),
                 "time_to_solution_s": ("agent's time to solution per task", "s", False),
                 "decode_rate": ("decode speed (1/TPOT)", "tok/s", True),
                 "wall_s": ("wall time per task", "s", False)}
CODING_TABLE_COLUMNS = tuple((metric_registry.label(name), metric_registry.metric(name).unit)
                             for name in board_rows.CODING_TABLE_SPEEDS)


def index(request):
    """Boards of Benchpack-measured runs; boards of imported runs (other tools' measurements) only on request,
    listed apart and labelled (`?imported=include|only`, docs/interop.md)."""
    try:
        imported = lb.imported_choice(request.GET.get("imported"))
    except lb.QueryError as error:
        return _query_error(request, error)
    every = lb.boards()
    boards: dict[str, list[dict]] = {}
    imported_boards: dict[str, list[dict]] = {}
    for board in every:
        into = imported_boards if board["imported_from"] else boards
        into.setdefault(board["pack_id"], []).append(board)
    return render(request, "registry_site/leaderboards/index.html",
                  {"boards": boards if imported != "only" else {},
                   "imported_boards": imported_boards if imported != "exclude" else {},
                   "imported_hidden": len(imported_boards) if imported == "exclude" else 0,
                   "coding_packs": sorted(coding_pack_ids())})


def _query_error(request, error: lb.QueryError, context: dict | None = None):
    return render(request, "registry_site/leaderboards/error.html",
                  {"param": error.param, "message": error.message, **(context or {})}, status=400)


def board(request, pack_id: str, case: str = ""):
    try:
        filters = lb.Filters.from_params(request.GET)
        order = request.GET.get("order") or None
        if order:
            lb.ordering(order)
        found = lb.leaderboard(pack_id, case, request.GET.get("workload") or None, filters, order)
        order = found.order  # unnamed: the first figure every row of this board has (lb.board_order)
    except lb.QueryError as error:
        return _query_error(request, error, {"pack_id": pack_id, "case": case})
    if found.workload is None:
        raise Http404("no public results for this pack and case")
    # The JSON inputs of every row are not shown in the table; decoding them was a tenth of the page's time.
    page = Paginator(found.entries.defer("workload_fields", "system_fields"), PER_PAGE).get_page(
        request.GET.get("page"))
    kept = {k: v for k, v in request.GET.items() if k not in ("page", "order") and v}
    scored = found.entries.filter(scored__isnull=False).exists()
    agent = has_agent_figures(found.entries)
    agent_columns = AGENT_COLUMNS if agent else ()
    first_rank = page.start_index() if page.paginator.count else 1
    cases = _cases_of(pack_id)
    entries = list(page.object_list)
    return render(request, "registry_site/leaderboards/board.html", {
        "rows": board_rows.rows(entries, first_rank, [name for name, _, _ in METRIC_COLUMNS], scored,
                                ranked=order, agent_names=tuple(name for name, _, _ in agent_columns),
                                # a whole-pack row's TTFT and decode per base case, from the case boards' rows
                                case_figures=lb.case_figures(entries)),
        # the filters fold away (a phone saw ~700 px of them before the table) unless one is in use
        "filtered": any(k not in ("workload",) for k in kept) or "order" in request.GET,
        "board": found,
        "pack_id": pack_id,
        "case": case,
        "page": page,
        "columns": _sort_links(kept, order),
        "metric_columns": METRIC_COLUMNS,
        "agent_columns": agent_columns,
        "filters": filters,
        "choices": _choices(pack_id, case, found.workload.key),
        "provenances": lb.PROVENANCES,
        "query": urlencode({**kept, "order": order}),
        "params": request.GET,
        "scored": scored,
        # some row of this board (any page) failed answers as suspicious: the note says what that means
        "suspicious": scored and found.entries.filter(suspicious_answers__gt=0).exists(),
        "rank_choices": _rank_choices(order, scored, agent),
        "order_label": lb.order_label(order),
        "cases": cases,
        "has_depth_lane": any(DEPTH_MARK in c for c in cases),
    })


RANK_CHOICES = (("decode_rate", "decode speed, 1/TPOT (fastest first)"), ("ttft_s", "time to first token (lowest first)"),
                ("prefill_tps", "prefill speed (fastest first)"), ("tpot_s", "time per output token (lowest first)"),
                ("wall_s", "wall time (lowest first)"), ("run_count", "runs behind the row (most first)"),
                ("last_published_at", "latest run (newest first)"))


WORDS = {"decode_tps": "decode speed", "ttft_s": "time to first token", "prefill_tps": "prefill speed",
         "tpot_s": "time per output token", "wall_s": "wall time", "pass_rate": "pass rate", "run_count": "runs",
         "model_family": "model family", "model_quantization": "quantization", "runtime_name": "runtime",
         "runtime_version": "runtime version", "hardware_class": "hardware class",
         "first_published_at": "first run", "last_published_at": "latest run",
         **{name: metric_registry.label(name) for name in metric_registry.AGENT_METRICS}}


def column_words(name: str) -> str:
    """A sortable column in words for the page ("decode_tps_min" -> "decode speed, lowest run")."""
    for suffix, words in (("_min", ", lowest run"), ("_max", ", highest run")):
        if name.endswith(suffix) and name.removesuffix(suffix) in WORDS:
            return WORDS[name.removesuffix(suffix)] + words
    return WORDS.get(name, name.replace("_", " "))


def has_agent_figures(entries) -> bool:
    """Whether any row of a board has an agent session's figures (its runs had an agent solve the tasks)."""
    return entries.filter(Q(agent_decode_rate__isnull=False) | Q(agent_ttft_s__isnull=False) |
                          Q(time_to_solution_s__isnull=False)).exists()


def _rank_choices(order: str, scored: bool, agent: bool = False) -> list[tuple[str, str]]:
    """The metrics a board is usually ranked by; a column sorted from its header is kept as an option."""
    choices = list(RANK_CHOICES)
    if scored:
        choices.insert(1, ("pass_rate", "pass rate (highest first)"))
    if agent:
        best = {metric_registry.HIGHER: "highest first", metric_registry.LOWER: "lowest first"}
        choices[2:2] = [(name, f"{metric_registry.label(name)} over the agent's turns "
                               f"({best[metric_registry.metric(name).direction]})")
                        for name in metric_registry.AGENT_METRICS]
    if order not in dict(choices):
        choices.append((order, f"{column_words(order.lstrip('-'))} ({'reversed' if order.startswith('-') else 'best first'})"))
    return choices


def _sort_links(kept: dict, order: str) -> dict[str, dict]:
    """Per sortable column: the URL that sorts by it (best first), or reversed when it is the current order."""
    links = {}
    current = order.lstrip("-")
    for name in lb.SORTABLE:
        target = f"-{name}" if name == current and not order.startswith("-") else name
        links[name] = {"href": "?" + urlencode({**kept, "order": target}), "sorted": name == current,
                       "reversed": order.startswith("-") and name == current}
    return links


def _choices(pack_id: str, case: str, workload_key: str) -> list[tuple[str, str, list[str]]]:
    """(parameter, label, the values present on this workload's board) for each list filter."""
    entries = lb.leaderboard_entries(pack_id, case, workload_key)
    combos = list(entries.order_by().values_list(*(column for _, _, column in CHOICE_FILTERS)).distinct())
    return [(param, label, sorted({combo[i] for combo in combos if combo[i]}))
            for i, (param, label, _) in enumerate(CHOICE_FILTERS)]


def _cases_of(pack_id: str, limit: int = 200) -> list[str]:
    """The pack's other case boards for the tabs (one indexed DISTINCT, not lb.boards() over every pack)."""
    from registry_site.catalogue.models import LeaderboardEntry

    return list(LeaderboardEntry.objects.filter(pack_id=pack_id).exclude(case="").order_by("case")
                .values_list("case", flat=True).distinct()[:limit])


@functools.lru_cache(maxsize=1)
def coding_pack_ids() -> frozenset[str]:
    """Bundled packs with repo-task cases: the ones the coding view ranks (read once per process)."""
    from benchpack.packs.loader import bundled_packs_dir, load_pack

    found = set()
    for path in sorted(bundled_packs_dir().iterdir()):
        if not (path / "benchpack.toml").is_file():
            continue
        try:
            pack = load_pack(path)
        except Exception:  # noqa: BLE001 - a broken bundled pack is the pack tests' business, not this page's
            continue
        if any(case.kind == "repo-task" for case in pack.cases):
            found.add(pack.id)
    return frozenset(found)


def _default_speed(packs: list[str], pack_id: str) -> str:
    """The agent's decode over its turns when a system of the pack has one (an agent solved its tasks),
    else decode speed, unless no system has one either (a pack that does not stream measures no decode
    rate): then wall time per task, so the chart has points rather than an empty frame."""
    from registry_site.catalogue.models import LeaderboardEntry

    if pack_id not in packs:
        return "decode_rate"
    entries = LeaderboardEntry.objects.filter(pack_id=pack_id, case="")
    if entries.filter(agent_decode_rate__isnull=False).exists():
        return "agent_decode_rate"
    if not entries.filter(decode_rate__isnull=False).exists():
        return "wall_s"
    return "decode_rate"


def coding(request):
    """Repo-task pass rate against speed, one point per system, with the Pareto front marked."""
    packs = [b["pack_id"] for b in lb.boards() if b["case"] == "" and b["pack_id"] in coding_pack_ids()]
    pack_id = request.GET.get("pack") or (packs[0] if packs else "")
    speed = request.GET.get("speed") or _default_speed(packs, request.GET.get("pack") or (packs[0] if packs else ""))
    context = {"packs": packs, "pack_id": pack_id, "speed": speed, "speeds": CODING_SPEEDS, "params": request.GET}
    try:
        if speed not in CODING_SPEEDS:
            raise lb.QueryError("speed", f"{speed!r} is not one of {', '.join(CODING_SPEEDS)}")
        if pack_id and pack_id not in coding_pack_ids():
            raise lb.QueryError("pack", f"{pack_id!r} is not a coding (repo-task) pack")
        filters = lb.Filters.from_params({k: request.GET.get(k) for k in ("hardware_class", "accelerator",
                                                                           "provenance", "since", "until")})
        found = lb.leaderboard(pack_id, "", request.GET.get("workload") or None, filters, "pass_rate") \
            if pack_id else None
    except lb.QueryError as error:
        return _query_error(request, error, context)
    if found is None or found.workload is None:
        return render(request, "registry_site/leaderboards/coding.html", {**context, "board": None})
    entries = list(found.entries.filter(scored__isnull=False).defer("workload_fields", "system_fields")[:500])
    label, unit, higher = CODING_SPEEDS[speed]
    points = [XYPoint(x=getattr(e, speed), y=e.pass_rate, label=f"{e.model} · {e.runtime_name} {e.runtime_version}",
                      series=e.accelerator or e.hardware_class or "hardware not recorded",
                      href=f"/runs/{e.representative_run_id}/",
                      detail=f"{e.correct}/{e.scored} correct over {e.run_count} run(s) · {e.plausibility_text}"
                             + (f" · {e.suspicious_answers} suspicious" if e.suspicious_answers else "")
                             + (" · demo data" if e.is_demo else ""))
              for e in entries]
    front = pareto_front(points, x_higher_is_better=higher)
    # drawn at 640 and at a phone's width, each laid out for its own (issue 32 item 7)
    chart = at_both_widths(lambda width, css_class: scatter_chart(
        points, title=f"{pack_id}: pass rate against {label}", x_label=label, x_unit=unit, y_label="pass rate",
        front=front, width=width, css_class=css_class))
    on_front = {id(p) for p in front}
    rows = [{"entry": e, "on_front": id(p) in on_front} for e, p in zip(entries, points)]
    every = lb.leaderboard_entries(pack_id, "", found.workload.key).order_by()
    hardware = sorted(h for h in every.values_list("hardware_class", flat=True).distinct() if h)
    return render(request, "registry_site/leaderboards/coding.html",
                  {**context, "board": found, "chart": chart, "rows": rows, "table_rows": board_rows.coding_rows(rows),
                   "table_columns": CODING_TABLE_COLUMNS,
                   "suspicious": any(e.suspicious_answers for e in entries),
                   "hardware_classes": hardware})
