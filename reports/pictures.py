"""Pictures of divergences (PNG, via matplotlib), and the offline HTML report of a campaign. A target draws its own
domain's picture (``Target.picture``: which thread holds which element, swizzle grids in the manner of the PTX figures,
mismatches in red) with the helpers here; any other report gets the shared-memory window's wrong cells, or its
values."""

from __future__ import annotations

import base64
import io
import json
import re
import textwrap
from collections.abc import Callable
from html import escape
from pathlib import Path
from typing import Any

import numpy as np

from layoutfuzz.reports import schema

CELL = 16  # bytes per cell, as in PTX 5.5.7's figures
WRAP = 120  # characters of a value per row of the values picture
MAX_WRAPPED = 40  # rows a value takes in the picture at most (the page shows the rest)

# A report's target name -> the target that draws its picture (None for none). The harness sets it (``harness.registry``:
# installed targets only, as ``harness.trust`` allows): this package imports nothing of the harness.
target_of: Callable[[str], Any] | None = None


def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def mismatched_cells(lines: list[str]) -> list[int]:
    """Byte addresses of the 16-byte cells named in ``cell 0x...: expected ... got ...`` lines."""
    return [int(m.group(1), 16) for line in lines if (m := re.match(r"cell (0x[0-9a-fA-F]+):", line))]


def cells(ax, grid: np.ndarray, bad: np.ndarray, title: str, xlabel: str, ylabel: str,
           labels: np.ndarray | None = None) -> None:
    """A grid of 16-byte cells: grey shades by ``grid`` (mod 8), red where ``bad``."""
    shade = 0.93 - 0.45 * (grid % 8) / 8
    image = np.repeat(shade[..., None], 3, axis=-1)
    image[bad] = (0.85, 0.1, 0.1)
    ax.imshow(image, aspect="auto", interpolation="nearest")
    if labels is not None and grid.size <= 256:
        for (r, c), v in np.ndenumerate(labels):
            ax.text(c, r, str(v), ha="center", va="center", fontsize=7)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)


