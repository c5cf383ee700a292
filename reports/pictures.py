"""Pictures of divergences (PNG, via matplotlib): which thread holds which element, swizzle grids
in the manner of the PTX figures, mismatches in red; and the offline HTML report of a campaign."""

from __future__ import annotations

import base64
import io
import json
import re
import textwrap
from html import escape
from math import prod
from pathlib import Path
from typing import Any

import numpy as np

from layoutfuzz.reports import schema

CELL = 16  # bytes per cell, as in PTX 5.5.7's figures
WRAP = 120  # characters of a value per row of the values picture
MAX_WRAPPED = 40  # rows a value takes in the picture at most (the page shows the rest)


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def mismatched_cells(lines: list[str]) -> list[int]:
    """Byte addresses of the 16-byte cells named in ``cell 0x...: expected ... got ...`` lines."""
    return [int(m.group(1), 16) for line in lines if (m := re.match(r"cell (0x[0-9a-fA-F]+):", line))]


def _cells(ax, grid: np.ndarray, bad: np.ndarray, title: str, xlabel: str, ylabel: str,
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


def _tma_figure(report: dict[str, Any]):
    from layoutfuzz.gpu.triton_tma import first_box, padded_shape

    plt = _plt()
    p = report["case"]["params"]
    e = p["elem_bits"] // 8
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    box = first_box(p)
    lines = min(16, max(1, box.footprint_bytes // 128))
    labels = np.zeros((lines, 8), dtype=int)  # which 16-byte chunk of its row each shared-memory cell holds
    for index in box.indices():
        address = box.address(index)
        if address // 128 < lines and index[0] * e % CELL == 0:
            labels[address // 128, (address % 128) // CELL] = index[0] * e // CELL
    _cells(left, labels, np.zeros_like(labels, dtype=bool), f"shared memory ({p['swizzle']}B swizzle): which 16 B of its row each cell holds",
           "16-byte cell within the 128-byte line", "128-byte line", labels)
    row_bytes = padded_shape(p)[-1] * e
    rows = min(64, prod(p["global_shape"][:-1]))
    per_row = -(-row_bytes // CELL)
    bad = np.zeros((rows, per_row), dtype=bool)
    for address in mismatched_cells(report.get("first_mismatches", [])):
        for byte in range(address, address + CELL):  # the global tensor's 16-byte cells a mismatch touches
            if byte // row_bytes < rows:
                bad[byte // row_bytes, (byte % row_bytes) // CELL] = True
    bound = p["global_shape"][-1] * e / CELL - 0.5
    _cells(right, np.zeros_like(bad, dtype=int), bad, f"global tensor ({rows} rows shown): wrong cells in red (the first 8 reported)",
           "16-byte cell of the row (row stride included)", "row (outer dims flattened)")
    right.axvline(bound, color="blue", linewidth=1)
    right.text(bound, -0.8, " innermost bound", color="blue", fontsize=7)
    return fig


def _window_figure(report: dict[str, Any]):
    plt = _plt()
    cells = mismatched_cells(report.get("first_mismatches", []))
    lines = max(8, max((c // 128 for c in cells), default=0) + 1)
    bad = np.zeros((lines, 8), dtype=bool)
    for c in cells:
        bad[c // 128, (c % 128) // CELL] = True
    fig, ax = plt.subplots(figsize=(5, max(3, lines * 0.25)))
    _cells(ax, np.zeros_like(bad, dtype=int), bad, "shared-memory window: wrong 16-byte cells in red",
           "16-byte cell within the 128-byte line", "128-byte line")
    return fig


def _holder_figure(report: dict[str, Any]):
    plt = _plt()
    p = report["case"]["params"]
    shape = p["shape"]
    rows = prod(shape[:-1])
    expected, observed = report["expected"], report["observed"]
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for col, side in enumerate(("a", "b")):
        want = np.asarray(expected[f"holders_{side}"]).reshape(rows, shape[-1])
        got = np.asarray(observed[f"holders_{side}"]).reshape(rows, shape[-1])
        for row, (values, name) in enumerate(((want, "oracle"), (got, "GPU"))):
            ax = axes[row][col]
            ax.imshow(values, cmap="viridis", aspect="auto", interpolation="nearest")
            wrong = np.argwhere(want != got)
            if wrong.size:
                ax.scatter(wrong[:, 1], wrong[:, 0], marker="x", color="red", s=12)
            ax.set_title(f"layout {side.upper()}: %tid.x holding each element ({name})", fontsize=9)
            ax.set_xlabel(f"dim{len(shape) - 1}")
            ax.set_ylabel("other dims, row-major")
    data = observed.get("data_mismatches", 0)
    fig.suptitle(f"{report['case_id']}: holders {'agree' if expected['holders_a'] == observed['holders_a'] and expected['holders_b'] == observed['holders_b'] else 'differ (red x)'}; "
                 f"{data} element value(s) wrong after the conversion", fontsize=10)
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
    plt = _plt()
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


def _bank_figure(report: dict[str, Any]):
    """Which bank each lane's access hits in the busiest transaction; banks asked for two or more
    different 4-byte words (a conflict) in red."""
    from layoutfuzz.harness.targets.triton_bank_conflicts import TritonBankConflicts
    from layoutfuzz.oracles.algorithms import BANKS, busiest_access

    plt = _plt()
    case = _case(report)
    shared, dist, _ = TritonBankConflicts()._layouts(case)
    first_lane, words = busiest_access(shared, dist, case.params["elem_bits"])
    lanes = words.shape[0]
    grid = np.full((lanes, BANKS), np.nan)
    for lane in range(lanes):
        for word in words[lane]:
            grid[lane, word % BANKS] = word // BANKS
    per_bank = [len({int(w) for w in np.unique(words) if w % BANKS == b}) for b in range(BANKS)]
    fig, ax = plt.subplots(figsize=(9, 0.25 * lanes + 1.8))
    ax.imshow(np.ma.masked_invalid(grid), cmap="Greys", aspect="auto", interpolation="nearest", vmin=-1)
    conflicted = {b for b, n in enumerate(per_bank) if n > 1}
    hits = [(lane, int(w) % BANKS) for lane in range(lanes) for w in words[lane] if int(w) % BANKS in conflicted]
    if hits:
        ax.scatter([b for _, b in hits], [lane for lane, _ in hits], marker="s", color="red", s=30)
    ax.set_xlabel("bank (4-byte word mod 32); red: lanes asking a bank for two or more different words (a conflict)")
    ax.set_ylabel(f"lane (from lane {first_lane})")
    expected, observed = report.get("expected") or {}, report.get("observed") or {}
    ax.set_title(f"{report['case_id']}: the busiest transaction; exact {expected.get('bank_conflicts')} conflict(s), "
                 f"Triton {observed.get('bank_conflicts', observed)}", fontsize=9)
    return fig


def _thread_grid(bases: dict[str, list[list[int]]], shape: list[int]) -> np.ndarray:
    """For each element of ``shape`` (rows = all but the last dim), the first thread (lane + 32 warp)
    that holds it in a distributed layout's bases; -1 where none does."""
    from layoutfuzz.oracles.linear_layout import LinearLayout

    names = [f"dim{i}" for i in range(len(shape))]
    layout = LinearLayout.from_bases({k: v for k, v in bases.items() if k in ("register", "lane", "warp")},
                                     list(zip(names, shape)))
    grid = np.full(prod(shape), -1)
    for reg in range(layout.in_dim_size("register")):
        for lane in range(layout.in_dim_size("lane")):
            for warp in range(layout.in_dim_size("warp")):
                out = layout.apply({"register": reg, "lane": lane, "warp": warp})
                flat = 0
                for name, size in zip(names, shape):
                    flat = flat * size + out[name]
                if grid[flat] < 0:
                    grid[flat] = lane + 32 * warp
    return grid.reshape(prod(shape[:-1]), shape[-1])


def _layout_figure(report: dict[str, Any]):
    """Which thread holds each element: the oracle's layout above Triton's, disagreements as red x."""
    plt = _plt()
    shape = list(_case(report).params["shape"])
    want = _thread_grid(report["expected"], shape)
    got = _thread_grid(report["observed"], shape)
    fig, axes = plt.subplots(2, 1, figsize=(8, 7))
    wrong = np.argwhere(want != got)
    for ax, values, name in ((axes[0], want, "oracle"), (axes[1], got, "Triton")):
        ax.imshow(values, cmap="viridis", aspect="auto", interpolation="nearest")
        if wrong.size:
            ax.scatter(wrong[:, 1], wrong[:, 0], marker="x", color="red", s=12)
        ax.set_title(f"thread (lane + 32 warp) holding each element ({name})", fontsize=9)
        ax.set_xlabel(f"dim{len(shape) - 1}")
        ax.set_ylabel("other dims, row-major")
    fig.suptitle(f"{report['case_id']}: {len(wrong)} element(s) held by another thread", fontsize=10)
    return fig


def _case(report: dict[str, Any]):
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


def picture(report: dict[str, Any]) -> bytes:
    """A PNG of one report's divergence, in its own domain."""
    target, expected, observed = report["target"], report.get("expected"), report.get("observed")
    holders = all(isinstance(v, dict) and "holders_a" in v and "holders_b" in v for v in (expected, observed))
    bases = all(isinstance(v, dict) and "lane" in v and "register" in v for v in (expected, observed))
    try:
        if target == "triton.convert_layout" and holders:
            fig = _holder_figure(report)
        elif target == "triton.layouts" and bases:
            fig = _layout_figure(report)
        elif target == "triton.bank_conflicts" and isinstance(expected, dict) and "bank_conflicts" in expected:
            fig = _bank_figure(report)
        elif target == "triton.tma" and report["case"]["params"].get("block"):
            fig = _tma_figure(report)
        elif mismatched_cells(report.get("first_mismatches", [])):
            fig = _window_figure(report)
        else:
            fig = _values_figure(report)
    except Exception:  # a picture never costs the report: fall back to the values
        fig = _values_figure(report)
    buffer = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buffer, format="png", dpi=110)
    _plt().close(fig)
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
