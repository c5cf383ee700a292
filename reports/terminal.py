"""What a terminal shows: tables cut to ``WIDTH`` columns (wide columns dropped or their cells clipped
with an ellipsis), replay commands on lines of their own. The files (table.md, buckets.md, CSV, HTML)
and ``--format csv``/``html`` keep every column in full."""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Collection, Iterable, Sequence
from contextlib import contextmanager

import pandas as pd
import tabulate

from layoutfuzz.reports.formats import render

WIDTH = 120  # columns a terminal line may take
ELLIPSIS = "…"
LOOSE = 32  # characters a clipped cell keeps while a column can still be dropped
FLOOR = 12  # ... and while another column can still give
SHORT = {"unsupported": "unsup", "pass rate %": "pass %"}  # headers a terminal abbreviates
ROOT_CAUSE_VIEW = ["status", "bucket", "target", "outcome", "cases", "signature", "attribution"]
FAILING_SHOWN = 12  # new or regressed root causes a night prints in full (3 lines each); the rest are in its files


def clip(text: object, width: int) -> object:
    """``text`` cut to ``width`` characters, the last one an ellipsis where it was cut; other values as they are."""
    if not isinstance(text, str) or len(text) <= width:
        return text
    return text[: max(width - 1, 0)] + ELLIPSIS


@contextmanager
def _unpadded():
    """Tabulate without the two spaces it adds to every header (narrow numeric columns stay narrow), keeping
    the cells' leading spaces (families indented under their target)."""
    saved = tabulate.MIN_PADDING, tabulate.PRESERVE_WHITESPACE
    tabulate.MIN_PADDING, tabulate.PRESERVE_WHITESPACE = 0, True
    try:
        yield
    finally:
        tabulate.MIN_PADDING, tabulate.PRESERVE_WHITESPACE = saved


def _keeps_spaces() -> dict[str, bool]:
    """Tabulate 0.10 takes leading spaces as an argument (0.9 as the global ``_unpadded`` sets)."""
    return {"preserve_whitespace": True} if "preserve_whitespace" in inspect.signature(tabulate.tabulate).parameters else {}


def markdown(table: pd.DataFrame) -> str:
    """The table as unpadded Markdown (``render``'s, with leading spaces kept)."""
    cells = table.astype(object).where(table.notna(), None)
    with _unpadded():
        return cells.to_markdown(index=False, floatfmt=".2f", missingval="-", **_keeps_spaces())


def text_width(text: str) -> int:
    """The widest line of ``text``."""
    return max((len(line) for line in text.splitlines()), default=0)


def _clippable(table: pd.DataFrame, floor: int, keep: Collection[str]) -> str | None:
    """The text column (not one of ``keep``) whose cells are widest while longer than ``floor`` and its header."""
    best, widest = None, 0
    for column in table.columns:
        width = max((len(v) for v in table[column] if isinstance(v, str)), default=0)
        if column not in keep and width > max(floor, len(str(column))) and width > widest:
            best, widest = column, width
    return best


def _clipped(table: pd.DataFrame, width: int, floor: int, keep: Collection[str] = ()) -> pd.DataFrame:
    """The widest text cells clipped, never below ``floor`` characters, until the table fits ``width``."""
    while (over := text_width(markdown(table)) - width) > 0 and (column := _clippable(table, floor, keep)) is not None:
        longest = max(len(v) for v in table[column] if isinstance(v, str))
        limit = max(floor, len(str(column)), longest - over)
        table = table.assign(**{column: table[column].map(lambda v, n=limit: clip(v, n))})
    return table


def fit(table: pd.DataFrame, width: int = WIDTH, drop: Sequence[str] = (), keep: Collection[str] = ()) -> pd.DataFrame:
    """The table cut until its Markdown fits ``width``: long text cells clipped to ``LOOSE`` characters, then
    as few of the ``drop`` columns as it takes removed (in order), then cells clipped to ``FLOOR``; the ``keep``
    columns (names, keys) are clipped last."""
    droppable = [c for c in drop if c in table.columns]
    for count in range(len(droppable) + 1):
        cut = _clipped(table.drop(columns=droppable[:count]), width, LOOSE, keep)
        if text_width(markdown(cut)) <= width:
            return cut
    return _clipped(_clipped(cut, width, FLOOR, keep), width, 1)


def show(table: pd.DataFrame, fmt: str, drop: Sequence[str] = (), keep: Collection[str] = (), width: int = WIDTH) -> str:
    """``table`` as a terminal shows it in Markdown (``fit``, headers abbreviated); CSV and HTML in full."""
    if fmt != "md":
        return render(table, fmt)
    fitted = fit(table.rename(columns=SHORT), width, [SHORT.get(c, c) for c in drop], keep)
    return "\n".join(clip(line, width) for line in markdown(fitted).splitlines())


def pass_rate_view(table: pd.DataFrame, fmt: str, drop: Sequence[str] = ()) -> str:
    """A pass-rate table (by target and family) for a terminal: one first column, each target's
    ``(all)`` row then its families indented under it."""
    if fmt != "md" or not {"target", "family"} <= set(table.columns):
        return show(table, fmt, drop)
    names = [f"{t} (all)" if f == "(all)" else f"  {f}" for t, f in zip(table["target"], table["family"])]
    compact = table.drop(columns=["target", "family"])
    compact.insert(0, "target / family", names)
    return show(compact, fmt, drop)


