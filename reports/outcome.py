"""What one case came to: its outcome, its result, and who is responsible for a root cause.

The record every layer shares: the harness makes results, the reports store and explain them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from layoutfuzz.generators.case import Case


class Outcome(enum.StrEnum):
    """How one case ended."""

    PASS = "pass"
    DIVERGE = "diverge"  # the system under test disagrees with the oracle
    CRASH = "crash"  # the system under test killed its process (abort, segfault, ...)
    TIMEOUT = "timeout"  # the case ran past the per-case time limit
    UNSUPPORTED = "unsupported"  # the target cannot run here (missing library, device, ...)
    ERROR = "error"  # a bug of the harness, an oracle or a target wrapper


OUTCOMES = tuple(o.value for o in Outcome)


@dataclass(frozen=True)
class Result:
    """The outcome of one case, with what a report needs to show and reproduce it."""

    case: Case
    family: str
    outcome: Outcome
    detail: str = ""
    expected: Any = None
    observed: Any = None
    mismatch_count: int = 0
    mismatches: tuple[str, ...] = ()
    signature: str = ""
    duration_s: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)  # per-case measurements (PTX counts, ...)


def result_of(case: Case, family: str, data: dict[str, Any]) -> Result:
    """The Result of a case's answer as a worker writes it to a progress file (or ``evaluate`` gives it)."""
    return Result(case, family, Outcome(data["outcome"]), data.get("detail", ""), data.get("expected"), data.get("observed"),
                  data.get("mismatch_count", 0), tuple(data.get("mismatches", ())), data.get("signature", ""),
                  data.get("duration_s", 0.0), data.get("metrics") or {})


PARTIES = ("system under test", "hardware", "specification", "harness")


@dataclass(frozen=True)
class Attribution:
    """Who is responsible for a root cause: one of PARTIES, the layer within it (Triton's layout
    library, its lowering, its TMA descriptor encoding, the TMA unit, ...), and the evidence."""

    party: str
    layer: str = ""
    evidence: str = ""

    def __str__(self) -> str:
        return self.party + (f" ({self.layer})" if self.layer else "")
