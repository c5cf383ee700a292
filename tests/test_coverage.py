"""The parameter-coverage report: legal ranges against what a campaign's cases draw."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from layoutfuzz.generators.space import Parameter, Space, bin_of, bins
from layoutfuzz.harness.coverage import measure, pair_coverage, pair_table, value_table
from layoutfuzz.harness.target import Target


class Toy(Target):
    """Draws colour from {red, green} only and size from 1-3 with red always size 1."""

    name = "test.toy"

    def generate(self, source) -> Mapping[str, Any]:
        colour = source.choice(("red", "green"))
        return {"colour": colour, "size": 1 if colour == "red" else source.integer(1, 3)}

    def parameter_space(self) -> Space:
        return Space((
            Parameter("colour", ("red", "green", "blue", "black"), "the toy spec", lambda p: p["colour"],
                      {"black": "not a colour of the toy"}),
            Parameter("size", (1, 2, 3), "the toy spec", lambda p: p["size"]),
        ), lambda a, x, b, y: {a: x, b: y} == {"colour": "blue", "size": 3})


def test_the_tables_say_what_was_never_drawn_and_what_is_left_out_on_purpose():
    target = Toy()
    space = target.parameter_space()
    coverage = measure(target, space, 0, 400)
    values = value_table(space, coverage).set_index("parameter")
    assert values.loc["colour", "never drawn"] == "blue"
    assert values.loc["colour", "excluded (why)"] == "black (not a colour of the toy)"
    assert (values.loc["colour", "wanted"], values.loc["colour", "drawn"], values.loc["colour", "coverage %"]) == (3, 2, 66.7)
    assert values.loc["size", "coverage %"] == 100
    # legal pairs of wanted values: 3 colours x 3 sizes, less blue/3; drawn: red/1, green/1-3
    pairs = pair_table(space, coverage)
    assert pair_coverage(pairs) == (4, 8)
    pairs = pairs.iloc[0]
    assert pairs["never drawn together"] == "blue/1, blue/2, red/2, red/3"


def test_bins_cover_a_field_exactly():
    labels = bins(0, (1 << 14) - 1, 16)
    assert len(labels) == 16 and labels[0] == "0-1023" and labels[-1] == "15360-16383"
    assert bin_of(1023, labels) == "0-1023" and bin_of(1024, labels) == "1024-2047"
    with pytest.raises(ValueError):
        bin_of(1 << 14, labels)


def test_wgmma_shapes_per_type_follow_the_ptx_shape_lists():
    from layoutfuzz.oracles.wgmma import WGMMA_N

    # PTX ISA 9.7.15.5: .f16 has m64n8k16 .. m64n256k16 in steps of 8; .s8 has n8, n16, n24, n32, n48, ... n256
    assert WGMMA_N["f16"][:3] == (8, 16, 24) and 40 in WGMMA_N["bf16"] and WGMMA_N["tf32"][-1] == 256
    assert 40 not in WGMMA_N["s8"] and 48 in WGMMA_N["u8"] and len(WGMMA_N["s8"]) == 18


@pytest.mark.parametrize("name", ["tma.swizzle", "wgmma.descriptor", "triton.linear_layout", "pycute.layouts", "triton.convert_layout",
                                  "triton.layouts", "triton.shared_layouts", "triton.bank_conflicts", "triton.compile",
                                  "triton.shared_memory", "triton.tma", "triton.wgmma", "cute.layouts"])
def test_the_generators_never_draw_outside_the_legal_ranges(name):
    # a property of the generators against the spec's ranges: nothing drawn is outside, no illegal pair is drawn
    space, coverage = _drawn(name, 3, 3000)
    values = value_table(space, coverage)
    assert set(values["drawn outside the legal range"]) == {"-"}, values
    for a, b in coverage.pairs:
        for x, y in coverage.pairs[a, b]:
            assert not space.illegal(a, x, b, y), (a, x, b, y)


def test_coverage_command_prints_each_declared_target_and_refuses_undeclared_ones(tmp_path):
    from tests.test_cli import layoutfuzz

    done = layoutfuzz("coverage", "--targets", "tma.swizzle", "--cases", "300", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "## tma.swizzle: 300 cases" in done.stdout
    row = next(line for line in done.stdout.splitlines() if line.startswith("| interleave"))
    assert "16B, 32B" in row  # the generator never draws an interleaved map
    refused = layoutfuzz("coverage", "--targets", "tests.crashy_target:MarkupTarget", cwd=tmp_path)
    assert refused.returncode == 2 and refused.stderr.count("\n") <= 2 and "declares none" in refused.stderr


@pytest.mark.parametrize("name", ["triton.layouts", "triton.shared_layouts", "triton.bank_conflicts", "triton.compile",
                                  "triton.shared_memory", "triton.tma", "triton.wgmma", "triton.convert_layout",
                                  "triton.convert_layout_shuffle", "cute.layouts", "cute.smem_atoms", "mosaic.layouts",
                                  "mosaic.gpu", "tma.copy", "tma.encode"])
@pytest.mark.slow
def test_the_widened_generators_draw_every_wanted_value_and_nine_tenths_of_the_pairs(name):
    # the bar for a night: every wanted value of every parameter, at least 90 % of the legal pairs; the
    # widened samplers reach 16 and 32 warps, 16 elements a thread, swizzle parameters up to 16, 1-D tensors to 2^14
    space, coverage = _drawn(name, 0, 10_000)
    values = value_table(space, coverage)
    assert set(values["never drawn"]) == {"-"}, values
    pairs = pair_table(space, coverage)
    drawn, legal = pair_coverage(pairs)
    assert drawn / legal >= 0.9, pairs
    warps = space.parameters[[p.name for p in space.parameters].index("warps")] if name == "triton.layouts" else None
    assert warps is None or warps.values == (1, 2, 4, 8, 16, 32)  # CUDA: at most 1024 threads, 32 warps a CTA


def _drawn(name: str, seed: int, cases: int):
    """A registered target's declared space and what its first ``cases`` cases of ``seed`` draw."""
    from layoutfuzz.harness import registry

    target = registry.load(name)
    space = target.parameter_space()
    return space, measure(target, space, seed, cases)
