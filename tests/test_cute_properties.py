"""CuTe's algebra judged by its defining properties (oracles.cute_properties) and the pycute.layouts target."""

from __future__ import annotations

import pytest

from layoutfuzz.oracles import cute_properties as props
from layoutfuzz.oracles.cute import Layout


def L(shape, stride) -> Layout:  # noqa: N802 (CuTe's notation)
    return Layout(shape, stride)


def test_worked_examples_of_the_layout_algebra_documentation():
    # CuTe's layout-algebra documentation: 20:2 o (5,4):(4,1) = (5,4):(8,2); complement(4:2, 24) = (2,3):(1,8)
    assert props.composition(L(20, 2), L((5, 4), (4, 1)), L((5, 4), (8, 2))) == []
    assert props.complement(L(4, 2), 24, L((2, 3), (1, 8))) == []
    assert props.coalesce(L((2, (1, 4)), (1, (6, 2))), L(8, 1)) == []
    assert props.right_inverse(L((4, 2), (2, 1)), L((2, 4), (4, 1))) == []
    assert props.left_inverse(L((4, 2), (2, 1)), L((2, 4), (4, 1))) == []


@pytest.mark.parametrize("check, wrong, broken", [
    (lambda r: props.composition(L(20, 2), L((5, 4), (4, 1)), r), L((5, 4), (2, 8)), "R(i) != A(B(i))"),
    (lambda r: props.composition(L(20, 2), L((5, 4), (4, 1)), r), L(10, 2), "size(R) != size(B)"),
    (lambda r: props.coalesce(L((2, 4), (1, 2)), r), L((4, 2), (2, 1)), "R(i) != A(i)"),
    (lambda r: props.coalesce(L((2, 4), (1, 2)), r), L(((2, 4),), ((1, 2),)), "depth(R) > 1"),
    (lambda r: props.complement(L(4, 2), 24, r), L((2, 3), (2, 8)), "R not disjoint from A"),
    (lambda r: props.complement(L(4, 2), 24, r), L((3, 2), (8, 1)), "R not ordered"),
    (lambda r: props.complement(L(4, 2), 24, r), L(2, 1), "(A, R) short of M"),
    (lambda r: props.left_inverse(L((4, 2), (2, 1)), r), L(8, 1), "R(A(i)) != i"),
    (lambda r: props.right_inverse(L((4, 2), (2, 1)), r), L(8, 1), "A(R(i)) != i"),
    (lambda r: props.right_inverse(L((4, 2), (2, 1)), r), L(1, 0), "R not the whole inverse of a bijective A"),
    # 16:1 / 4:2 = 16:1 o (4:2, complement(4:2, 16) = (2,2):(1,8)) = (4,(2,2)):(2,(1,8))
    (lambda r: props.logical_divide(L(16, 1), L(4, 2), r), L((4, (2, 2)), (1, (4, 8))),
     "R(i) != A(B(i)) (A o (B, complement(B, size(A))))"),
    (lambda r: props.logical_divide(L(16, 1), L(4, 2), r), L((4, (2, 2)), (2, (1, 1))),
     "R(i) != A(B(i)) (A o (B, complement(B, size(A))))"),
    # a tiler with no complement ((2,2):(3,2) interleaves): only its first mode and, sizes equal, A's offsets are known
    (lambda r: props.logical_divide(L(12, 1), L((2, 2), (3, 2)), r), L(((2, 2), 3), ((2, 3), 4)), "mode 0: R(i) != A(B(i))"),
    (lambda r: props.logical_divide(L(4, 1), L((2, 2), (3, 2)), r), L(((2, 2), 1), ((3, 2), 0)), "R not a reordering of A"),
    # 4:1 x 2:4 = (4:1, complement(4:1, 20) o 2:4) = (4:1, 5:4 o 2:4) = (4,2):(1,16)
    (lambda r: props.logical_product(L(4, 1), L(2, 4), r), L((4, 2), (2, 16)), "mode 0 is not A"),
    (lambda r: props.logical_product(L(4, 1), L(2, 4), r), L((4, 2), (1, 2)), "mode 1: R(i) != A(B(i)) (complement(A) o B)"),
    # an A with no complement ((2,2):(3,2)): R must still be injective where A and B are
    (lambda r: props.logical_product(L((2, 2), (3, 2)), L(2, 1), r), L(((2, 2), 2), ((3, 2), 1)), "R not injective"),
])
def test_each_property_catches_a_result_that_breaks_it(check, wrong, broken):
    assert broken in {name for name, _ in check(wrong)}