def _window_figure(report: dict[str, Any]):
    plt = pyplot()
    cells = mismatched_cells(report.get("first_mismatches", []))
    lines = max(8, max((c // 128 for c in cells), default=0) + 1)
    bad = np.zeros((lines, 8), dtype=bool)
    for c in cells:
        bad[c // 128, (c % 128) // CELL] = True
    fig, ax = plt.subplots(figsize=(5, max(3, lines * 0.25)))
    cells(ax, np.zeros_like(bad, dtype=int), bad, "shared-memory window: wrong 16-byte cells in red",
           "16-byte cell within the 128-byte line", "128-byte line")
    return fig


def value_rows(report: dict[str, Any], width: int = WRAP) -> list[list[str]]:
    """The values picture's rows: expected, observed and each first mismatch, wrapped at ``width`` characters
    (never cut) over as many rows as they take, up to ``MAX_WRAPPED`` rows each (the page has them in full)."""
    rows = []
    texts = [("expected", json.dumps(report.get("expected"))), ("observed", json.dumps(report.get("observed")))]
    for label, text in texts + [("mismatch", line) for line in report.get("first_mismatches", [])]:
        chunks = [text[i:i + width] for i in range(0, len(text), width)] or [""]
        if len(chunks) > MAX_WRAPPED:
            chunks = chunks[:MAX_WRAPPED - 1] + [f"... {len(text) - (MAX_WRAPPED - 1) * width} more characters (in full below)"]
        rows += [[label if i == 0 else "", chunk] for i, chunk in enumerate(chunks)]
    return rows


def _values_figure(report: dict[str, Any]):
    plt = pyplot()
    rows = value_rows(report)
    fig, ax = plt.subplots(figsize=(11, 0.9 + 0.22 * len(rows)))
    ax.axis("off")
    table = ax.table(cellText=rows, loc="center", cellLoc="left", colWidths=[0.09, 0.91])
    table.auto_set_font_size(False)
    table.set_fontsize(7)
    why = report.get("signature") or next(iter(str(report.get("detail") or "").splitlines()), "")
    title = textwrap.fill(f"{report['case_id']}: {report['outcome']} ({why})", 140)
    ax.set_title(title, fontsize=9)
    return fig


def case_of(report: dict[str, Any]):
    """The report's case as a ``Case``."""
    from layoutfuzz.generators.case import Case

    return Case.from_dict(report["case"])


def reduced_view(report: dict[str, Any]) -> dict[str, Any]:
    """The report as its reduced case would have it (case, expected, observed, mismatches), where it
    was reduced; else the report itself."""
    if not report.get("reduced_case") or "reduced_expected" not in report:
        return report
    return {**report, "case": report["reduced_case"], "expected": report["reduced_expected"],
            "observed": report["reduced_observed"], "first_mismatches": report.get("reduced_mismatches", []),
            "detail": report.get("reduced_detail", report.get("detail", ""))}


def target_picture(report: dict[str, Any]):
    """The figure the report's target draws of it (its ``picture`` method), or None where it draws none, or where no
    target is known by the report's name (``target_of``)."""
    try:
        target = target_of(str(report.get("target", ""))) if target_of is not None else None
    except Exception:  # a target that cannot be loaded here draws nothing
        return None
    draw = getattr(target, "picture", None)
    return draw(report) if draw is not None else None


def picture(report: dict[str, Any]) -> bytes:
    """A PNG of one report's divergence, in its own domain."""
    try:
        fig = target_picture(report)
        if fig is None and mismatched_cells(report.get("first_mismatches", [])):
            fig = _window_figure(report)
        elif fig is None:
            fig = _values_figure(report)
    except Exception:  # a picture never costs the report: fall back to the values
        fig = _values_figure(report)
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=110)
    pyplot().close(fig)
    return buffer.getvalue()


def _values_in_full(view: dict[str, Any]) -> str:
    """Expected, observed and the first mismatches as text, folded under the picture."""
    text = "\n".join([f"expected: {json.dumps(view.get('expected'))}", f"observed: {json.dumps(view.get('observed'))}",
                      *(f"mismatch: {line}" for line in view.get("first_mismatches", []))])
    return f"<details><summary>expected and observed in full</summary><pre class='values'>{escape(text)}</pre></details>"


def html_report(directory: Path, table_html: str, root_causes, reports: dict[str, str], title: str) -> str:
    """One self-contained page: each root cause (status, attribution, count, families, first and last seen,
    replay command) with a picture of its reduced case and its values in full, then the pass-rate table folded;
    ``reports``: bucket -> its representative's report, relative to ``directory``."""
    parts = [f"<!doctype html><meta charset='utf-8'><title>{escape(title)}</title>",
             "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;font-size:12px}"
             "td,th{border:1px solid #ccc;padding:2px 6px}img{max-width:100%;border:1px solid #ddd}"
             "pre{white-space:pre-wrap;font-size:11px;background:#f6f6f6;padding:6px}"
             ".new,.regressed{color:#b00}.fixed{color:#070}</style>",
             f"<h1>{escape(title)}</h1>", f"<h2>{len(root_causes)} root cause(s)</h2>"]
    for row in root_causes.to_dict("records"):
        status = str(row.get("status", ""))
        seen = "".join(f"<br>{escape(k)}: {escape(str(row[k]))}" for k in ("first seen", "last seen", "fixed in") if row.get(k))
        parts.append(
            f"<h3><span class='{escape(status.split(':')[0])}'>{escape(status)}</span> · {escape(row['target'])} · "
            f"{escape(str(row['outcome']))} · {escape(str(row['cases']))} case(s)</h3>"
            f"<p><code>{escape(str(row['signature']))}</code><br>attribution: {escape(str(row.get('attribution', '')))}"
            f" <small>({escape(str(row.get('evidence', '')))})</small><br>families: {escape(str(row.get('families', '')))}{seen}"
            f"<br>replay: <code>{escape(str(row.get('replay', '')))}</code></p>")
        path = schema.report_path(Path(directory), reports[row["bucket"]]) if reports.get(row["bucket"]) else None
        if path is None or not path.exists():
            continue
        view = reduced_view(schema.load_report(path))
        if view["outcome"] in ("crash", "timeout", "error"):  # nothing to draw: what the worker said
            parts.append(f"<pre>{escape(view.get('detail', '')[-3000:])}</pre>")
        else:
            png = base64.b64encode(picture(view)).decode()
            parts.append(f"<img alt='{escape(row['bucket'])}' src='data:image/png;base64,{png}'>{_values_in_full(view)}")
    rows = table_html.count("<tr") - 1  # less the header's
    parts.append(f"<h2>Pass rates</h2><details><summary>{rows} row(s): per target and family</summary>{table_html}</details>")
    return "\n".join(parts) + "\n"
