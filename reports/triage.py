"""Memory across nights: every root cause a nightly root has ever seen, with its reproducer, and the
verdict of each night on it.

A root cause is *new* only when no earlier night of the root saw it and the ledger does not know it;
*fixed* only when its stored reproducer was re-run tonight and passed (absence from tonight's random
sample says nothing); *regressed* when a fixed one fails again. The store is a table of the root's
``history.sqlite`` (beside the nightly pass rates), so it travels with the nights it describes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from layoutfuzz.generators.case import Case
from layoutfuzz.reports import schema
from layoutfuzz.reports.store import transaction

HISTORY = "history.sqlite"
SCHEMA = """
CREATE TABLE IF NOT EXISTS root_causes (
    bucket TEXT PRIMARY KEY, target TEXT NOT NULL, outcome TEXT NOT NULL, signature TEXT NOT NULL,
    families TEXT NOT NULL, spec TEXT NOT NULL, reproducer TEXT NOT NULL, reduced INTEGER NOT NULL,
    first_night TEXT NOT NULL, first_version TEXT NOT NULL, last_night TEXT NOT NULL, last_version TEXT NOT NULL,
    status TEXT NOT NULL, fixed_night TEXT, fixed_version TEXT
);
CREATE TABLE IF NOT EXISTS verdicts (
    night TEXT NOT NULL, bucket TEXT NOT NULL, verdict TEXT NOT NULL, cases INTEGER NOT NULL, version TEXT NOT NULL,
    PRIMARY KEY (night, bucket)
);
"""
# what a night can say of a root cause
NEW, REGRESSED, PERSISTING, KNOWN, FIXED, NOT_SEEN = "new", "regressed", "persisting", "known", "fixed", "not seen"
FAILING = (NEW, REGRESSED)  # verdicts that fail a nightly
# what a root cause's reproducer did when re-run: failed the same way, passed, failed otherwise (or could not run)
SAME, PASSES, OTHER = "same", "pass", "other"


def later_verdict(earlier: bool, seen: bool, replay: str | None = None) -> str:
    """The one rule for what a later campaign says of a root cause, used by the nightly and by ``diff``: seen
    again, it persists (new if nothing earlier had it); not seen, only its reproducer re-run can say more:
    failing the same way it persists, passing it is fixed, else (not re-run, or failing otherwise) it was
    not seen. A root cause merely absent from a random sample is never fixed."""
    if seen:
        return PERSISTING if earlier else NEW
    return {SAME: PERSISTING, PASSES: FIXED}.get(replay or "", NOT_SEEN)


class TriageError(Exception):
    """The root's history database cannot be used (what is wrong)."""


@dataclass(frozen=True)
class RootCause:
    """One root cause as the root remembers it."""

    bucket: str
    target: str
    outcome: str
    signature: str
    families: str
    spec: str
    reproducer: Case  # the reduced case where there is one, else the bucket's representative
    reduced: bool
    first_night: str
    first_version: str
    last_night: str
    last_version: str
    status: str  # "open" or "fixed"
    fixed_night: str | None = None
    fixed_version: str | None = None


@dataclass(frozen=True)
class Replay:
    """A stored reproducer re-run tonight: whether it still fails in the same way."""

    bucket: str
    outcome: str
    signature: str

    def still_fails(self, cause: RootCause) -> bool:
        return (self.outcome, self.signature) == (cause.outcome, cause.signature)

    def state(self, cause: RootCause) -> str:
        """SAME, PASSES or OTHER: what this replay says of ``cause``."""
        return SAME if self.still_fails(cause) else PASSES if self.passes else OTHER

    @property
    def passes(self) -> bool:
        return self.outcome == "pass"