def test_pycute_campaign_judges_every_operation(tmp_path):
    pytest.importorskip("pycute", reason="pycute ships in the nvidia-cutlass wheel (the [cute] extra)")
    import sqlite3

    from tests.test_cli import layoutfuzz

    run = layoutfuzz("run", "--targets", "pycute.layouts", "--cases", "700", "--jobs", "2", "-q", "--out", "o", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    rows = dict(sqlite3.connect(tmp_path / "o" / "layoutfuzz.sqlite").execute(
        "SELECT family, sum(outcome = 'pass') FROM outcomes GROUP BY family"))
    from layoutfuzz.harness.targets.cute_algebra import BY_MODE_OPS, OPS
    from layoutfuzz.harness.targets.pycute_layouts import NOT_IN_PYCUTE

    assert set(rows) == set(OPS) - {"make_ordered_layout"} | {f"{op} by-mode" for op in BY_MODE_OPS} | {
        "make_ordered_layout"}
    # pycute lacks recast, swizzled compositions and slices, the flat, blocked and raked products, the TV layout, ...
    judged = [n for family, n in rows.items() if family.split(" ")[0] not in (*NOT_IN_PYCUTE, "make_ordered_layout")]
    assert min(n for family, n in rows.items() if family in ("coalesce", "filter", "slice", "flatten")) > 5
    assert len(judged) == 23 and sum(judged) > 250  # 16 operations, 7 of them by mode too


def test_a_planted_pycute_fault_is_a_divergence_in_its_bucket(tmp_path, monkeypatch):
    pycute = pytest.importorskip("pycute", reason="pycute ships in the nvidia-cutlass wheel (the [cute] extra)")
    from layoutfuzz.harness import registry
    from layoutfuzz.harness.target import make_case
    from layoutfuzz.harness.worker import evaluate

    real = pycute.coalesce
    monkeypatch.setattr(pycute, "coalesce", lambda layout: pycute.Layout(real(layout).shape, 1))  # strides lost
    target = registry.load("pycute.layouts")
    cases = [c for c in (make_case(target, 0, i) for i in range(200)) if c.params["op"] == "coalesce"]
    outcomes = [evaluate(target, c) for c in cases]
    assert {o["outcome"] for o in outcomes} == {"pass", "diverge"}  # a result that is no layout diverges too
    assert {o["signature"] for o in outcomes if o["outcome"] == "diverge"} == {"coalesce: R(i) != A(i)",
                                                                             "coalesce: the result is not a layout"}


def _case(params):
    from layoutfuzz.generators.case import Case

    return Case("cute.layouts", 0, 0, params)


A = {"shape": [4, [2, 4]], "stride": [8, [1, 2]]}


def test_a_composed_layout_is_judged_by_the_swizzle_it_applies():
    from layoutfuzz.harness import registry

    target = registry.load("cute.layouts")
    # Swizzle<2,1,3> o 3 o (4,(2,4)):(8,(1,2)), by hand: A = 0, 8, 16, 24, 1, 9, 17, 25, ...; plus 3; bits 4-5 XOR-ed
    # into bits 1-2 (19 = 0b10011 -> 17, 27 -> 25)
    swizzled = _case({"op": "swizzle", "a": A, "swizzle": [2, 1, 3], "offset": 3})
    right = [3, 11, 17, 25, 4, 12, 22, 30]
    assert target.compare(swizzled, None, {"offsets": right + [_sw(3 + a) for a in (2, 10, 18, 26, 3, 11, 19, 27,
                                                                                   4, 12, 20, 28, 5, 13, 21, 29,
                                                                                   6, 14, 22, 30, 7, 15, 23, 31)]}).ok
    unswizzled = [3 + a for a in (0, 8, 16, 24, 1, 9, 17, 25)]
    verdict = target.compare(swizzled, None, {"offsets": unswizzled + [0] * 24})
    assert not verdict.ok and verdict.signature == "swizzle: R(i) != Swizzle(offset + A(i))"
    # composed with B = (4,2):(2,8): R(i) = A'(B(i)); B = 0, 2, 4, 6, 8, ...: 3, 17, 4, 22 by hand
    composed = _case({"op": "composition_swizzled", "a": A, "swizzle": [2, 1, 3], "offset": 3,
                      "b": {"shape": [4, 2], "stride": [2, 8]}})
    verdict = target.compare(composed, None, {"offsets": [3, 17, 4, 22, 5, 23, 6, 20]})
    assert verdict.ok, verdict
    assert target.compare(composed, None, {"offsets": [3, 17, 4, 22]}).signature == "composition_swizzled: another domain"
    raised = target.compare(swizzled, None, {"raised": "RecursionError: maximum recursion depth exceeded"})
    assert raised.signature == "swizzle: spurious refusal (CuTe DSL raised RecursionError)"


def _sw(x):  # Swizzle<2,1,3> by hand
    return x ^ (((x >> 4) & 3) << 1)


def test_zipped_and_tiled_divides_are_the_logical_one_regrouped():
    from layoutfuzz.harness import registry

    target = registry.load("cute.layouts")
    b = {"shape": 2, "stride": 1}
    # logical_divide((4,(2,4)):(8,(1,2)), 2:1) = (2,(2,8)):(8,(16,1)) (read off CuTe), tiled: (2,2,8):(8,16,1)
    zipped = _case({"op": "zipped_divide", "a": A, "b": b})
    assert target.compare(zipped, None, {"shape": [2, [2, 8]], "stride": [8, [16, 1]]}).ok
    tiled = _case({"op": "tiled_divide", "a": A, "b": b})
    assert target.compare(tiled, None, {"shape": [2, 2, 8], "stride": [8, 16, 1]}).ok
    wrong = target.compare(tiled, None, {"shape": [2, 2, 8], "stride": [1, 16, 8]})  # the tile is A at 0, 1: not A o B
    assert not wrong.ok and wrong.signature.startswith("tiled_divide:")
    one_mode = target.compare(tiled, None, {"shape": 32, "stride": 1})
    assert one_mode.signature == "tiled_divide: the result has another rank"
    product = _case({"op": "tiled_product", "a": A, "b": b})
    assert target.compare(product, None, {"shape": [[4, [2, 4]], 2], "stride": [[8, [1, 2]], 32]}).ok
