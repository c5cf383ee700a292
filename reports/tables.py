"""Pass-rate tables by target and family, in the spirit of the paper's Tables 4 and 5."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from layoutfuzz.reports.files import write_atomically
from layoutfuzz.reports.formats import FORMATS, render
from layoutfuzz.reports.outcome import OUTCOMES
from layoutfuzz.reports.terminal import pass_rate_view


def pass_rate_table(outcomes: pd.DataFrame, metrics: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (target, family) and one per target in total: counts of each outcome and
    the pass rate over the cases that ran (unsupported ones excluded), and the worker time the cases took
    (``time s``: what a time budget shares between targets). ``outcomes``: a row per case (``Store.frame``), or
    counted rows with a ``cases`` column (``Store.counts``) and the rows with metrics (``Store.metric_rows``)."""
    columns = ["target", "family", "cases", *OUTCOMES, "pass rate %"] + (["time s"] if "duration_s" in outcomes else [])
    if outcomes.empty:
        return pd.DataFrame(columns=columns)
    weights = outcomes["cases"] if "cases" in outcomes else pd.Series(1, index=outcomes.index)  # counted rows (Store.counts)
    counts = pd.crosstab([outcomes["target"], outcomes["family"]], outcomes["outcome"], values=weights, aggfunc="sum").fillna(0)
    counts = counts.astype(int)
    counts = counts.reindex(columns=list(OUTCOMES), fill_value=0)
    totals = counts.groupby(level="target").sum()
    totals.index = pd.MultiIndex.from_tuples([(t, "(all)") for t in totals.index], names=["target", "family"])
    table = pd.concat([counts, totals]).sort_index(level=["target", "family"], sort_remaining=False)
    table.insert(0, "cases", table.sum(axis=1))
    ran = table["cases"] - table["unsupported"]
    table["pass rate %"] = (100 * table["pass"] / ran.where(ran > 0)).round(2)
    if "duration_s" in outcomes:
        seconds = outcomes.groupby(["target", "family"])["duration_s"].sum()
        by_target = seconds.groupby(level="target").sum()
        by_target.index = pd.MultiIndex.from_tuples([(t, "(all)") for t in by_target.index], names=["target", "family"])
        table["time s"] = pd.concat([seconds, by_target]).reindex(table.index).round(2)
    means = _metric_means(outcomes if metrics is None else metrics)
    if means is not None:
        table = table.join(means)
        columns += list(means.columns)
    return table.reset_index()[columns]


def _metric_means(outcomes: pd.DataFrame) -> pd.DataFrame | None:
    """Mean of each per-case metric by (target, family) and by target, or None if none were recorded."""
    if "metrics" not in outcomes or outcomes["metrics"].isna().all():
        return None
    parsed = pd.json_normalize([json.loads(m) if isinstance(m, str) else {} for m in outcomes["metrics"]])
    parsed.columns = [f"mean {c}" for c in parsed.columns]
    parsed.index = outcomes.index
    frame = pd.concat([outcomes[["target", "family"]], parsed], axis=1)
    by_family = frame.groupby(["target", "family"]).mean(numeric_only=True)
    by_target = frame.drop(columns="family").groupby("target").mean(numeric_only=True)
    by_target.index = pd.MultiIndex.from_tuples([(t, "(all)") for t in by_target.index], names=["target", "family"])
    return pd.concat([by_family, by_target]).round(2)


def for_terminal(table: pd.DataFrame, fmt: str) -> str:
    """The pass-rate table as a terminal shows it: the outcome counts for every target, then each
    target's own metric columns (PTX counts, ...) in a table of its own, so no line carries columns
    that only one target fills; in Markdown cut to a terminal's width (``terminal.pass_rate_view``). Files
    (``write_tables``) and ``--format csv``/``html`` keep the whole table."""
    if fmt != "md":
        return render(table, fmt)
    metrics = [c for c in table.columns if str(c).startswith("mean ")]
    parts = [pass_rate_view(table.drop(columns=metrics), fmt)]
    for target, rows in table.groupby("target", sort=True) if metrics else ():
        own = [c for c in metrics if rows[c].notna().any()]
        if own:
            parts.append(f"\n{target}: per-case metrics (means)\n" + pass_rate_view(rows[["target", "family", *own]], fmt))
    return "\n".join(parts)


def write_tables(table: pd.DataFrame, directory: Path) -> list[Path]:
    """Writes ``table.md``, ``table.csv`` and ``table.html`` into ``directory``."""
    paths = []
    for fmt in FORMATS:
        path = directory / f"table.{fmt}"
        write_atomically(path, render(table, fmt) + "\n")
        paths.append(path)
    return paths
