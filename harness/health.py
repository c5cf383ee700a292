"""Whether a target is broken rather than buggy: its first cases all end in the same harness ``error``.

A target whose wrapper cannot run at all (an example's placeholder ``mylib.evaluate`` never filled in, an import
that fails in every worker) gives one ``error`` a case, thousands a second, each with its report. Its first FIRST
results decide: all ``error`` with one root-cause signature, and the campaign should stop that target and say why
in one line, instead of recording the same error for every case of its budget.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

FIRST = 20  # results of a target that decide whether it errors on every case


def errors_on_every_case(results: Iterable[tuple[str, str]], first: int = FIRST) -> str | None:
    """The one signature of ``results`` (``(outcome, root-cause signature)`` in the order they came) if their first
    ``first`` are all ``error`` with that same signature; None if not, or if there are fewer than ``first``."""
    signatures = set()
    count = 0
    for outcome, signature in results:
        if count == first:
            break
        if outcome != "error":
            return None
        signatures.add(signature)
        count += 1
    if count < first or len(signatures) != 1:
        return None
    return signatures.pop()


def broken_message(target: str, signature: str, first: int = FIRST) -> str:
    """The one line a campaign prints when it stops a broken target."""
    return (f"{target}: stopped: its first {first} cases all ended in `error` with one root cause ({signature}); "
            "the target itself fails on every case (see its reports and `layoutfuzz reproduce`), not the system "
            "under test")


@dataclass
class _Start:
    """The first results of one target: its error signatures so far, until they decide."""

    signatures: list[str] = field(default_factory=list)
    decided: bool = False


@dataclass
class Health:
    """Watches each target's first results as a campaign records them (in any order the workers finish)."""

    first: int = FIRST
    _starts: dict[str, _Start] = field(default_factory=dict)

    def see(self, target: str, outcome: str, signature: str) -> str | None:
        """Takes one result; ``broken_message`` the moment ``target`` is found broken (once), else None."""
        start = self._starts.setdefault(target, _Start())
        if start.decided:
            return None
        if outcome != "error":
            start.decided = True
            return None
        start.signatures.append(signature)
        if len(start.signatures) < self.first:
            return None
        start.decided = True
        broken = errors_on_every_case((("error", s) for s in start.signatures), self.first)
        return broken_message(target, broken, self.first) if broken is not None else None

    def passed(self, target: str, cases: int) -> None:
        """Passes a worker stored itself (``StoredPasses``): a target that passes is not broken."""
        if cases > 0:
            self._starts.setdefault(target, _Start()).decided = True
