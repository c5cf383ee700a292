"""Pass-rate tables by target and family, in the spirit of the paper's Tables 4 and 5."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from harness.target import OUTCOMES
from reports.store import write_atomically

FORMATS = ("md", "csv", "html")


def pass_rate_table(outcomes: pd.DataFrame) -> pd.DataFrame:
    """One row per (target, family) and one per target in total: counts of each outcome and
    the pass rate over the cases that ran (unsupported ones excluded)."""
    columns = ["target", "family", "cases", *OUTCOMES, "pass rate %"]
    if outcomes.empty:
        return pd.DataFrame(columns=columns)
    counts = pd.crosstab([outcomes["target"], outcomes["family"]], outcomes["outcome"])
    counts = counts.reindex(columns=list(OUTCOMES), fill_value=0)
    totals = counts.groupby(level="target").sum()
    totals.index = pd.MultiIndex.from_tuples([(t, "(all)") for t in totals.index], names=["target", "family"])
    table = pd.concat([counts, totals]).sort_index(level=["target", "family"], sort_remaining=False)
    table.insert(0, "cases", table.sum(axis=1))
    ran = table["cases"] - table["unsupported"]
    table["pass rate %"] = (100 * table["pass"] / ran.where(ran > 0)).round(2)
    return table.reset_index()[columns]


def render(table: pd.DataFrame, fmt: str) -> str:
    """The table as Markdown, CSV or HTML."""
    if fmt == "md":
        return table.to_markdown(index=False, floatfmt=".2f")
    if fmt == "csv":
        return table.to_csv(index=False)
    if fmt == "html":
        return table.to_html(index=False, na_rep="-", float_format=lambda x: f"{x:.2f}")
    raise ValueError(f"unknown table format {fmt!r}; formats: {', '.join(FORMATS)}")


def write_tables(table: pd.DataFrame, directory: Path) -> list[Path]:
    """Writes ``table.md``, ``table.csv`` and ``table.html`` into ``directory``."""
    paths = []
    for fmt in FORMATS:
        path = directory / f"table.{fmt}"
        write_atomically(path, render(table, fmt) + "\n")
        paths.append(path)
    return paths
