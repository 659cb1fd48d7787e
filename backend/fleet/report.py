"""The fleet's HTML report: one self-contained page (plotly.js inlined from the installed plotly package).

It answers three questions a platform team asks of a day's applications: which stage signatures held the most
time across the fleet, which jobs and micro-batches were slowest and who held them, and whether a signature got
slower over time (regressions). Every row names the log and the moment, with the `flowscope replay --at` command
that opens it there (a slow time: its region at the batch that completed it; a signature: where its stage started
holding its time, in the run that held longest or in each application of the regression chart). The job
(`job.py`) collects the few rows shown; this module only renders them.
"""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime
from typing import Any

__all__ = ["REGRESSION_SIGNATURES", "TOP_SIGNATURES", "TOP_TIMES", "moment_text", "render_report", "replay_command"]

TOP_SIGNATURES = 20
TOP_TIMES = 30
REGRESSION_SIGNATURES = 6

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em 2em; color: #222; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0; } td, th { padding: 3px 8px; border-bottom: 1px solid #ddd;
  text-align: left; vertical-align: top; } th { background: #f4f4f4; } td.n { text-align: right; }
code { font-size: 12px; background: #f6f6f6; padding: 1px 4px; user-select: all; }
.muted { color: #777; } #picked { min-height: 1.5em; }
"""


def _utc_text(seconds: Any) -> str:
    if not isinstance(seconds, (int, float)):
        return "-"
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def _decimal(value: Any, digits: int = 2) -> str:
    return f"{value:.{digits}f}" if isinstance(value, (int, float)) else "-"


def moment_text(seconds: float) -> str:
    """A wall-clock moment as `flowscope replay --at` reads it.

    ISO 8601 in UTC, to the millisecond when that is exact (Spark's clocks), else to the microsecond (so it names the
    same float seconds back)."""
    moment = datetime.fromtimestamp(seconds, tz=UTC)
    spec = "milliseconds" if moment.microsecond % 1000 == 0 else "microseconds"
    return moment.replace(tzinfo=None).isoformat(timespec=spec) + "Z"


def _shell_word(text: str) -> str:
    if text and all(c.isalnum() or c in "/._-:+=@" for c in text):
        return text
    return "'" + text.replace("'", "'\\''") + "'"


def replay_command(log: Any, *, batch: int | None = None, at: float | None = None,
                   scope: list[int] | tuple[int, ...] | None = None) -> str:
    """The command that opens an application's log in the debugger.

    At a batch (`end_batch`) or a wall-clock moment (seconds), in a scope (a region's path), when known."""
    words = ["flowscope", "replay", _shell_word(str(log or ""))]
    if batch is not None:
        words += ["--at", str(batch)]
    elif isinstance(at, (int, float)):
        words += ["--at", moment_text(at)]
    if scope:
        words += ["--scope", ",".join(str(p) for p in scope)]
    return " ".join(words)


def _moment(row: dict) -> str:
    batch = row.get("end_batch")
    where = f"batch {batch}" if batch is not None else "the end"
    return f"completed at {where} ({_utc_text(row.get('end'))})"


def _time_command(row: dict) -> str:
    """A slow time's command: its region at the batch that completed it."""
    return replay_command(row.get("log"), batch=row.get("end_batch"), scope=row.get("scope"))


def _longest_command(sig: dict) -> str:
    """The signature's run that held longest, opened where its stage started holding its time."""
    longest = sig.get("longest") or {}
    if not longest.get("log"):
        return ""
    return replay_command(longest["log"], at=longest.get("start"), scope=longest.get("scope"))


def _figure_html(fig: Any, first: bool, div_id: str) -> str:
    import plotly.io as pio

    return pio.to_html(fig, full_html=False, include_plotlyjs=bool(first), div_id=div_id,
                       config={"displaylogo": False, "responsive": True})


def render_report(signatures: list[dict], slow: list[dict], series: list[dict], problems: list[dict],
                  totals: dict, out: str) -> str:
    """The fleet report as one HTML page.

    `signatures`: stage_signatures rows by time held; `slow`: times rows (with `log`) by latency; `series`: per
    (signature, application) seconds held with `app_start` and `log`; `problems`: application rows with problems;
    `totals`: {"applications", "unreadable"}."""
    import plotly.graph_objects as go

    e = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>flowscope fleet report</title>"
             f"<style>{_STYLE}</style></head><body>",
             "<h1>flowscope fleet report</h1>",
             f"<p>{totals.get('applications') or 0} applications ({totals.get('unreadable') or 0} unreadable); "
             f"tables under <code>{e(out)}</code>. Click a point to get the command that opens that application.</p>",
             "<p id='picked' class='muted'></p>"]
    first = True

    parts.append("<h2>Stage signatures that held the most time across the fleet</h2>")
    if signatures:
        labels = [f"{(s.get('name') or '?')[:60]} [{s.get('signature', '')[:6]}]" for s in signatures]
        fig = go.Figure(go.Bar(
            x=[s.get("held_s") or 0 for s in signatures][::-1], y=labels[::-1], orientation="h",
            customdata=[[s.get("applications"), s.get("runs"), s.get("max_skew") or 0, s.get("stragglers")]
                        for s in signatures][::-1],
            hovertemplate="%{y}<br>%{x:.2f} s held<br>%{customdata[0]} applications, %{customdata[1]} runs<br>"
                          "max skew %{customdata[2]:.2f}, %{customdata[3]} stragglers<extra></extra>"))
        fig.update_layout(height=120 + 22 * len(signatures), margin={"l": 10, "r": 10, "t": 10, "b": 40},
                          xaxis_title="seconds the stage's output held capabilities (sum over the fleet)")
        parts.append(_figure_html(fig, first, "signatures"))
        first = False
        parts.append("<table><tr><th>signature</th><th>stage</th><th>region</th><th>apps</th><th>runs</th>"
                     "<th>held s</th><th>max held s</th><th>max skew</th><th>stragglers</th><th>failed attempts</th>"
                     "<th>its longest run</th></tr>")
        for s in signatures:
            parts.append(
                f"<tr><td><code>{e(str(s.get('signature')))}</code></td><td>{e(str(s.get('name')))}</td>"
                f"<td>{e(str(s.get('region_kind')))}</td><td class=n>{s.get('applications')}</td>"
                f"<td class=n>{s.get('runs')}</td><td class=n>{_decimal(s.get('held_s'))}</td>"
                f"<td class=n>{_decimal(s.get('max_held_s'))}</td><td class=n>{_decimal(s.get('max_skew'), 2)}</td>"
                f"<td class=n>{s.get('stragglers')}</td><td class=n>{s.get('failed_attempts')}</td>"
                f"<td><code>{e(_longest_command(s))}</code></td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p class='muted'>No stage ran in any application.</p>")

    parts.append("<h2>Slowest jobs and micro-batches, with their culprit</h2>")
    if slow:
        parts.append("<table><tr><th>latency s</th><th>application</th><th>region</th><th>time</th><th>jobs</th>"
                     "<th>culprit</th><th>open it there</th></tr>")
        for t in slow:
            what = f"batch {t['batch_id']}" if t.get("batch_id") is not None else f"epoch {t.get('time')}"
            parts.append(
                f"<tr><td class=n>{_decimal(t.get('latency_s'))}</td><td>{e(str(t.get('app_id')))}<br>"
                f"<span class=muted>{e(str(t.get('name') or ''))}</span></td><td>{e(str(t.get('scope_name')))}</td>"
                f"<td>{e(what)}</td><td>{e(', '.join(str(j) for j in t.get('job_ids') or []))}</td>"
                f"<td>{e(str(t.get('culprit') or ''))}</td><td><code>{e(_time_command(t))}</code><br>"
                f"<span class=muted>{e(_moment(t))}</span></td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p class='muted'>No completed job or micro-batch.</p>")

    parts.append("<h2>The same signature over time (regressions)</h2>")
    if series:
        fig = go.Figure()
        names = {s["signature"]: (s.get("name") or "?")[:50] for s in signatures}
        for sig in dict.fromkeys(r["signature"] for r in series):
            rows = [r for r in series if r["signature"] == sig and isinstance(r.get("app_start"), (int, float))]
            fig.add_trace(go.Scatter(
                x=[datetime.fromtimestamp(r["app_start"], tz=UTC) for r in rows],
                y=[r.get("held_s") for r in rows], mode="lines+markers",
                name=f"{names.get(sig, '?')} [{sig[:6]}]",
                customdata=[[r.get("app_id"), replay_command(r.get("log"), at=r.get("start"), scope=r.get("scope"))]
                            for r in rows],
                hovertemplate="%{customdata[0]}<br>%{y:.2f} s held<extra>%{fullData.name}</extra>"))
        fig.update_layout(height=420, margin={"l": 10, "r": 10, "t": 10, "b": 40},
                          yaxis_title="seconds held per application", xaxis_title="application start",
                          legend={"orientation": "h", "y": -0.25})
        parts.append(_figure_html(fig, first, "regressions"))
        first = False
    else:
        parts.append("<p class='muted'>Nothing to compare.</p>")

    parts.append("<h2>Applications with problems</h2>")
    if problems:
        parts.append("<table><tr><th>application</th><th>log</th><th>problems</th></tr>")
        for a in problems:
            items = "".join(f"<li>{e(str(p))}</li>" for p in a.get("problems") or [])
            parts.append(f"<tr><td>{e(str(a.get('app_id')))}</td><td><code>{e(str(a.get('log')))}</code></td>"
                         f"<td><ul>{items}</ul></td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p class='muted'>None.</p>")

    # a click on a point of the regression chart shows the command that opens that application
    parts.append("<script>(function () { const el = document.getElementById('regressions'); if (!el || !el.on) "
                 "return; el.on('plotly_click', function (ev) { const p = ev.points[0]; "
                 "document.getElementById('picked').textContent = p.customdata[0] + ': ' + p.customdata[1]; }); "
                 "})();</script>")
    parts.append(f"<script type='application/json' id='fleet-data'>{_json_for_html(slow)}</script>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _json_for_html(rows: list[dict]) -> str:
    """The slow times as JSON inside the page (for scripts and tests), safe inside a <script> element."""
    return json.dumps(rows, default=str).replace("</", "<\\/")
