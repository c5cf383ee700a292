"""``DIR/report.html``: one offline page of a campaign, its root causes first."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from layoutfuzz.reports.buckets import PROBLEMS, bucket_table
from layoutfuzz.reports.files import write_atomically
from layoutfuzz.reports.store import Store
from layoutfuzz.reports.tables import pass_rate_table, render


def write_html(directory: str | Path, root_causes: pd.DataFrame, table: pd.DataFrame | None = None) -> Path:
    """``DIR/report.html``: each root cause with its status, attribution and a picture of its reduced case, then
    the pass-rate table folded (``table`` where the campaign has just computed it: counting is a scan of every
    row), in one offline page. Needs matplotlib."""
    from layoutfuzz.reports.pictures import html_report

    store = Store(directory, create=False)
    try:
        problems = store.frame(PROBLEMS)
        if table is None:
            table = pass_rate_table(store.counts(), store.metric_rows())
    finally:
        store.close()
    reports = dict(zip(*[bucket_table(problems)[c] for c in ("bucket", "report")]))
    page = html_report(Path(directory), render(table, "html"), root_causes, reports, f"layoutfuzz {directory}")
    path = Path(directory) / "report.html"
    write_atomically(path, page)
    return path
