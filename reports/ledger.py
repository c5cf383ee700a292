"""The known-problem ledger: a TOML file the user commits (``layoutfuzz-known.toml``), one entry per
root cause the team has looked at, with its title, attribution, status and upstream link. A root
cause in the ledger is reported but never fails a nightly (the hand-written signatures of
ClusterFuzz and syzbot, which keep known problems out of "new")."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import tomli_w

from layoutfuzz.reports.files import write_atomically
from layoutfuzz.reports.outcome import PARTIES, Outcome
from layoutfuzz.reports.signatures import bucket_of

DEFAULT_LEDGER = "layoutfuzz-known.toml"
OUTCOMES = tuple(o.value for o in Outcome)
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
    attribution: str = "system under test"  # one of reports.outcome.PARTIES
    layer: str = ""
    link: str = ""
    note: str = ""
    reproducer: str = ""  # a reduced case that shows it (a path from the ledger's folder); `bisect` replays it
    first_bad: str = ""  # the regression range `layoutfuzz bisect` found: '<=3.6.0', '3.7.0', ...
    first_good: str = ""  # the first release where the reproducer passes again ('' if still bad)
    bisected: str = ""  # the releases replayed and what each gave: '3.6.0 bad, 3.8.0 good, 3.9.0 good'
    masked: str = ""  # releases where another failure comes first, so this one cannot show: '3.6.0'
    # other signatures of the same root cause, one per line: a signature of the entry's target and outcome, or
    # '[TARGET OUTCOME] signature' for one another target (or outcome) meets it with
    variants: str = ""
    reproducers: str = ""  # reduced cases of the variants (paths from the ledger's folder), one per line

    @property
    def identities(self) -> tuple[tuple[str, str, str], ...]:
        """(target, outcome, signature) of every form this root cause takes: its own, then its variants'."""
        others = [s for s in self.variants.split("\n") if s.strip()]  # exact: a signature may end in a space
        return ((self.target, self.outcome, self.signature), *(variant(s, self.target, self.outcome) for s in others))

    @property
    def buckets(self) -> tuple[str, ...]:
        """Every bucket this root cause shows as: its signature's, then its variants'."""
        return tuple(bucket_of(*identity) for identity in self.identities)

    @property
    def targets(self) -> tuple[str, ...]:
        """The targets that meet this root cause: its own first."""
        return tuple(dict.fromkeys(t for t, _, _ in self.identities))

    @property
    def cases(self) -> tuple[str, ...]:
        """Its reduced cases: the reproducer, then the variants' (paths from the ledger's folder)."""
        return tuple(c for c in (self.reproducer, *self.reproducers.split("\n")) if c.strip())

    def present_in(self, version: str, order: Callable[[str], Any]) -> bool | None:
        """Whether the problem is present in Triton ``version`` by its recorded range (None: no range, or
        another failure masks it there); ``order`` makes a release comparable (``triton_compat.parse_version``)."""
        if not self.first_bad or version in [m.strip() for m in self.masked.split(",")]:
            return None
        low = self.first_bad.removeprefix("<=")
        v = order(version)
        after_start = self.first_bad.startswith("<=") or v >= order(low)
        return after_start and (not self.first_good or v < order(self.first_good))

    @property
    def bucket(self) -> str:
        return bucket_of(self.target, self.outcome, self.signature)


VARIANT_ELSEWHERE = re.compile(r"\[(?P<target>[\w.+-]+) (?P<outcome>[a-z]+)\] (?P<signature>.*)", re.DOTALL)


def variant(line: str, target: str, outcome: str) -> tuple[str, str, str]:
    """(target, outcome, signature) of a variants line: '[TARGET OUTCOME] signature' names another target or outcome
    (a known outcome only), any other line is a signature of the entry's own."""
    match = VARIANT_ELSEWHERE.fullmatch(line)
    if match and match["outcome"] in OUTCOMES:
        return match["target"], match["outcome"], match["signature"]
    return target, outcome, line


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
    """Bucket key -> known problem (a root cause with variants under each of its buckets); an absent file is an
    empty ledger."""
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
    return {bucket: p for p in problems for bucket in p.buckets}


HEADER = ("# layoutfuzz known problems: root causes reported but never failing a nightly.\n"
          "# `layoutfuzz known add BUCKET --title ...` adds one; `layoutfuzz known list` shows them with their history.\n")
TABLE = "[[problem]]"


