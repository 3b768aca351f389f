"""`registry site`: a static, read-only view of the registry.

Writes `index.html` (dense run, case-metric and agent-wrap tables) and
`report.md` (the registry report). Every value from the database is
HTML-escaped: labels, notes and model names come from user-supplied files.
"""

from __future__ import annotations

import html
import json
import sqlite3
from pathlib import Path

from benchpack.reporting import charts
from benchpack.results.cache_state import CACHED, COLD, UNKNOWN, group_cache_state, server_prefill_tps
from benchpack.measurement.stats import median
from benchpack.errors import BenchpackError, Problem
from benchpack.registry.report import render_registry_report
from benchpack.registry.schema import key_json_columns

# Built to fit a 1280 px window: text cells wrap (long labels, model names),
# numbers never do; the case table keeps to the columns a reader decides with.
STYLE = """
body{font:13px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:1240px}
table{border-collapse:collapse;margin:.5em 0 2em;max-width:100%}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#f3f3f3;position:sticky;top:0}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap;overflow-wrap:normal}
.warn{color:#a40}
svg{max-width:100%;height:auto}
"""


def _fmt(value, digits: int | None = None) -> str:
    if value is None:
        return "—"
    if isinstance(value, float) and digits is not None:
        return f"{value:.{digits}f}"
    return str(value)


def _cell(value, digits: int | None = None, numeric: bool = False, css: str = "", title: str = "") -> str:
    classes = " ".join(c for c in ("n" if numeric else "", css) if c)
    attrs = f' class="{classes}"' if classes else ""
    if title:
        attrs += f' title="{html.escape(title, quote=True)}"'
    return f"<td{attrs}>{html.escape(_fmt(value, digits))}</td>"


