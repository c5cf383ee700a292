"""Deterministic reduction of a failing case, in the spirit of C-Reduce and Hypothesis: shrink its
params while it still fails the same way (same outcome and root-cause signature), each try in an
isolated worker.

Candidates come first from the target's own shrinks (``Target.shrink``: drop a basis vector, halve a
dimension, fewer warps, a narrower element), then from generic edits of the params' JSON, whatever the
target and at any depth (half of a list, one list element dropped, an integer moved towards 0 by ever
smaller steps). Every candidate must pass the target's ``validate``, which states the generators' rules,
and be smaller (shorter canonical JSON, then smaller integers): a reduced case is a valid input, and the
search ends. The first candidate that still fails is kept and the search
restarts from it, so the result is a fixpoint: no single shrink of it fails the same way.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from layoutfuzz.generators.case import Case, canonical_json
from layoutfuzz.harness.runner import Runner
from layoutfuzz.harness.target import Target
from layoutfuzz.reports.outcome import Outcome, Result
from layoutfuzz.reports.signatures import root_cause

FAILING = (Outcome.DIVERGE, Outcome.CRASH, Outcome.TIMEOUT, Outcome.ERROR)


def candidates(params: Any) -> Iterator[Any]:
    """Every single-edit shrink of ``params``, depth first, in a fixed order."""
    for path, value in leaves_and_lists(params, ()):
        if isinstance(value, list):
            for shorter in _shorter_lists(value):
                yield replaced_at(params, path, shorter)
        elif isinstance(value, int) and not isinstance(value, bool):
            for smaller in smaller_integers(value):
                yield replaced_at(params, path, smaller)


def _shorter_lists(value: list) -> Iterator[list]:
    """``value`` halved (its first half, then its second, from four items up), then without each one item in turn."""
    if len(value) >= 4:
        yield value[:len(value) // 2]
        yield value[len(value) // 2:]
    if len(value) > 1:
        for i in range(len(value)):
            yield value[:i] + value[i + 1:]


def smaller_integers(value: int) -> Iterator[int]:
    """Integers nearer 0 than ``value``: 0, 1, half of it, then ever closer to it (3/4, 7/8, ..., one less), so that a
    fault that needs a large value still comes down to the smallest one that shows it (a binary search over restarts)."""
    sign, size = (1, value) if value >= 0 else (-1, -value)
    steps = [0, 1, size // 2, *(size - size // (1 << k) for k in range(2, size.bit_length() + 1)), size - 1]
    for step in dict.fromkeys(steps):
        if 0 <= step < size:
            yield sign * step


def leaves_and_lists(value: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """(path, item) of every list and leaf of JSON-like ``value``, depth first."""
    if isinstance(value, dict):
        for key in value:
            yield from leaves_and_lists(value[key], path + (key,))
    elif isinstance(value, list):
        yield path, value
        for i, item in enumerate(value):
            yield from leaves_and_lists(item, path + (i,))
    else:
        yield path, value


def replaced_at(params: Any, path: tuple, new: Any) -> Any:
    """A copy of ``params`` with the item at ``path`` (from ``leaves_and_lists``) replaced by ``new``."""
    out = copy.deepcopy(params)
    if not path:
        return new
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new
    return out


def size(params: Any) -> tuple[int, int]:
    """What the reducer makes smaller: the canonical JSON's length, then the integers' magnitudes."""
    text = canonical_json(params)
    return len(text), sum(abs(v) for _, v in leaves_and_lists(params, ()) if isinstance(v, int) and not isinstance(v, bool))


@dataclass(frozen=True)
class Reduction:
    original: Case
    reduced: Case
    outcome: Outcome
    signature: str
    tries: int
    steps: int
    fixpoint: bool  # no single shrink of ``reduced`` fails the same way (False: stopped by max_tries)
    result: Result  # the reduced case's run: what a report and a picture show of it


def reduce_case(spec: str, target: Target, case: Case, runner: Runner, max_tries: int = 500,
                progress: Callable[[str], None] | None = None) -> Reduction | None:
    """The smallest case (a fixpoint of the shrinks) failing like ``case``; None if it passes.

    Candidates run ``runner.jobs`` at a time; of each batch the first in shrink order that still fails
    the same way is kept, so the result does not depend on which worker finishes first."""

    def run(batch: list[Case]) -> list[Result]:
        for c in batch:
            runner.submit(spec, c, target.family(c))
        results: list[Result] = []
        while runner.in_flight:
            results += runner.results()
        order = {c.params_json: i for i, c in enumerate(batch)}
        return sorted(results, key=lambda r: order[r.case.params_json])

    (first,) = run([case])
    if first.outcome not in FAILING:
        return None
    want = (first.outcome, root_cause(first))
    current, current_result, tries, steps, seen = case, first, 0, 0, {case.params_json}
    improved, stopped = True, False
    while improved and not stopped:
        improved = False
        pending = _valid_shrinks(target, current, seen)
        while not improved:
            batch = [c for _, c in zip(range(min(runner.jobs, max_tries - tries)), pending)]
            if not batch:
                stopped = tries >= max_tries
                break
            tries += len(batch)
            for result in run(batch):
                if (result.outcome, root_cause(result)) == want:
                    current, current_result, improved, steps = result.case, result, True, steps + 1
                    if progress:
                        progress(f"step {steps} (try {tries}): {len(current.params_json)} characters of params")
                    break
    return Reduction(case, current, first.outcome, want[1], tries, steps, not improved and not stopped, current_result)


def _valid_shrinks(target: Target, case: Case, seen: set[str]) -> Iterator[Case]:
    """The shrinks of ``case`` not tried yet that are smaller and that the target calls valid."""
    for params in shrinks(target, case):
        candidate = Case(case.target, case.seed, case.index, params)
        if candidate.params_json in seen or size(params) >= size(case.params):
            continue
        seen.add(candidate.params_json)
        try:
            target.validate(candidate)
            target.family(candidate)
        except Exception:  # not a valid case of this target
            continue
        yield candidate


def shrinks(target: Target, case: Case) -> Iterator[Any]:
    """The target's own shrinks first (big, meaningful steps), then the generic edits."""
    try:
        yield from target.shrink(case)
    except Exception:  # a target's shrink that fails on an odd case: the generic edits still apply
        pass
    yield from candidates(case.params)
