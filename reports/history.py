"""One history database across nights (``ROOT/history.sqlite``): each night's pass rates by target
and family, so a pass rate can be followed over time."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd

HISTORY = "history.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS nights (
    night TEXT NOT NULL, target TEXT NOT NULL, family TEXT NOT NULL,
    cases INTEGER NOT NULL, pass INTEGER NOT NULL, problems INTEGER NOT NULL, pass_rate REAL,
    PRIMARY KEY (night, target, family)
)
"""


class HistoryError(Exception):
    """``ROOT/history.sqlite`` is not a history database layoutfuzz can write (what is wrong)."""


def check_tables(root: Path, *schemas: str) -> None:
    """Raises HistoryError when ``ROOT/history.sqlite`` is not a database, or holds a table the schemas declare
    without all of its columns (made by another tool or by hand): found before a night runs, not after it."""
    path = Path(root) / HISTORY
    if not path.exists():
        return
    try:
        have = _columns(sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True))
    except sqlite3.DatabaseError as exc:
        raise HistoryError(f"{path} is not a layoutfuzz history database: {exc}") from None
    declared = sqlite3.connect(":memory:")
    for schema in (SCHEMA, *schemas):
        declared.executescript(schema)
    for table, columns in _columns(declared).items():
        missing = [c for c in columns if table in have and c not in have[table]]
        if missing:
            raise HistoryError(f"{path}: its table {table} lacks the column(s) {', '.join(missing)}, so it is not a "
                               "layoutfuzz history database (move it away to start a new one)")


def _columns(db: sqlite3.Connection) -> dict[str, list[str]]:
    """Table -> its column names, of a database (closed after)."""
    try:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: [row[1] for row in db.execute(f"PRAGMA table_info({t!r})")] for t in tables}
    finally:
        db.close()


def record_night(root: Path, night: str, table: pd.DataFrame) -> None:
    """Stores (replacing) one night's pass-rate table rows."""
    db = sqlite3.connect(Path(root) / HISTORY)
    with db:
        db.execute(SCHEMA)
        db.execute("DELETE FROM nights WHERE night = ?", (night,))
        db.executemany("INSERT INTO nights VALUES (?,?,?,?,?,?,?)", [
            (night, r.target, r.family, int(r.cases), int(r["pass"]),
             int(r.diverge + r.crash + r.timeout + r.error), None if pd.isna(r["pass rate %"]) else float(r["pass rate %"]))
            for _, r in table.iterrows()])
    db.close()


def pass_rates_over_time(root: Path, families: bool = False) -> pd.DataFrame:
    """Pass rate % by target (and family) and night, one column per night."""
    path = Path(root) / HISTORY
    if not path.exists():
        return pd.DataFrame()
    db = sqlite3.connect(path)
    frame = pd.read_sql_query("SELECT night, target, family, pass_rate FROM nights", db)
    db.close()
    if not families:
        frame = frame[frame["family"] == "(all)"]
    pivot = frame.pivot_table(index=["target", "family"], columns="night", values="pass_rate", aggfunc="first")
    return pivot.reset_index().rename_axis(columns=None)