def _table(headers: list[str], rows: list[str]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def runs_table(conn: sqlite3.Connection) -> str:
    rows = []
    for r in conn.execute(
        "SELECT label, source, packs, row_count, ok_count, cpu_model, hardware_class, runtime_name,"
        " runtime_version, model_quantization, imported_at, result_dir FROM runs ORDER BY id"
    ):
        label, source, packs, n, ok, host, hw, rt_name, rt_version, quant, imported, result_dir = r
        runtime = " ".join(v for v in (rt_name, rt_version) if v) or None
        rows.append("<tr>" + "".join([
            _cell(label, title=result_dir), _cell(source), _cell(packs), _cell(n, numeric=True),
            _cell(ok, numeric=True, css="warn" if ok != n else ""), _cell(host), _cell(hw),
            _cell(runtime), _cell(quant), _cell(imported),
        ]) + "</tr>")
    return _table(["run", "source", "packs", "rows", "ok", "host", "hardware class", "runtime",
                   "quantization", "imported"], rows)


GroupKey = tuple  # (run_id, pack_id, pack_version, case_id, adapter, model)


def group_details(conn: sqlite3.Connection) -> dict[GroupKey, dict]:
    """Per run/case group: its prompt-cache state (benchpack.results.cache_state) and the
    median of the server's own prefill rate, read from the ok rows."""
    rows: dict[GroupKey, list[dict]] = {}
    for (run_id, pack, version, case, adapter, model, prompt, cached, policy, server_rate, ollama_rate) in conn.execute(
        "SELECT run_id, pack_id, pack_version, case_id, adapter, model, prompt_tokens, cached_prompt_tokens,"
        " json_extract(raw_json, '$.prompt_cache'), json_extract(raw_json, '$.backend.prompt_per_second'),"
        " json_extract(raw_json, '$.backend.prefill_tps') FROM result_rows WHERE ok = 1"
    ):
        rows.setdefault((run_id, pack, version, case, adapter, model), []).append({
            "tokens": {"prompt": prompt, "cached_prompt": cached},
            "prompt_cache": json.loads(policy) if isinstance(policy, str) else None,
            "backend": {"prompt_per_second": server_rate, "prefill_tps": ollama_rate},
        })
    return {key: {"state": group_cache_state(group),
                  "server_prefill": median([server_prefill_tps(r) for r in group])}
            for key, group in rows.items()}


def case_table(conn: sqlite3.Connection) -> str:
    details = group_details(conn)
    stored, joins = key_json_columns("s")  # the fingerprint JSON lives once per value in key_json
    rows = []
    for r in conn.execute(
        "SELECT runs.label, s.pack_id, s.pack_version, s.case_id, s.adapter, s.model, s.row_count,"
        " s.ok_count, s.median_wall_s, s.median_ttft_s, s.median_prefill_tps, s.median_decode_rate,"
        " s.median_total_tps, s.median_output_tokens, s.median_prompt_tokens, s.prompt_token_rows,"
        " s.median_cached_prompt_tokens, s.cached_prompt_rows, s.scored_count, s.passed_count,"
        f" s.fingerprint, {stored['fingerprint_json']}, s.run_id"
        " FROM result_case_stats s JOIN runs ON runs.id = s.run_id" + joins +
        " ORDER BY s.pack_id, s.pack_version, s.case_id, runs.id"
    ):
        (label, pack, version, case, adapter, model, n, ok, wall, ttft, prefill, decode, total,
         output, prompt, prompt_rows, cached, cached_rows, scored, passed, digest, fp_json, run_id) = r
        detail = details.get((run_id, pack, version, case, adapter, model), {"state": UNKNOWN, "server_prefill": None})
        details_fp = json.loads(fp_json) if fp_json else {"unknown": [], "fields": {}}
        unknown = details_fp.get("unknown") or []
        fp_text = (digest or "")[:12] + (f" (unknown: {', '.join(unknown)})" if unknown else "")
        fp_title = "; ".join(f"{k}={'unknown' if v is None else v}" for k, v in details_fp.get("fields", {}).items())
        state = detail["state"]
        # A prefill figure over a prompt served from cache is not a rate: never shown as one.
        prefill_cell = (_cell("cached", css="warn", title="the prompt came from the server's prompt cache")
                        if state == CACHED else _cell(prefill if state == COLD else None, 1, True,
                                                      title="" if state == COLD else "cache state unknown"))
        rows.append("<tr>" + "".join([
            _cell(label, title=f"{adapter} · {model}"), _cell(f"{pack} {version} · {case}"), _cell(model),
            _cell(f"{ok}/{n}", numeric=True, css="warn" if ok != n else ""),
            _cell(wall, 3, True), _cell(ttft, 4, True), prefill_cell, _cell(detail["server_prefill"], 1, True),
            _cell(decode, 1, True), _cell(total, 1, True), _cell(output, 0, True),
            _cell(_with_coverage(prompt, prompt_rows, ok), numeric=True, css="warn" if prompt_rows != ok else ""),
            _cell(_with_coverage(cached, cached_rows, ok), numeric=True, css="warn" if cached_rows != ok else ""),
            _cell(f"{passed}/{scored}" if scored else None, numeric=True),
            _cell(fp_text, css="warn" if unknown else "", title=fp_title),
        ]) + "</tr>")
    return _table(["run", "pack · case", "model", "ok", "wall s", "TTFT s", "prefill tok/s", "server prefill",
                   "decode (1/TPOT) tok/s", "total tok/s", "output tok", "prompt tok (rows)", "cached tok (rows)", "pass",
                   "fingerprint"], rows)


def _with_coverage(value, reported: int, ok: int) -> str | None:
    if value is None:
        return None
    return f"{value:.0f} ({reported}/{ok})"


def agent_wrap_table(conn: sqlite3.Connection) -> str | None:
    rows = []
    for r in conn.execute(
        "SELECT label, date, status, harness, provider, model, thinking_level, runner, transcript_captured,"
        " electron_precondition_ok, duration_s, notes FROM agent_wrap_runs ORDER BY date, label"
    ):
        label, date, status, harness, provider, model, thinking, runner, transcript, electron, duration, notes = r
        yes_no = {None: None, 0: "no", 1: "yes"}
        rows.append("<tr>" + "".join([
            _cell(label), _cell(date), _cell(status, css="warn" if status == "fail" else ""), _cell(harness),
            _cell(provider), _cell(model), _cell(thinking), _cell(runner), _cell(yes_no[transcript]),
            _cell(yes_no[electron], css="warn" if electron == 0 else ""),
            _cell(None if duration is None else duration / 60, 1, True), _cell(notes),
        ]) + "</tr>")
    if not rows:
        return None
    return _table(["label", "date", "status", "harness", "provider", "model", "thinking", "runner",
                   "transcript", "electron ok", "minutes", "notes"], rows)


def decode_chart(conn: sqlite3.Connection) -> str:
    """Median decode (1/tpot_s) per case and run, min–max over ok rows: the case table at a glance."""
    records = conn.execute(
        "SELECT s.pack_id || ' ' || s.pack_version || ' · ' || s.case_id, runs.label,"
        " s.median_decode_rate, spread.low, spread.high, s.model"
        " FROM result_case_stats s JOIN runs ON runs.id = s.run_id"
        " LEFT JOIN (SELECT run_id, pack_id, pack_version, case_id, adapter, model,"
        "   MIN(1.0 / tpot_s) AS low, MAX(1.0 / tpot_s) AS high FROM result_rows"
        "   WHERE ok = 1 AND tpot_s > 0"
        "   GROUP BY run_id, pack_id, pack_version, case_id, adapter, model HAVING COUNT(*) > 1) spread"
        " USING (run_id, pack_id, pack_version, case_id, adapter, model)"
        " ORDER BY s.pack_id, s.pack_version, s.case_id, runs.id"
    )
    return charts.grouped_records_chart(records, title="Median decode speed (1/TPOT) per case (min–max over ok rows)",
                                        unit="tok/s", width=900)


def ttft_chart(conn: sqlite3.Connection) -> str:
    """Median TTFT per case and run, min–max over ok rows."""
    records = conn.execute(
        "SELECT s.pack_id || ' ' || s.pack_version || ' · ' || s.case_id, runs.label,"
        " s.median_ttft_s, spread.low, spread.high, s.model"
        " FROM result_case_stats s JOIN runs ON runs.id = s.run_id"
        " LEFT JOIN (SELECT run_id, pack_id, pack_version, case_id, adapter, model,"
        "   MIN(ttft_s) AS low, MAX(ttft_s) AS high FROM result_rows"
        "   WHERE ok = 1 AND ttft_s IS NOT NULL"
        "   GROUP BY run_id, pack_id, pack_version, case_id, adapter, model HAVING COUNT(*) > 1) spread"
        " USING (run_id, pack_id, pack_version, case_id, adapter, model)"
        " WHERE s.median_ttft_s IS NOT NULL"
        " ORDER BY s.pack_id, s.pack_version, s.case_id, runs.id"
    )
    return charts.grouped_records_chart(records, title="Median time to first token per case (min–max over ok rows)",
                                        unit="s", width=900)


def render_index(conn: sqlite3.Connection, title: str) -> str:
    parts = [
        "<!doctype html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        '<p>Read-only export of a local benchpack registry. Full report: <a href="report.md">report.md</a>. '
        "Medians use ok rows; coverage is how many ok rows reported the token count. A fingerprint with "
        "unknown inputs cannot prove two rows comparable.</p>",
        "<h2>Runs</h2>", runs_table(conn),
        "<h2>Case metrics</h2>", decode_chart(conn), ttft_chart(conn), case_table(conn),
        "<p>Prefill is shown as <em>cached</em> when the server answered the prompt from its prompt cache: "
        "there is then no prefill rate to show. <em>server prefill</em> is the server's own prompt rate.</p>",
    ]
    wrap = agent_wrap_table(conn)
    if wrap:
        parts += ["<h2>One-shot agent wrap runs</h2>", wrap]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def write_site(conn: sqlite3.Connection, out: Path, title: str = "Benchpack registry") -> list[Path]:
    if out.exists() and not out.is_dir():
        raise BenchpackError(Problem(str(out), "", "exists and is not a directory"))
    has_runs = conn.execute("SELECT 1 FROM runs LIMIT 1").fetchone()
    report = render_registry_report(conn) if has_runs else "# Benchpack report\n\nNo runs imported yet.\n"
    index = render_index(conn, title)
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "index.html", out / "report.md"]
    written[0].write_text(index, encoding="utf-8")
    written[1].write_text(report, encoding="utf-8")
    return written
