"""The known-problem ledger: a TOML file the user commits (``layoutfuzz-known.toml``), one entry per
root cause the team has looked at, with its title, attribution, status and upstream link. A root
cause in the ledger is reported but never fails a nightly (the hand-written signatures of
ClusterFuzz and syzbot, which keep known problems out of "new")."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path

import tomli_w

from layoutfuzz.harness.target import PARTIES
from layoutfuzz.reports.report import bucket_of
from layoutfuzz.reports.store import write_atomically

DEFAULT_LEDGER = "layoutfuzz-known.toml"
STATUSES = ("unreported", "open upstream", "fixed upstream", "expected behaviour", "hardware behaviour", "specification",
            "harness bug")


class LedgerError(ValueError):
    """The ledger file is not a valid ledger (what is wrong, where)."""


@dataclass(frozen=True)
class KnownProblem:
    """One root cause the team knows: the signature identifies it; the rest is what people wrote."""

    target: str
    outcome: str
    signature: str
    title: str
    status: str = "unreported"
    attribution: str = "system under test"  # one of harness.target.PARTIES
    layer: str = ""
    link: str = ""
    note: str = ""
    reproducer: str = ""  # a reduced case that shows it (a path from the ledger's folder); `bisect` replays it
    first_bad: str = ""  # the regression range `layoutfuzz bisect` found: '<=3.6.0', '3.7.0', ...
    first_good: str = ""  # the first release where the reproducer passes again ('' if still bad)
    bisected: str = ""  # the releases replayed and what each gave: '3.6.0 bad, 3.8.0 good, 3.9.0 good'
    masked: str = ""  # releases where another failure comes first, so this one cannot show: '3.6.0'

    def present_in(self, version: str) -> bool | None:
        """Whether the problem is present in Triton ``version`` by its recorded range (None: no range, or
        another failure masks it there)."""
        from layoutfuzz.harness.triton_compat import parse_version

        if not self.first_bad or version in [m.strip() for m in self.masked.split(",")]:
            return None
        low = self.first_bad.removeprefix("<=")
        v = parse_version(version)
        after_start = self.first_bad.startswith("<=") or v >= parse_version(low)
        return after_start and (not self.first_good or v < parse_version(self.first_good))

    @property
    def bucket(self) -> str:
        return bucket_of(self.target, self.outcome, self.signature)


def entry(raw: Mapping, where: str) -> KnownProblem:
    """A ledger entry from its fields, checked (LedgerError says what is wrong and where)."""
    names = {f.name for f in fields(KnownProblem)}
    unknown = set(raw) - names
    if unknown:
        raise LedgerError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; allowed: {', '.join(sorted(names))}")
    missing = [k for k in ("target", "outcome", "signature", "title") if not raw.get(k)]
    if missing:
        raise LedgerError(f"{where}: missing {', '.join(missing)}")
    if any(not isinstance(v, str) for v in raw.values()):
        raise LedgerError(f"{where}: every value must be a string")
    problem = KnownProblem(**raw)
    if problem.status not in STATUSES:
        raise LedgerError(f"{where}: status {problem.status!r} is not one of: {', '.join(STATUSES)}")
    if problem.attribution not in PARTIES:
        raise LedgerError(f"{where}: attribution {problem.attribution!r} is not one of: {', '.join(PARTIES)}")
    return problem


def load(path: str | Path) -> dict[str, KnownProblem]:
    """Bucket key -> known problem; an absent file is an empty ledger."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise LedgerError(f"{path} is not a TOML ledger: {exc}") from None
    entries = data.get("problem", [])
    if not isinstance(entries, list) or set(data) - {"problem"}:
        raise LedgerError(f"{path}: expected only [[problem]] tables")
    problems = [entry(raw, f"{path} problem {i + 1}") for i, raw in enumerate(entries)]
    return {p.bucket: p for p in problems}


def save(path: str | Path, problems: Iterable[KnownProblem]) -> None:
    """Writes the ledger (atomically), sorted by target and title so that diffs stay small."""
    ordered = sorted(problems, key=lambda p: (p.target, p.title, p.signature))
    body = {"problem": [{k: v for k, v in asdict(p).items() if v} for p in ordered]}
    header = ("# layoutfuzz known problems: root causes reported but never failing a nightly.\n"
              "# `layoutfuzz known add BUCKET --title ...` adds one; `layoutfuzz known list` shows them with their history.\n\n")
    write_atomically(Path(path), header + tomli_w.dumps(body))


def add(path: str | Path, problem: KnownProblem) -> bool:
    """Adds (or updates, keeping what is not given anew) one entry; True if it was new."""
    problems = load(path)
    old = problems.get(problem.bucket)
    if old is not None:
        given = {k: v for k, v in asdict(problem).items() if v and v != getattr(KnownProblem, k, None)}
        problem = replace(old, **given)
    problems[problem.bucket] = problem
    save(path, problems.values())
    return old is None
