"""No target's generator is narrower than its validator: the validator-accepted neighbours of generated cases (the
reducer's shrinks, integers grown) draw no parameter value the generator never draws, none the space leaves out, and
none the space cannot read."""

from __future__ import annotations

import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.harness import registry
from layoutfuzz.harness.reach import gaps, grown


def test_grown_params_change_one_integer_at_a_time():
    assert list(grown({"a": 2, "b": [0]})) == [{"a": 3, "b": [0]}, {"a": 4, "b": [0]}, {"a": 6, "b": [0]},
                                              {"a": -2, "b": [0]}, {"a": 2, "b": [1]}, {"a": 2, "b": [-1]}]


class _Narrow:
    """A generator that draws n in 1..3 and a validator that takes 1..8: 4, 6 and 8 are never drawn (3 grown), and
    a space that lists 1..4 only."""

    name = "narrow"
    case_model = None
    plain_params = True

    def generate(self, source):
        return {"n": source.integer(1, 3)}

    def validate(self, case: Case) -> None:
        if not 1 <= case.params["n"] <= 8:
            raise ValueError("n is 1..8")

    def family(self, case: Case) -> str:
        return "all"

    def shrink(self, case: Case):
        return iter(())

    def parameter_space(self) -> Space:
        return Space((Parameter("n", (1, 2, 3, 4), "a test", lambda p: p["n"]),))


def test_a_generator_narrower_than_its_validator_has_gaps():
    found = {(g.parameter, g.value, g.kind) for g in gaps(_Narrow(), cases=200, probed=20)}
    assert ("n", "4", "never drawn") in found
    assert ("n", "6", "outside the space") in found
    assert not any(g[1] in ("1", "2", "3") for g in found)


@pytest.mark.parametrize("name", sorted(registry.available_specs()))
def test_no_generator_is_narrower_than_its_validator(name):
    found = gaps(registry.load(name), cases=2000, probed=20)
    assert not found, "; ".join(map(str, found[:8]))
