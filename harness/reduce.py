"""Deterministic reduction of a failing case, in the spirit of C-Reduce: shrink its params while it
still fails the same way (same outcome and problem signature), each try in an isolated worker.

The edits are target-agnostic, on the params' JSON: drop a list element, or move an integer
towards 0 (0, 1, half). Each candidate must pass the target's ``validate``; the first one that
still fails is kept and the search restarts from it, so the result is a fixpoint: no single edit
of it fails the same way.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from generators.case import Case
from harness.runner import Result, Runner
from harness.target import Outcome, Target
from reports.report import problem_signature

FAILING = (Outcome.DIVERGE, Outcome.CRASH, Outcome.TIMEOUT, Outcome.ERROR)


def candidates(params: Any) -> Iterator[Any]:
    """Every single-edit shrink of ``params``, depth first, in a fixed order."""
    for path, value in _leaves_and_lists(params, ()):
        if isinstance(value, list):
            for i in range(len(value)):
                if len(value) > 1:
                    yield _replaced(params, path, value[:i] + value[i + 1:])
        elif isinstance(value, int) and not isinstance(value, bool):
            for smaller in dict.fromkeys((0, 1 if value > 0 else -1, value // 2 if value > 0 else -(-value // 2))):
                if abs(smaller) < abs(value):
                    yield _replaced(params, path, smaller)


def _leaves_and_lists(value: Any, path: tuple) -> Iterator[tuple[tuple, Any]]:
    if isinstance(value, dict):
        for key in value:
            yield from _leaves_and_lists(value[key], path + (key,))
    elif isinstance(value, list):
        yield path, value
        for i, item in enumerate(value):
            yield from _leaves_and_lists(item, path + (i,))
    else:
        yield path, value


def _replaced(params: Any, path: tuple, new: Any) -> Any:
    out = copy.deepcopy(params)
    if not path:
        return new
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = new
    return out


@dataclass(frozen=True)
class Reduction:
    original: Case
    reduced: Case
    outcome: Outcome
    signature: str
    tries: int
    steps: int


def reduce_case(spec: str, target: Target, case: Case, runner: Runner, max_tries: int = 500,
                progress: Callable[[str], None] | None = None) -> Reduction | None:
    """The smallest case (a fixpoint of ``candidates``) failing like ``case``; None if it passes."""

    def run(c: Case) -> Result:
        runner.submit(spec, c, target.family(c))
        (result,) = runner.results()
        return result

    first = run(case)
    if first.outcome not in FAILING:
        return None
    want = (first.outcome, problem_signature(first))
    current, tries, steps = case, 0, 0
    improved = True
    while improved and tries < max_tries:
        improved = False
        for params in candidates(current.params):
            candidate = Case(case.target, case.seed, case.index, params)
            try:
                target.validate(candidate)
                target.family(candidate)
            except Exception:  # not a valid case of this target
                continue
            tries += 1
            result = run(candidate)
            if (result.outcome, problem_signature(result)) == want:
                current, improved, steps = candidate, True, steps + 1
                if progress:
                    progress(f"step {steps} (try {tries}): {len(str(params))} characters of params")
                break
            if tries >= max_tries:
                break
    return Reduction(case, current, first.outcome, want[1], tries, steps)
