"""CuTe's preconditions (oracles.cute_preconditions) on worked examples, and how the CuTe targets judge a refusal and
an answer by them: a refusal is right only where the precondition fails; a wrong answer where it fails is a silent
wrong answer on an unchecked precondition, bucketed apart."""

from __future__ import annotations

import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.harness import registry
from layoutfuzz.oracles import cute_preconditions as pre
from layoutfuzz.oracles import cute_properties as props
from layoutfuzz.oracles.cute import Layout


def L(shape, stride) -> Layout:  # noqa: N802 (CuTe's notation)
    return Layout(shape, stride)


@pytest.mark.parametrize("a, b", [
    (L(20, 2), L((5, 4), (4, 1))),  # the layout-algebra documentation's example: (5,4):(8,2)
    (L((6, 2), (8, 2)), L((4, 3), (3, 1))),  # the documentation's ((2,2),3):((24,2),8)
    (L((6, 2), (1, 7)), L((3, 2), (2, 3))),  # each mode of B meets both conditions (its modes still add up past 6)
    (L((3, 4), (1, 3)), L(4, 3)),  # 3 divides the stride 3: skips A's first mode
])
def test_compositions_the_documentation_defines(a, b):
    assert pre.composition(a, b) is None


@pytest.mark.parametrize("a, b, broken", [
    (L((3, 3), (1, 4)), L(4, 2), "stride divisibility"),  # 2 and 3 divide neither way
    (L((3, 5), (1, 10)), L(4, 1), "shape divisibility"),  # B's 4 covers A's 3, which does not divide 4
    (L((2, 3), (1, 4)), L(1, 7), "stride divisibility"),  # a size-1 mode is checked like any other (C++ refuses it)
    (L(8, 1), L(4, 3), "past A's domain"),  # B reaches offset 9 of an 8-element A
])
def test_compositions_the_documentation_leaves_undefined(a, b, broken):
    assert broken in (pre.composition(a, b) or "")


def test_complement_needs_modes_that_nest():
    assert pre.complement(L(4, 2), 24) is None and pre.complement_modes(L(4, 2), 24) == [(2, 1), (3, 8)]
    assert pre.complement(L((2, 4), (1, 1)), 8) is not None  # offsets overlap: i0 + i1
    assert "do not nest" in pre.complement(L((2, 2), (3, 2)), 6)  # injective, interleaved: {0, 2, 3, 5}
    assert pre.complement(L((4, 1, 2), (1, 9, 4)), 16) is None  # size-1 modes and their strides play no part


def test_left_inverse_needs_an_injective_nested_layout():
    assert pre.left_inverse(L((4, 2), (2, 1))) is None
    assert "not injective" in pre.left_inverse(L(16, 0))
    assert pre.left_inverse(L((3, 6), (8, 1))) is not None  # injective, but 8 is not a multiple of 6


def test_divide_needs_a_tiler_that_tiles_a():
    assert pre.logical_divide(L(16, 1), L(4, 2)) is None  # (4:2, (2,2):(1,8)) spans 16
    assert "does not tile" in pre.logical_divide(L(12, 1), L(8, 1))  # (8:1, 2:8) spans 16, not 12
    assert "do not nest" in pre.logical_divide(L(12, 1), L((2, 2), (3, 2)))


def test_recast_conditions():
    assert pre.recast(L(8, 1), 16, 32) is None and pre.recast(L((8, 1), (1, 1)), 16, 32) is None  # has stride 1
    assert "no stride-1 mode" in pre.recast(L(2, 3), 16, 32)  # "Downcast requires adjacent elements"
    assert pre.recast(L(8, 1), 64, 32) is None and pre.recast(L(4, 2), 64, 32) is None
    assert "upcast" in pre.recast(L(4, 3), 64, 32)  # word offsets 0, 3, 6, 9 are not all 64-bit aligned


