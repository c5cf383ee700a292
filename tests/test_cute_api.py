"""The rest of CuTe's public layout API judged by its documented properties (oracles.cute_properties): each property
passes the worked examples of CuTe's documentation (layout.hpp comments, the DSL docstrings, 02_layout_algebra.md)
and catches a result that breaks it."""

from __future__ import annotations

import pytest

from layoutfuzz.oracles import cute_api_properties as api
from layoutfuzz.oracles.cute import Layout


def L(shape, stride) -> Layout:  # noqa: N802 (CuTe's notation)
    return Layout(shape, stride)


def test_worked_examples_of_the_documentation_pass():
    # 02_layout_algebra.md: blocked_product((2,5):(5,1), (3,4):(1,3)) = ((2,3),(5,4)):((5,10),(1,30)), raked ((3,2),(4,5))
    assert api.rank_product("blocked", L((2, 5), (5, 1)), L((3, 4), (1, 3)), L(((2, 3), (5, 4)), ((5, 10), (1, 30)))) == []
    assert api.rank_product("raked", L((2, 5), (5, 1)), L((3, 4), (1, 3)), L(((3, 2), (4, 5)), ((10, 5), (30, 1)))) == []
    # DSL make_layout_tv docstring: thr (2,3):(3,1), val (2,2):(2,1) -> tiler (4,6), ((3,2),(2,2)):((8,2),(4,1))
    assert api.layout_tv(L((2, 3), (3, 1)), L((2, 2), (2, 1)), [4, 6], L(((3, 2), (2, 2)), ((8, 2), (4, 1)))) == []
    # DSL zipped_divide docstring: (128,64):(64,1) by (8,8) -> shape ((8,8),(16,8)) (strides by hand)
    spec = api.Tiled("divide", L((128, 64), (64, 1)), (L(8, 1), L(8, 1)))
    assert api.tiled("zipped", spec, L(((8, 8), (16, 8)), ((64, 1), (512, 8)))) == []
    # layout.hpp make_ordered_layout: (_2,_2,_2,_2), order (_0,_2,_3,_1) -> strides (_1,_4,_8,_2); DSL: (32,16,8), (2,0,1)
    assert api.ordered((2, 2, 2, 2), (0, 2, 3, 1), L((2, 2, 2, 2), (1, 4, 8, 2))) == []
    assert api.ordered((32, 16, 8), (2, 0, 1), L((32, 16, 8), (128, 1, 16))) == []
    # layout.hpp make_layout_like: (2,2,2,2):(_0,2,4,1) -> (_0,2,4,1); (2,3,4,5):(_0,42,_1,_0) -> (_0,4,_1,_0)
    assert api.like(L((2, 2, 2, 2), (0, 2, 4, 1)), L((2, 2, 2, 2), (0, 2, 4, 1))) == []
    assert api.like(L((2, 3, 4, 5), (0, 42, 1, 0)), L((2, 3, 4, 5), (0, 4, 1, 0))) == []
    # nullspace of (4,3,2):(0,1,0): the indices of its stride-0 leaves, column-major: (4,2):(1,12) (by hand)
    assert api.nullspace(L((4, 3, 2), (0, 1, 0)), L((4, 2), (1, 12))) == []
    # slice_and_offset((None, 2), (4,6):(1,4)) = (4:1, 8); dice keeps the other mode: 6:4
    assert api.slice_(L((4, 6), (1, 4)), (None, 2), L(4, 1), 8) == []
    assert api.dice(L((4, 6), (1, 4)), (None, 2), L(6, 4)) == []
    # filter((4,(2,1),3):(1,(0,5),4)) drops 2:0 and 1:5, coalesces 4:1 and 3:4: 12:1
    assert api.filter_(L((4, (2, 1), 3), (1, (0, 5), 4)), L(12, 1)) == []
    assert api.filter_zeros(L((4, (2, 1), 3), (1, (0, 5), 4)), L((4, (1, 1), 3), (1, (0, 5), 4))) == []
    assert api.max_common(L((4, 6), (1, 4)), L((4, 6), (1, 4)), L(24, 1), None) == []
    assert api.coalesce_profile(L(((2, 2), (3, 2)), ((1, 2), (4, 12))), (0, (0, 0)), L((4, (3, 2)), (1, (4, 12)))) == []


