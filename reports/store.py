"""The campaign store: every outcome in SQLite (WAL), every non-pass also as a JSON report.

Each outcome is committed as it arrives, and its JSON report is written (atomically) before
the row, so a campaign killed at any moment, even by SIGKILL, keeps everything it recorded.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import resource
import signal
import sqlite3
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from layoutfuzz.generators.case import Case, parse_case_id
from layoutfuzz.reports import schema
from layoutfuzz.reports.files import write_many_atomically
from layoutfuzz.reports.outcome import OUTCOMES, Outcome, Result

if TYPE_CHECKING:  # pandas is imported where a frame is made: a campaign's workers file kernels and passes through this
    import pandas as pd  # module, and its import costs their fork server half a second

SCHEMA = """
CREATE TABLE IF NOT EXISTS campaign (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS outcomes (
    target TEXT NOT NULL,
    seed INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    family TEXT NOT NULL,
    outcome TEXT NOT NULL,
    detail TEXT NOT NULL,
    signature TEXT NOT NULL,
    bucket TEXT NOT NULL,
    mismatch_count INTEGER NOT NULL,
    duration_s REAL NOT NULL,
    case_json TEXT NOT NULL,
    report TEXT,
    metrics TEXT,
    recorded_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (target, seed, idx)
);
"""
# partial indexes: only a campaign's few non-passes and per-case metrics, so that reading them back after a night of
# millions of passes is not a scan of the whole store (and storing a pass costs no index entry)
INDEXES = """
CREATE INDEX IF NOT EXISTS outcomes_problems ON outcomes (outcome) WHERE outcome != 'pass';
CREATE INDEX IF NOT EXISTS outcomes_metrics ON outcomes (target) WHERE metrics IS NOT NULL;
"""

COLUMNS = ("target", "seed", "idx", "family", "outcome", "detail", "signature", "bucket", "mismatch_count", "duration_s",
           "case_json", "report")  # what every reader needs of an existing store's outcomes (metrics is added if absent)
TEXT_COLUMNS = ("target", "family", "outcome", "signature", "bucket")  # a NULL or a number here would drop or split a row
DB_NAME = "layoutfuzz.sqlite"
BUSY_TIMEOUT_S = 60.0  # how long a writer waits for another's transaction
LOCK_NAME = ".layoutfuzz.lock"


class StoreError(Exception):
    """The output directory does not hold a usable store."""


def ignore_file_size_signal() -> None:
    """A write past the file size limit (``ulimit -f``) fails with EFBIG, as Python sets it up, rather than killing the
    process with SIGXFSZ (kept so where a host restored the default): a campaign stops then as on a full disk."""
    if hasattr(signal, "SIGXFSZ") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def out_of_room(exc: BaseException) -> tuple[str, str] | None:
    """Why a write failed for want of room, and what to do, where it did: a full disk or quota, or the file size limit
    (EFBIG; SQLite calls it a disk I/O error); None for any other failure."""
    code = getattr(exc, "errno", None)
    if code in (errno.ENOSPC, errno.EDQUOT) or getattr(exc, "sqlite_errorname", "") == "SQLITE_FULL" or "disk is full" in str(exc):
        return "no space left on the disk", "free space"
    limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    io_error = getattr(exc, "sqlite_errorname", "").startswith("SQLITE_IOERR")
    if code == errno.EFBIG or (io_error and limit != resource.RLIM_INFINITY):
        where = f" of {limit:,} bytes" if limit != resource.RLIM_INFINITY else ""
        return f"a file reached the file size limit{where}", "raise the limit (ulimit -f)"
    return None


@contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """All of the block's writes or none, on a connection in autocommit mode (``isolation_level=None``,
    where ``with db:`` opens no transaction)."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