def test_recast_property_by_hand():
    assert props.recast(L(8, 1), 64, 32, L(4, 1)) == []  # words 0..7 are 64-bit elements 0..3
    assert props.recast(L(4, 2), 64, 32, L(4, 1)) == []  # words 0, 2, 4, 6 start elements 0, 1, 2, 3
    assert props.recast(L(4, 3), 64, 32, L(4, 2)) != []  # only words 0 and 6 start one: {0, 3}, not {0, 2, 4, 6}
    assert props.recast(L(8, 1), 16, 32, L(16, 1)) == []
    assert props.recast(L((8, 1), (1, 1)), 16, 32, L((16, 2), (1, 1))) != []  # 32 half-words for 16


def _case(params: dict) -> Case:
    return Case("pycute.layouts", 0, 0, params)


def test_a_refusal_is_judged_by_the_precondition():
    target = registry.load("pycute.layouts")
    undefined = _case({"op": "composition", "a": {"shape": [3, 3], "stride": [1, 4]}, "b": {"shape": 4, "stride": 2}})
    defined = _case({"op": "composition", "a": {"shape": 20, "stride": 2}, "b": {"shape": [5, 4], "stride": [4, 1]}})
    refused = {"raised": "AssertionError: "}
    assert target.compare(undefined, None, refused).ok
    verdict = target.compare(defined, None, refused)
    assert not verdict.ok and verdict.signature == "composition: spurious refusal (pycute raised AssertionError)"


def test_a_wrong_answer_on_an_undefined_input_is_bucketed_apart():
    target = registry.load("pycute.layouts")
    undefined = _case({"op": "composition", "a": {"shape": [3, 3], "stride": [1, 4]}, "b": {"shape": 4, "stride": 2}})
    # the DSL's answer 4:2 reads 0, 2, 4, 6 where A o B is 0, 2, 5, 8
    verdict = target.compare(undefined, None, {"shape": 4, "stride": 2})
    assert not verdict.ok and verdict.signature == "composition: unchecked precondition (stride divisibility)"
    assert "R(i) != A(B(i))" in verdict.note
    right = target.compare(undefined, None, {"shape": [2, 2], "stride": [2, 5]})  # 0, 2, 5, 7: still wrong at 3
    assert not right.ok
    # the same unchecked condition in a divide and in a zipped divide: one root cause (one implementation)
    zipped = _case({"op": "zipped_divide", "a": {"shape": 12, "stride": 1}, "b": {"shape": [2, 2], "stride": [3, 2]}})
    assert target.compare(zipped, None, {"shape": [[2, 2], 1], "stride": [[9, 9], 0]}).signature == (
        "divide: unchecked precondition (modes do not nest)")
    # past A's domain, the answer is the implementation's: any layout passes, a non-layout does not
    past = _case({"op": "composition", "a": {"shape": 8, "stride": 1}, "b": {"shape": 4, "stride": 3}})
    assert target.compare(past, None, {"shape": 4, "stride": 3}).ok
    assert not target.compare(past, None, {"shape": [4, 1], "stride": [3]}).ok


def test_campaigns_draw_the_boundaries_and_both_sides_of_each_precondition():
    from layoutfuzz.harness.coverage import measure

    target = registry.load("pycute.layouts")
    coverage = measure(target, target.parameter_space(), 0, 600)
    counts = {(name, value): n for name, drawn in coverage.drawn.items() for value, n in drawn.items()}
    for region in (("A region", "edge"), ("A shapes", "others"), ("A modes", "interleaved"), ("A modes", "overlapping"),
                   ("A strides", "negative"), ("tiler", "integer"), ("precondition", "holds"), ("precondition", "fails")):
        assert counts.get(region, 0) >= 10, region
    edges = counts[("A region", "edge")] / sum(n for (name, _), n in counts.items() if name == "A region")
    assert 0.2 <= edges <= 0.6  # about a quarter of the cases sit on the edges, and more land there by chance