@pytest.mark.parametrize("check, wrong, broken", [
    (lambda r: api.rank_product("blocked", L((2, 5), (5, 1)), L((3, 4), (1, 3)), r),
     L(((3, 2), (4, 5)), ((10, 5), (30, 1))), "R(i) != A(a) + complement(A)(B(b))"),  # the raked one
    (lambda r: api.rank_product("blocked", L((2, 5), (5, 1)), L((3, 4), (1, 3)), r), L((2, 3, 5, 4), (5, 10, 1, 30)),
     "another mode structure"),
    (lambda r: api.layout_tv(L((2, 3), (3, 1)), L((2, 2), (2, 1)), [4, 6], r), L(((3, 2), (2, 2)), ((2, 8), (4, 1))),
     "tv(t, v) is not thread t's value v"),
    (lambda r: api.layout_tv(L((2, 3), (3, 1)), L((2, 2), (2, 1)), [6, 4], r), L(((3, 2), (2, 2)), ((8, 2), (4, 1))),
     "tiler is not the tile's shape"),
    (lambda r: api.tiled("zipped", api.Tiled("divide", L((128, 64), (64, 1)), (L(8, 1), L(8, 1))), r),
     L(((8, 16), (8, 8)), ((64, 512), (1, 8))), "another mode structure"),
    (lambda r: api.ordered((32, 16, 8), (2, 0, 1), r), L((32, 16, 8), (1, 32, 512)), "strides do not follow the order"),
    (lambda r: api.like(L((2, 2, 2, 2), (0, 2, 4, 1)), r), L((2, 2, 2, 2), (1, 2, 4, 8)), "a stride-0 mode of A is not stride 0"),
    (lambda r: api.nullspace(L((4, 3, 2), (0, 1, 0)), r), L((4, 2), (1, 4)), "A(R(i)) != 0"),
    (lambda r: api.slice_(L((4, 6), (1, 4)), (None, 2), r, 0), L(4, 1), "offset != A(coord with None as 0)"),
    (lambda r: api.dice(L((4, 6), (1, 4)), (None, 2), r), L(4, 1), "R is not the modes paired with an integer"),
    (lambda r: api.filter_(L((4, (2, 1), 3), (1, (0, 5), 4)), r), L((4, 2, 3), (1, 0, 4)),
     "size(R) != the size of A's non-zero-stride modes"),
    (lambda r: api.max_common(L((4, 6), (1, 4)), L((4, 6), (1, 4)), r, None), L(4, 1),
     "not the maximum (a == b, a bijection)"),
    (lambda r: api.coalesce_profile(L(((2, 2), (3, 2)), ((1, 2), (4, 12))), (0, (0, 0)), r), L(24, 1),
     "rank(R) != rank(A) at a tuple of the profile"),
])
def test_each_property_catches_a_result_that_breaks_it(check, wrong, broken):
    assert broken in {name for name, _ in check(wrong)}


def _case(params):
    from layoutfuzz.generators.case import Case

    return Case("cute.layouts", 0, 0, params)


def test_a_swizzled_slice_keeps_the_offset_in_the_composed_layout():
    from layoutfuzz.harness import registry

    target = registry.load("cute.layouts")
    # layout_composed.hpp slice: ComposedLayout{swizzle, offset + A(coord), slice}. Sw<3,2,4> o 0 o (6,13,1):(2,16,7)
    # at (None,6,0): 96 + 2i, bit 6 set, XOR-ed into bit 2: 100, 102, 96, 98, 108, 110 (by hand)
    case = _case({"op": "slice_swizzled", "a": {"shape": [6, 13, 1], "stride": [2, 16, 7]}, "coord": [None, 6, 0],
                  "swizzle": [3, 2, 4], "offset": 0})
    assert target.compare(case, None, {"offsets": [100, 102, 96, 98, 108, 110]}).ok
    wrong = target.compare(case, None, {"offsets": [0, 2, -4, -2, -8, -6]})  # CuTe DSL 4.8.1's answer
    assert wrong.signature == "slice_swizzled: R(i) != Swizzle(offset + A(coord with None as i))"


def test_a_by_mode_composition_drops_or_keeps_the_modes_past_the_tiler():
    from layoutfuzz.harness import registry

    target = registry.load("pycute.layouts")
    case = _case({"op": "composition", "a": {"shape": [13, 7], "stride": [4, 24]}, "b": [{"shape": 13, "stride": 1}]})
    assert target.family(case) == "composition by-mode"
    assert target.compare(case, None, {"shape": 13, "stride": 4}).ok  # CuTe C++: "Drop any modes of lhs ..."
    assert target.compare(case, None, {"shape": [13, 7], "stride": [4, 24]}).ok  # pycute keeps them
    assert not target.compare(case, None, {"shape": [13, 7], "stride": [4, 1]}).ok


def test_refusals_are_right_only_where_a_documented_precondition_fails():
    from layoutfuzz.harness import registry

    target = registry.load("cute.layouts")
    a = {"shape": [4, 3], "stride": [1, 4]}
    raised = {"raised": "ValueError: invalid mode element"}
    assert target.compare(_case({"op": "select", "a": a, "modes": [2]}), None, raised).ok  # out of range: documented
    refused = target.compare(_case({"op": "select", "a": a, "modes": [1]}), None, raised)
    assert refused.signature == "select: spurious refusal (CuTe DSL raised ValueError)"
    not_compact = _case({"op": "make_layout_tv", "a": {"shape": 2, "stride": 2}, "b": {"shape": 2, "stride": 1}})
    assert target.compare(not_compact, None, raised).ok
