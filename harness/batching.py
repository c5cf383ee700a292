"""Batches: many cases of one target per worker call, with the isolation of one case per call.

A worker runs a batch and writes, before each call that may kill or hang it, the positions that call
covers (a ``run`` line), and after each case its result, to the batch's progress file. When the worker
dies or hangs, the parent reads that file: finished cases keep their results, cases never started run
again, and the cases of the call that was running are bisected (split in halves and run again) until
the one(s) that cause it are alone, so a crash or timeout is recorded for exactly the case(s) that
cause it, as in one case per call.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.harness.target import Target, make_case

GENERATE_FAILED = "generate"  # the family of a case whose target raised drawing it (an error with no params)
BATCH_SECONDS = 0.1  # of work per batch the runner aims at by default (``Target.batch_seconds``): short enough that a deadline or Ctrl-C is not kept waiting


@dataclass(frozen=True)
class Batch:
    """Cases of one target for one worker call: case indices (generated in the worker from the seed), or
    explicit cases, each with the family the caller counts it in (None: the target's)."""

    spec: str
    seed: int
    items: tuple[int | Case, ...]
    families: tuple[str | None, ...] = ()

    def __post_init__(self) -> None:
        if not self.families:
            object.__setattr__(self, "families", (None,) * len(self.items))

    def __len__(self) -> int:
        return len(self.items)

    def part(self, positions: Sequence[int]) -> Batch:
        """The batch of the items at ``positions``."""
        return Batch(self.spec, self.seed, tuple(self.items[k] for k in positions), tuple(self.families[k] for k in positions))

    def halves(self) -> tuple[Batch, Batch]:
        """Bisection: the first and second half."""
        mid = len(self) // 2
        return self.part(range(mid)), self.part(range(mid, len(self)))

    def payload(self) -> list[Any]:
        """What goes to the worker: an index, or a case as a dict."""
        return [item if isinstance(item, int) else item.to_dict() for item in self.items]


@dataclass(frozen=True)
class StoredPasses:
    """Passes a worker stored in the campaign's database itself (``harness.stored_passes``): what the parent counts,
    once a batch (at a hundred thousand cases a second, a parent that handles each pass is the bottleneck)."""

    target: str
    cases: int
    duration_s: float  # of all of them together


@dataclass
class Progress:
    """What a batch's progress file says: results of finished positions, passes the worker stored itself, and the
    positions of the call that was running last."""

    results: dict[int, dict[str, Any]] = field(default_factory=dict)
    stored: list[StoredPasses] = field(default_factory=list)
    stored_at: set[int] = field(default_factory=set)  # their positions
    running: tuple[int, ...] = ()

    def unfinished(self, size: int) -> list[int]:
        """The positions of a batch of ``size`` with no result, in order."""
        return sorted(set(range(size)).difference(self.results, self.stored_at))

    @classmethod
    def read(cls, path: Path) -> Progress:
        progress = cls()
        try:
            text = path.read_text()
        except FileNotFoundError:
            return progress
        lines = text.splitlines()
        try:  # one decode for the whole file: a batch of thousands of cases is thousands of lines
            entries = json.loads("[" + ",".join(lines) + "]")
        except json.JSONDecodeError:  # a line cut short by the worker's death: each line on its own
            entries = []
            for line in lines:
                try:
                    entries.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
        for entry in entries:
            if "stored" in entry:
                positions = [k for start, stop in entry["stored"] for k in range(start, stop)]
                progress.stored.append(StoredPasses(entry["target"], len(positions), entry["seconds"]))
                progress.stored_at.update(positions)
            elif "run" in entry:
                progress.running = tuple(entry["run"])
            else:
                progress.results[entry["k"]] = entry
        return progress


@dataclass
class BatchSize:
    """How many cases to give one worker call of a target: about ``seconds`` of its work (the target's
    ``batch_seconds``), learnt from the cases' durations, at most ``limit`` (its ``max_batch``; 1: one case per call)."""

    limit: int
    size: int = 1
    seconds: float = BATCH_SECONDS

    def observe(self, cases: int, seconds: float) -> None:
        if cases:
            per_case = max(seconds / cases, 1e-6)
            self.size = max(1, min(self.limit, int(self.seconds / per_case), 2 * max(self.size, cases)))


# ---- inside a worker ----------------------------------------------------------------------


class ProgressFile:
    """The worker's side of a progress file: one JSON line per event, flushed at once (a crash loses nothing)."""

    def __init__(self, path: str) -> None:
        self._file = open(path, "a")  # noqa: SIM115  (closed by the batch)

    def running(self, positions: Sequence[int]) -> None:
        self._write({"run": list(positions)})

    def result(self, k: int, result: dict[str, Any]) -> None:
        self._write({"k": k, **result})

    def stored(self, target: str, positions: Sequence[int], seconds: float) -> None:
        """The positions of passes the worker stored in the campaign's database itself (as [start, stop) runs), and
        the seconds they took together."""
        runs: list[list[int]] = []
        for k in sorted(positions):
            if runs and runs[-1][1] == k:
                runs[-1][1] = k + 1
            else:
                runs.append([k, k + 1])
        self._write({"stored": runs, "target": target, "seconds": seconds})

    def _write(self, entry: dict[str, Any]) -> None:
        self._file.write(json.dumps(entry) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def cases_of(target: Target, seed: int, payload: Sequence[Any]) -> Iterator[tuple[int, Case | None, str, str]]:
    """(position, case, family, error) of each item: generated from its index, or read from its dict."""
    for k, item in enumerate(payload):
        case = Case.from_dict(item) if isinstance(item, dict) else Case(target.name, seed, item, {})
        try:
            if not isinstance(item, dict):
                case = make_case(target, seed, item)
            yield k, case, target.family(case), ""
        except Exception:
            yield k, case, GENERATE_FAILED, f"exception generating the case:\n{traceback.format_exc(limit=8)}"