class DirectoryLock:
    """The one writer of a campaign directory (an advisory ``flock`` on ``.layoutfuzz.lock``, released
    when the process ends however it ends): a second writer would duplicate work or delete the first
    one's results."""

    def __init__(self, directory: str | Path) -> None:
        self.path = Path(directory) / LOCK_NAME
        self._handle = None

    def acquire(self) -> None:
        """Takes the lock, or raises StoreError naming who holds it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(self.path, "a+")  # noqa: SIM115 - held until release
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise StoreError(f"{self.path.parent} is being written by another layoutfuzz ({holder}): "
                             "wait for it, or write elsewhere with --out") from None
        handle.truncate(0)
        handle.write(f"pid {os.getpid()}")
        handle.flush()
        self._handle = handle

    def release(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None


class Store:
    """One campaign's output directory: ``layoutfuzz.sqlite`` and ``reports/*.json``."""

    def __init__(self, directory: str | Path, create: bool = True) -> None:
        self.directory = Path(directory)
        self.path = self.directory / DB_NAME
        self.lock: DirectoryLock | None = None  # held by the campaign writing here, released on close
        if not create and not self.path.exists():
            raise StoreError(f"no campaign in {self.directory} (no {DB_NAME})")
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_S)
            if not create:  # an existing campaign: refuse what is not one rather than read it as empty
                tables = {row[0] for row in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                if not {"campaign", "outcomes"} <= tables:
                    self.db.close()
                    raise StoreError(f"{self.path} is not a layoutfuzz campaign (no campaign and outcomes tables)")
            write_ahead(self.db)
            self.db.executescript(SCHEMA)
            columns = {row[1] for row in self.db.execute("PRAGMA table_info(outcomes)")}
            missing = [c for c in COLUMNS if c not in columns]
            if missing:
                self.db.close()
                raise StoreError(f"{self.path} is not a layoutfuzz campaign: its outcomes have no {', '.join(missing)} column")
            if "metrics" not in columns:  # stores written before metrics existed
                self.db.execute("ALTER TABLE outcomes ADD COLUMN metrics TEXT")
            self.db.executescript(INDEXES)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path} is not a usable layoutfuzz campaign: {exc}") from None

    def close(self) -> None:
        self.db.close()
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    # ---- campaign metadata ---------------------------------------------------------------

    def meta(self) -> dict[str, Any]:
        """The campaign's settings, checked against their schema (a store is data: it may come from anyone)."""
        try:
            values = {str(k): json.loads(v, parse_constant=schema.strict_constant) for k, v in self.db.execute("SELECT key, value FROM campaign")}
        except (TypeError, ValueError, RecursionError) as exc:
            raise StoreError(f"{self.path} is not a valid layoutfuzz campaign: its settings are not JSON ({exc})") from None
        if values:  # a store being made has none yet
            try:
                schema.check(values, "campaign", str(self.path))
            except schema.SchemaError as exc:
                raise StoreError(str(exc)) from None
        return values

    def set_meta(self, values: Mapping[str, Any]) -> None:
        """All the settings or none (autocommit mode would keep some of them on a failure)."""
        with transaction(self.db):
            self.db.executemany("INSERT OR REPLACE INTO campaign VALUES (?, ?)", [(k, json.dumps(v)) for k, v in values.items()])


    # ---- outcomes ------------------------------------------------------------------------

    def recorded(self) -> set[tuple[str, int, int]]:
        """(target, seed, index) of every recorded case; a row whose seed or index is not an integer is refused (a text
        index would never match the case it names, which would run again)."""
        try:
            rows = set(self.db.execute("SELECT target, seed, idx FROM outcomes"))
        except sqlite3.DatabaseError as exc:
            raise self._unreadable(exc) from None
        bad = next((row for row in rows if not (isinstance(row[0], str) and type(row[1]) is int and type(row[2]) is int)), None)
        if bad is not None:
            raise StoreError(f"{self.path} is not a valid layoutfuzz campaign: a row's target, seed and index are "
                             f"{str(bad)[:200]}, not a name and two integers")
        return rows

    def record(self, result: Result, bucket: str, report: Mapping[str, Any] | None, signature: str | None = None) -> Path | None:
        """Stores one outcome under its bucket and root-cause ``signature`` (default: the
        comparison's); a report, if given, goes to ``reports/`` first."""
        return self.record_many([(result, bucket, report, signature)])[0]

    def record_many(self, rows: Sequence[tuple[Result, str, Mapping[str, Any] | None, str | None]]) -> list[Path | None]:
        """``record`` for many outcomes in one transaction; every report is written before the rows."""
        paths, values, files = [], [], []
        for result, bucket, report, signature in rows:
            path = None
            if report is not None:
                path = self.directory / "reports" / report_name(result.case)
                files.append((path, json.dumps(report, indent=2, sort_keys=True) + "\n"))
            paths.append(path)
            values.append(outcome_row(result, bucket, signature, str(path.relative_to(self.directory)) if path else None))
        write_many_atomically(files)
        insert_rows(self.db, values)
        return paths

    def frame(self, outcomes: Sequence[str] | None = None) -> pd.DataFrame:
        """Every outcome as a DataFrame (only those of ``outcomes`` if given: a night's millions of passes are not
        read back to find its few findings)."""
        where = ""
        if outcomes is not None:
            where = f" WHERE outcome IN ({','.join('?' * len(outcomes))})"
            if "pass" not in outcomes:  # the condition of the partial index outcomes_problems, word for word
                where += " AND outcome != 'pass'"
        frame = self._read(
            "SELECT target, seed, idx, family, outcome, detail, signature, bucket, mismatch_count, duration_s, report, metrics"
            f" FROM outcomes{where} ORDER BY target, seed, idx", tuple(outcomes or ()))
        return self._checked_rows(frame)

    def counts(self) -> pd.DataFrame:
        """Cases and worker time per (target, family, outcome), counted in SQLite: what ``pass_rate_table`` needs
        (with ``metric_rows``), whatever the campaign's size."""
        counts = self._read("SELECT target, family, outcome, seed, count(*) AS cases, sum(duration_s) AS duration_s,"
                            " sum(typeof(idx) != 'integer') AS bad_idx,"
                            " sum(typeof(duration_s) NOT IN ('integer', 'real')) AS bad_duration"
                            " FROM outcomes GROUP BY target, family, outcome, seed")
        self._check_keys(counts)
        for column, what in (("bad_idx", "an index that is not an integer"), ("bad_duration", "a duration that is not a number")):
            if counts[column].sum():
                raise self._invalid(f"{int(counts[column].sum())} row(s) have {what}")
        return counts[["target", "family", "outcome", "cases", "duration_s"]]

    def metric_rows(self) -> pd.DataFrame:
        """Target, family and metrics of the rows that have per-case metrics."""
        rows = self._read("SELECT target, family, metrics FROM outcomes WHERE metrics IS NOT NULL")
        self._check_text(rows, ("target", "family"))
        self._check_metrics(rows)
        return rows

    # ---- reading checks: a store is data, refused in one line rather than read wrong -------

    def _invalid(self, why: str) -> StoreError:
        return StoreError(f"{self.path} is not a valid layoutfuzz campaign: {why}")

    def _unreadable(self, exc: BaseException) -> StoreError:
        return StoreError(f"{self.path} cannot be read as a layoutfuzz campaign: {str(exc.__cause__ or exc)[:300]}")

    def _read(self, sql: str, params: tuple = ()) -> pd.DataFrame:
        """A query's rows as a DataFrame; a damaged database (malformed, a column gone) is a StoreError."""
        import pandas as pd

        try:
            return pd.read_sql_query(sql, self.db, params=params)
        except (sqlite3.DatabaseError, pd.errors.DatabaseError) as exc:
            raise self._unreadable(exc) from None

    def _checked_rows(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` (rows of ``outcomes``) if every row is one layoutfuzz writes: text keys, a known outcome, the
        campaign's seed, integer indices and counts, numeric durations, metrics as JSON objects of numbers."""
        self._check_keys(frame)
        for column in ("idx", "mismatch_count"):
            if len(frame) and frame[column].dtype.kind not in "iu":
                raise self._invalid(f"a row's {column} is not an integer")
        if len(frame) and (frame["duration_s"].dtype.kind not in "iuf" or frame["duration_s"].isna().any()):
            raise self._invalid("a row's duration_s is not a number")
        self._check_metrics(frame)
        return frame

    def _check_keys(self, frame: pd.DataFrame) -> None:
        """Text in the key columns, outcomes layoutfuzz knows, and only the campaign's seed (rows of another
        seed are another campaign's: counting them would be silently wrong)."""
        self._check_text(frame, [c for c in TEXT_COLUMNS if c in frame])
        unknown = sorted(set(frame["outcome"].unique()) - set(OUTCOMES))
        if unknown:
            raise self._invalid(f"unknown outcome(s) {', '.join(repr(o)[:40] for o in unknown[:5])} (known: {', '.join(OUTCOMES)})")
        seed = self.meta().get("seed")
        foreign = frame.loc[frame["seed"] != seed, "seed"] if seed is not None and len(frame) else ()
        if len(foreign):
            seeds = ", ".join(repr(s)[:40] for s in sorted(set(foreign), key=str)[:5])
            raise self._invalid(f"it holds rows of seed(s) {seeds}, not only of its campaign's seed {seed}")

    def _check_text(self, frame: pd.DataFrame, columns: Sequence[str]) -> None:
        from pandas.api.types import infer_dtype

        for column in columns:
            if len(frame) and (frame[column].isna().any() or infer_dtype(frame[column], skipna=False) != "string"):
                raise self._invalid(f"a row's {column} is not text (NULL or a number)")

    def _check_metrics(self, frame: pd.DataFrame) -> None:
        """Each stored metrics value is a JSON object of numbers (what ``outcome_row`` writes)."""
        for text in frame["metrics"].dropna():
            try:
                metrics = json.loads(text) if isinstance(text, str) else None
            except (ValueError, RecursionError):
                metrics = None
            if not isinstance(metrics, dict) or not all(isinstance(v, (int, float)) or v is None for v in metrics.values()):
                raise self._invalid(f"a row's metrics {str(text)[:80]!r} are not a JSON object of numbers")

    def find(self, case_id: str) -> tuple[Case | None, str | None] | None:
        """The case stored under ``TARGET/SEED/INDEX`` (None where only its outcome is kept: a plain pass, whose
        case its target regenerates) and its report path, if any."""
        key = parse_case_id(case_id)
        if key is None:
            return None
        try:
            row = self.db.execute("SELECT case_json, report FROM outcomes WHERE target=? AND seed=? AND idx=?", key).fetchone()
        except sqlite3.DatabaseError as exc:
            raise self._unreadable(exc) from None
        if row is None:
            return None
        try:
            case = Case.from_dict(schema.check(json.loads(row[0]), "case", f"{self.path} ({case_id})")) if row[0] else None
            report = str(schema.report_path(self.directory, row[1])) if row[1] else None
        except (TypeError, ValueError, RecursionError) as exc:
            raise StoreError(str(exc) if isinstance(exc, schema.SchemaError) else f"{self.path}: {case_id}: {exc}") from None
        if case is not None and case.case_id != case_id:
            raise StoreError(f"{self.path} is not a valid layoutfuzz campaign: the row of {case_id} holds case {case.case_id}")
        return case, report


def outcome_row(result: Result, bucket: str, signature: str | None, report: str | None) -> tuple:
    """A result as a row of ``outcomes`` (``insert_rows``'s order); ``report``: its report's path in the store.
    A pass or an unsupported case keeps no parameters (its ``case_json`` is empty; its target regenerates the case
    from seed and index): they were half of a night's 46 million rows."""
    case = result.case
    return (case.target, case.seed, case.index, result.family, result.outcome.value, result.detail,
            result.signature if signature is None else signature, bucket, result.mismatch_count, result.duration_s,
            "" if result.outcome in (Outcome.PASS, Outcome.UNSUPPORTED) else case.to_json(), report, json.dumps(result.metrics, sort_keys=True) if result.metrics else None)


def insert_rows(db: sqlite3.Connection, rows: Sequence[tuple]) -> None:
    """``outcome_row`` rows in one transaction (a case recorded again replaces its row)."""
    with transaction(db):
        db.executemany("INSERT OR REPLACE INTO outcomes (target, seed, idx, family, outcome, detail, signature, bucket,"
                       " mismatch_count, duration_s, case_json, report, metrics) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)


def connect(path: Path) -> sqlite3.Connection:
    """A connection to a store's database as every writer uses it: autocommit (``transaction`` opens each), WAL, and
    waiting up to a minute for the write lock (a campaign's workers store their passes beside the parent)."""
    db = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_S)
    write_ahead(db)
    return db


def write_ahead(db: sqlite3.Connection) -> None:
    """WAL with commits that survive a killed process (a power cut may lose the last ones, never corrupt)."""
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")


def report_name(case: Case) -> str:
    return f"{case.target}-{case.seed}-{case.index}.json"
