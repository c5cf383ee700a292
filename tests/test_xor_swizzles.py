"""The xor_swizzles case model: one XOR swizzle of a row-major tile through Triton, pycute and CuTe DSL, each against
Definition 4.11, and side by side."""

from __future__ import annotations

import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import RandomSource
from layoutfuzz.generators.xor_swizzles import cute_swizzle, xor_swizzle
from layoutfuzz.harness import registry
from layoutfuzz.harness.targets.triton_shared_layouts import offset_bases
from layoutfuzz.harness.worker import evaluate
from layoutfuzz.oracles.cute import Swizzle
from tests.test_cli import ledgered_run


def _definition(p, r, c):  # Def 4.11 (and Triton's docs): column c of row r moves to c XOR vec * ((r / perPhase) % maxPhase)
    return r * p["cols"] + (c ^ p["vec"] * ((r // p["per_phase"]) % p["max_phase"]))


def test_cutes_swizzle_of_the_case_is_the_definition_over_whole_tiles():
    # the translation every CuTe system is asked through: Swizzle<B,M,S> on r * cols + c is Def 4.11, element by element
    for i in range(300):
        p = xor_swizzle(RandomSource(f"x/{i}"))
        swizzle = Swizzle(*cute_swizzle(p))
        for r in range(p["rows"]):
            for c in range(p["cols"]):
                assert swizzle(r * p["cols"] + c) == _definition(p, r, c), (p, r, c)


def test_generated_cases_are_valid_and_cover_the_parameters():
    target = registry.load("triton.xor_swizzles")
    seen = set()
    for i in range(400):
        p = xor_swizzle(RandomSource(f"x/{i}"))
        target.validate(Case(target.name, 0, i, p))
        seen |= {("vec", p["vec"]), ("max", p["max_phase"]), ("per", p["per_phase"]), ("bits", p["elem_bits"])}
    assert {("max", 1), ("max", 2), ("max", 8), ("vec", 1), ("vec", 8), ("per", 8), ("bits", 8), ("bits", 32)} <= seen


def test_an_answer_is_read_as_offset_bases_and_must_be_linear():
    p = {"rows": 4, "cols": 4, "vec": 1, "per_phase": 1, "max_phase": 4, "elem_bits": 8}
    offsets = [_definition(p, i % 4, i // 4) for i in range(16)]  # element i colexicographic: (i % rows, i // rows)
    assert offset_bases(4, 4, offsets) == {"offset": [1, 2, 5, 10]}  # offsets 4 and 8: rows 1 and 2, columns XOR-ed
    offsets[0], offsets[5] = offsets[5], offsets[0]  # a permutation still, no longer a swizzle
    assert "not F2-linear" in offset_bases(4, 4, offsets)["exception"]
    assert "not a permutation" in offset_bases(4, 4, [0] * 16)["exception"]


@pytest.mark.parametrize("name, module", [("triton.xor_swizzles", "triton.experimental.gluon"),
                                          ("pycute.xor_swizzles", "pycute"), ("cute.xor_swizzles", "cutlass.cute")])
@pytest.mark.slow
def test_each_system_lays_out_swizzled_tiles_as_the_definition(name, module):
    pytest.importorskip(module, reason=f"needs {module} (CI installs it)")
    target = registry.load(name)
    cases = [Case(name, 0, i, xor_swizzle(RandomSource(f"sys/{i}"))) for i in range(40)]
    swizzled = [c for c in cases if c.params["max_phase"] > 1]
    outcomes = [evaluate(target, c)["outcome"] for c in swizzled]
    assert len(swizzled) >= 10 and outcomes == ["pass"] * len(swizzled)
    wrong = Case(name, 0, 0, {**swizzled[0].params})
    expected = target.expected(wrong)
    expected["offset"] = expected["offset"][::-1]  # an oracle that disagrees: the comparison must say so
    assert not target.compare(wrong, expected, target.observed(wrong)).ok


@pytest.mark.slow
def test_three_systems_side_by_side(tmp_path):
    for module in ("triton.experimental.gluon", "pycute", "cutlass.cute"):
        pytest.importorskip(module, reason=f"needs {module} (CI installs it)")
    targets = "triton.xor_swizzles,pycute.xor_swizzles,cute.xor_swizzles"
    done, rows, unknown = ledgered_run(tmp_path, targets, 60)
    assert done.returncode == 0 and not unknown, done.stdout
    lines = [[c.strip() for c in line.split("|")[1:-1]]
             for line in (tmp_path / "out" / "side-by-side.md").read_text().splitlines()[2:]]
    assert all(line[3] == "cute.xor_swizzles / pycute.xor_swizzles / triton.xor_swizzles" for line in lines)
    differ = {line[1]: int(line[6]) for line in lines}
    # the only difference is pycute's known shift-0 recursion, on unswizzled tiles whose rows are one vector
    assert not any(n for family, n in differ.items() if family != "no swizzle") and sum(int(line[4]) for line in lines) == 60