class Triage:
    """The root causes of one nightly root (``ROOT/history.sqlite``)."""

    def __init__(self, root: str | Path) -> None:
        self.path = Path(root) / HISTORY
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None)
            self.db.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise TriageError(f"{self.path} is not a layoutfuzz history database: {exc}") from None

    def close(self) -> None:
        self.db.close()

    def causes(self) -> dict[str, RootCause]:
        rows = self.db.execute(
            "SELECT bucket, target, outcome, signature, families, spec, reproducer, reduced, first_night, first_version,"
            " last_night, last_version, status, fixed_night, fixed_version FROM root_causes").fetchall()
        try:  # a root is data (CI caches and uploads it): each reproducer is checked before it is replayed
            return {r[0]: RootCause(*r[:6], Case.from_dict(schema.check(json.loads(r[6], parse_constant=schema.strict_constant),
                                                                        "case", f"{self.path} ({r[0]})")), bool(r[7]), *r[8:])
                    for r in rows}
        except (TypeError, ValueError, RecursionError) as exc:
            raise TriageError(str(exc) if isinstance(exc, schema.SchemaError) else f"{self.path}: a reproducer is not JSON: {exc}") from None

    def to_replay(self, targets: Iterable[str], night: str) -> list[RootCause]:
        """Open root causes of these targets first seen before ``night``, whose reproducers tonight re-runs."""
        wanted = set(targets)
        return [c for c in self.causes().values() if c.status == "open" and c.target in wanted and c.first_night < night]

    def judge(self, night: str, version: Mapping[str, str], buckets: pd.DataFrame, reproducers: Mapping[str, tuple[Case, bool]],
              replays: Mapping[str, Replay], known: Iterable[str], specs: Mapping[str, str]) -> pd.DataFrame:
        """Tonight's verdict on every root cause it saw or replayed, remembered for later nights.

        ``buckets``: tonight's bucket table; ``reproducers``: bucket -> (reduced or representative case,
        reduced?); ``replays``: bucket -> what its stored reproducer did tonight; ``known``: ledger buckets;
        ``version``: target -> version of its system under test."""
        known = set(known)
        causes = self.causes()
        with transaction(self.db):
            self.db.execute("DELETE FROM verdicts WHERE night = ?", (night,))  # a resumed night is judged anew
            for row in buckets.itertuples():
                cause = causes.get(row.bucket)
                earlier = cause is not None and cause.first_night < night
                if row.bucket in known:
                    verdict = KNOWN
                elif earlier and cause.status == "fixed" and (cause.fixed_night or "") < night:
                    verdict = REGRESSED
                else:
                    verdict = later_verdict(earlier, seen=True)
                self._remember(row, cause, night, version.get(row.target, ""), reproducers.get(row.bucket), specs)
                self._verdict(night, row.bucket, verdict, int(row.cases), version.get(row.target, ""))
            seen = set(buckets["bucket"]) if not buckets.empty else set()
            for bucket, replay in replays.items():
                if bucket in seen or bucket not in causes:
                    continue
                cause = causes[bucket]
                v = version.get(cause.target, "")
                verdict = later_verdict(True, seen=False, replay=replay.state(cause))
                if verdict == PERSISTING:
                    verdict = KNOWN if bucket in known else PERSISTING
                    self.db.execute("UPDATE root_causes SET last_night=?, last_version=? WHERE bucket=?", (night, v, bucket))
                elif verdict == FIXED:
                    self.db.execute("UPDATE root_causes SET status='fixed', fixed_night=?, fixed_version=? WHERE bucket=?",
                                    (night, v, bucket))
                self._verdict(night, bucket, verdict, 0, v)
        return self.table(night)

    def replays(self, night: str) -> dict[str, str]:
        """Bucket -> what its stored reproducer did on ``night`` (SAME, PASSES or OTHER), for the root causes
        that night re-ran and did not see in its campaign."""
        rows = self.db.execute("SELECT bucket, verdict FROM verdicts WHERE night = ? AND cases = 0", (night,)).fetchall()
        states = {PERSISTING: SAME, KNOWN: SAME, FIXED: PASSES, NOT_SEEN: OTHER}
        return {bucket: states[verdict] for bucket, verdict in rows if verdict in states}

    def _remember(self, row, cause: RootCause | None, night: str, version: str, reproducer: tuple[Case, bool] | None,
                  specs: Mapping[str, str]) -> None:
        case, reduced = reproducer if reproducer else (None, False)
        if cause is None:
            if case is None:
                return
            self.db.execute(
                "INSERT INTO root_causes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,'open',NULL,NULL)",
                (row.bucket, row.target, row.outcome, row.signature, row.families, specs.get(row.target, row.target),
                 case.to_json(), int(reduced), night, version, night, version))
            return
        families = ", ".join(sorted(set(cause.families.split(", ")) | set(str(row.families).split(", "))))
        better = case is not None and (reduced or not cause.reduced)  # keep a reduced reproducer once there is one
        self.db.execute(
            "UPDATE root_causes SET families=?, last_night=MAX(last_night, ?), last_version=?, status='open',"
            " fixed_night=NULL, fixed_version=NULL" + (", reproducer=?, reduced=?" if better else "") + " WHERE bucket=?",
            (families, night, version, *((case.to_json(), int(reduced)) if better else ()), row.bucket))

    def _verdict(self, night: str, bucket: str, verdict: str, cases: int, version: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO verdicts VALUES (?,?,?,?,?)", (night, bucket, verdict, cases, version))

    def table(self, night: str | None = None) -> pd.DataFrame:
        """Root causes with tonight's verdict (or, without a night, the latest one each had)."""
        query = (
            "SELECT r.bucket, r.target, r.outcome, r.signature, r.families, v.verdict AS status, v.cases,"
            " r.first_night, r.first_version, r.last_night, r.last_version, r.fixed_night, r.fixed_version,"
            " r.reproducer, r.reduced, r.spec FROM root_causes r JOIN verdicts v ON v.bucket = r.bucket"
            + (" WHERE v.night = ?" if night else " WHERE v.night = (SELECT MAX(night) FROM verdicts w WHERE w.bucket = r.bucket)"))
        return pd.read_sql_query(query, self.db, params=(night,) if night else ())


def night_replays(directory: str | Path) -> dict[str, str]:
    """What the nightly re-ran for the campaign in ``directory`` when it is a night of a nightly root
    (``ROOT/YYYY-MM-DD``, with ``ROOT/history.sqlite``): bucket -> SAME, PASSES or OTHER; else nothing."""
    directory = Path(directory).resolve()
    if not (directory.parent / HISTORY).exists():
        return {}
    try:
        triage = Triage(directory.parent)
    except TriageError:
        return {}
    try:
        return triage.replays(directory.name[:10])
    except sqlite3.DatabaseError:
        return {}
    finally:
        triage.close()
