"""A table as Markdown, CSV or HTML: what the files, the terminal views and the reports print."""

from __future__ import annotations

import pandas as pd

FORMATS = ("md", "csv", "html")


def render(table: pd.DataFrame, fmt: str) -> str:
    """The table as Markdown, CSV or HTML."""
    if fmt == "md":
        return table.astype(object).where(table.notna(), None).to_markdown(index=False, floatfmt=".2f", missingval="-")
    if fmt == "csv":
        return table.to_csv(index=False)
    if fmt == "html":
        table = table.rename_axis(columns=None)  # no stray header for the columns' name
        return table.to_html(index=False, na_rep="-", float_format=lambda x: f"{x:.2f}")
    raise ValueError(f"unknown table format {fmt!r}; formats: {', '.join(FORMATS)}")