def command_lines(rows: Iterable[tuple[str, str]], where: str, width: int = WIDTH, sep: str = "  ") -> list[str]:
    """``KEY  COMMAND`` per row; a command too long for one line goes on a line of its own under its key,
    and one longer than a line is left to ``where`` (a file that has it)."""
    lines = []
    for key, command in rows:
        if not command:
            continue
        if len(key) + len(sep) + len(command) <= width:
            lines.append(f"{key}{sep}{command}")
        elif len(command) <= width:
            lines += [key, command]
        else:
            lines.append(clip(f"{key}  (too long for a line: see {where})", width))
    return lines


def root_causes(causes: pd.DataFrame, fmt: str, where: str) -> str:
    """Root causes for a terminal: status, key, target, outcome, count, signature and attribution in a
    table, then each one's replay command on a line of its own; every column is in ``where``."""
    if fmt != "md":
        return render(causes, fmt)
    shown = [c for c in ROOT_CAUSE_VIEW if c in causes.columns]
    text = show(causes[shown], fmt, drop=["attribution"], keep=shown[:4])
    replays = command_lines(zip(causes["bucket"], causes["replay"]), where) if "replay" in causes else []
    if replays:
        text += "\n\n" + clip(f"replay (every column in {where}):", WIDTH) + "\n" + "\n".join(replays)
    return text


def status_counts(statuses: pd.Series) -> str:
    """``"1 new, 3 known"``: root causes by verdict (a ledger's ``known: STATUS`` counted as known)."""
    counts = statuses.astype(str).str.split(":").str[0].value_counts()
    return ", ".join(f"{int(n)} {s}" for s, n in counts.items())


def failing_lines(failing: pd.DataFrame, where: str, width: int = WIDTH) -> list[str]:
    """Each new or regressed root cause: what fails, who is responsible, the command that replays it."""
    lines = []
    for row in failing.itertuples():
        lines.append(clip(f"{row.status.upper()}: {row.target} {row.outcome}: {row.signature}", width))
        lines.append(clip(f"  attribution: {row.attribution}", width))
        lines += ["  " + line for line in command_lines([("replay:", row.replay)], where, width - 2, " ")]
    return lines


def per_target(table: pd.DataFrame, verdicts: pd.DataFrame) -> pd.DataFrame:
    """One row per target of a pass-rate table: cases, pass rate and its root causes by verdict (a target none of
    whose cases could run here says so)."""
    totals = table[table["family"] == "(all)"]
    causes = {t: status_counts(rows["status"]) for t, rows in verdicts.groupby("target")} if not verdicts.empty else {}
    unrun = totals["cases"] == totals.get("unsupported", -1)
    return pd.DataFrame({"target": totals["target"], "cases": totals["cases"], "pass rate %": totals["pass rate %"],
                         "root causes": [causes.get(t, "unsupported here" if u else "none")
                                         for t, u in zip(totals["target"], unrun)]})


def night_report(night: str, table: pd.DataFrame, verdicts: pd.DataFrame, failing: pd.DataFrame, out: str) -> str:
    """A night on a terminal: what is new and regressed (the first ``FAILING_SHOWN`` in full), then one line per
    target; the per-family tables and every root cause are in ``out``'s files (and behind ``--verbose``)."""
    where = f"{out}/root-causes.md"
    lines = [clip(f"nightly {night}: " + (f"{len(verdicts)} root cause(s): {status_counts(verdicts['status'])}"
                                          if not verdicts.empty else "no root causes"), WIDTH)]
    lines += failing_lines(failing.head(FAILING_SHOWN), where) if not failing.empty else ["nothing new or regressed"]
    if len(failing) > FAILING_SHOWN:
        lines.append(clip(f"and {len(failing) - FAILING_SHOWN} more new or regressed root cause(s): {where}", WIDTH))
    lines += ["", show(per_target(table, verdicts), "md"), ""]
    lines.append(clip(f"per family and per root cause: {out}/ (table.md, root-causes.md, report.html) or --verbose", WIDTH))
    return "\n".join(lines)


def history_view(table: pd.DataFrame, fmt: str) -> str:
    """Pass rates over time for a terminal: the newest nights that fit (targets and families first, each
    family under its target), and how many older nights ``--format csv`` adds."""
    if fmt != "md":
        return render(table, fmt)
    nights = [c for c in table.columns if c not in ("target", "family")]
    shown = pass_rate_view(table, fmt, drop=nights[:-1])
    older = len(nights) - (len(shown.splitlines()[0].split("|")) - 3)
    return shown + (f"\n{older} older night(s): --format csv" if older > 0 else "")


def indented(text: str, indent: int, width: int = WIDTH) -> str:
    """``text`` wrapped at ``width`` columns, its continuation lines indented by ``indent`` spaces."""
    return textwrap.fill(text, width, subsequent_indent=" " * indent, break_on_hyphens=False)