def save(path: str | Path, problems: Iterable[KnownProblem]) -> None:
    """Writes the ledger (atomically) as an edit of the file that is there: each entry keeps its place, its
    comments and the lines of the fields that did not change; entries no longer given are removed and new ones
    appended, so one changed field is a diff of a line or two."""
    path = Path(path)
    given = list({p.bucket: p for p in problems}.values())
    try:
        edited = _edit(path.read_text() if path.exists() else HEADER, given)
    except (tomllib.TOMLDecodeError, KeyError, IndexError, AttributeError):
        edited = ""
    if not _parses_as(edited, given):  # a hand-written layout the edit cannot follow: the entries, in their order
        edited = HEADER + "".join("\n" + TABLE + "\n" + _field_lines(p) for p in given)
    write_atomically(path, edited)


def _edit(text: str, problems: list[KnownProblem]) -> str:
    """``text`` with its entries edited into ``problems``: kept ones in place, others removed, new ones appended."""
    wanted = {p.bucket: p for p in problems}
    head, blocks = _blocks(text)
    kept = []
    for block in blocks:
        bucket = _bucket_of(block)
        if bucket in wanted:
            kept.append(_edited(block, wanted.pop(bucket)))
    kept += ["\n" + TABLE + "\n" + _field_lines(p) for p in wanted.values()]
    return head + "".join(_separated(kept))


def _parses_as(text: str, problems: list[KnownProblem]) -> bool:
    """Whether ``text`` is a ledger of exactly ``problems``, in their order."""
    try:
        entries = tomllib.loads(text).get("problem", [])
        return [entry(raw, "edit") for raw in entries] == problems
    except (tomllib.TOMLDecodeError, LedgerError, TypeError):
        return False


def _blocks(text: str) -> tuple[str, list[str]]:
    """The text before the first ``[[problem]]`` and each entry's text (its table line to the next one)."""
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.strip() == TABLE]
    if not starts:
        return text, []
    ends = starts[1:] + [len(lines)]
    return "".join(lines[:starts[0]]), ["".join(lines[a:b]) for a, b in zip(starts, ends)]


def _separated(blocks: list[str]) -> list[str]:
    """Blocks that each end in a newline (a block appended after a file without a final newline)."""
    return [b if b.endswith("\n") else b + "\n" for b in blocks]


def _bucket_of(block: str) -> str:
    raw = tomllib.loads(block)["problem"][0]
    return bucket_of(raw["target"], raw["outcome"], raw["signature"])


def _field_lines(problem: KnownProblem) -> str:
    return tomli_w.dumps({k: v for k, v in asdict(problem).items() if v}, multiline_strings=True)


def _edited(block: str, problem: KnownProblem) -> str:
    """One entry's text with only the lines of changed fields rewritten (a field cleared loses its line, a new
    one goes after the entry's last field)."""
    old = tomllib.loads(block)["problem"][0]
    lines = block.splitlines(keepends=True)
    for name, value in asdict(problem).items():
        if old.get(name, "") == value:
            continue
        at = next((i for i, line in enumerate(lines) if _key(line) == name), None)
        line = tomli_w.dumps({name: value}, multiline_strings=True) if value else ""  # a line a value
        if at is not None:
            lines[at:_value_end(lines, at)] = [line]
        elif value:
            lines.insert(_insertion_point(lines, name), line)
    return "".join(lines)


def _insertion_point(lines: list[str], name: str) -> int:
    """Where a new field's line goes: after the value of the last field before it in KnownProblem's order
    (else after the entry's last field)."""
    order = [f.name for f in fields(KnownProblem)]
    keys = {_key(text): i for i, text in enumerate(lines) if _key(text)}
    before = [keys[k] for k in order[:order.index(name)] if k in keys]
    at = max(before) if before else max(keys.values(), default=0)
    return _value_end(lines, at) if keys else at + 1


def _value_end(lines: list[str], at: int) -> int:
    """The line after the value that starts on line ``at`` (a multi-line string spans several)."""
    for end in range(at + 1, len(lines) + 1):
        try:
            tomllib.loads("".join(lines[at:end]))
            return end
        except tomllib.TOMLDecodeError:
            continue
    return at + 1


def _key(line: str) -> str:
    """The key a ``key = value`` line sets ('' for anything else)."""
    key, sep, _ = line.partition("=")
    key = key.strip()
    return key if sep and key.isidentifier() and not line.startswith((" ", "\t", "#")) else ""


IDENTITY = ("target", "outcome", "signature")


def add(path: str | Path, problem: KnownProblem) -> bool:
    """Adds (or updates, keeping what is not given anew) one entry; True if it was new. An entry that holds the
    problem's bucket as a variant is the one updated: it keeps its own target, outcome and signature."""
    known = load(path)
    old = known.get(problem.bucket)
    if old is not None:
        given = {k: v for k, v in asdict(problem).items()
                 if v and v != getattr(KnownProblem, k, None) and k not in IDENTITY}
        problem = replace(old, **given)
    problems = [problem if p is old else p for p in dict.fromkeys(known.values())]
    save(path, problems if old is not None else [*problems, problem])
    return old is None
