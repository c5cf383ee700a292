"""Is a target's generator narrower than its validator? The validator states the domain a target takes (a case a
user hands in, or a reducer makes, is valid only if it passes); a generator that never draws part of that domain
leaves it untested. ``gaps`` probes the validator with the neighbours of generated cases (the reducer's shrinks, and
each integer of the params grown: one more, twice, three times, negated) and reads every parameter of the space off
each neighbour the validator accepts. A value the generator never draws in ``cases`` cases, a value the space does
not list, or a parameter the space cannot read off an accepted case, is a gap: widen the generator (and its space), or
narrow the validator to the domain the generator means to draw, saying why.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.harness.coverage import measure
from layoutfuzz.harness.reduce import leaves_and_lists, replaced_at, shrinks
from layoutfuzz.harness.target import Target, make_case

PROBES_A_CASE = 400  # neighbours of one generated case tried at most


@dataclass(frozen=True)
class Gap:
    """A parameter value the validator accepts and the generator does not draw: ``kind`` is "never drawn" (the space
    lists it), "outside the space" (it does not) or "unreadable" (the space's draw raised on an accepted case)."""

    parameter: str
    value: str
    kind: str
    params: Any  # the accepted neighbour that has it

    def __str__(self) -> str:
        return f"{self.parameter} = {self.value}: {self.kind}"


def grown(params: Any) -> Iterator[Any]:
    """``params`` with one integer grown: one more, twice, three times, negated (or -1 for a 0)."""
    for path, value in leaves_and_lists(params):
        if isinstance(value, int) and not isinstance(value, bool):
            for bigger in dict.fromkeys((value + 1, 2 * value, 3 * value, -value if value else -1)):
                if bigger != value:
                    yield replaced_at(params, path, bigger)


def neighbours(target: Target, case: Case) -> Iterator[Any]:
    """The reducer's shrinks of ``case`` (the target's own, then the generic ones), then its grown params."""
    yield from shrinks(target, case)
    yield from grown(case.params)


def accepts(target: Target, case: Case) -> bool:
    """Whether the target's validator takes ``case`` (and can name its family)."""
    try:
        target.validate(case)
        target.family(case)
    except Exception:  # any refusal: not in the target's domain
        return False
    return True


def gaps(target: Target, seed: int = 0, cases: int = 2000, probed: int = 40) -> list[Gap]:
    """The gaps between what ``target``'s validator accepts near its first ``probed`` cases and what its first
    ``cases`` cases draw, one per (parameter, value, kind)."""
    space = target.parameter_space()
    drawn = measure(target, space, seed, cases).drawn
    found: dict[tuple[str, str, str], Gap] = {}
    for index in range(probed):
        case = make_case(target, seed, index)
        for k, params in enumerate(neighbours(target, case)):
            if k >= PROBES_A_CASE:
                break
            neighbour = Case(case.target, case.seed, case.index, params)
            if not accepts(target, neighbour):
                continue
            for parameter in space.parameters:
                try:
                    value = parameter.draw(params)
                except Exception as exc:  # the space cannot read an accepted case
                    gap = Gap(parameter.name, type(exc).__name__, "unreadable", params)
                else:
                    if value is None or (value in parameter.values and (value in parameter.excluded or drawn[parameter.name][value])):
                        continue
                    kind = "never drawn" if value in parameter.values else "outside the space"
                    gap = Gap(parameter.name, repr(value), kind, params)
                found.setdefault((gap.parameter, gap.value, gap.kind), gap)
    return list(found.values())
