"""Generators: each kind satisfies its definition, and cases are the same on every machine."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import pytest
from hypothesis import given

from layoutfuzz.generators.layouts import LAYOUT_KINDS, sample_layout
from layoutfuzz.generators.source import permutation, source_for
from layoutfuzz.generators.strategies import distributed_layouts, memory_layouts
from layoutfuzz.harness import registry
from layoutfuzz.harness.target import make_case
from layoutfuzz.oracles.linear_layout import LinearLayout

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _is_distributed(layout: LinearLayout) -> bool:
    nonzero = [c for c in layout.columns if c]
    return (
        layout.is_surjective()
        and all(bin(c).count("1") <= 1 for c in layout.columns)
        and len(set(nonzero)) == len(nonzero)
    )


@given(distributed_layouts(max_out_bits=10, max_broadcast_bits=3))
def test_distributed_layouts_satisfy_def_4_10(layout):
    assert _is_distributed(layout)
    assert layout.in_dim_names == ("register", "lane", "warp")


@given(distributed_layouts(fixed_bits={"lane": 5}, max_out_bits=8))
def test_distributed_layouts_can_pin_a_warp_of_32_lanes(layout):
    assert layout.in_dim_size("lane") == 32
    assert _is_distributed(layout)


@given(memory_layouts(max_bits=10))
def test_memory_layouts_satisfy_def_4_14(layout):
    assert layout.is_invertible()
    assert all(1 <= bin(c).count("1") <= 2 for c in layout.columns)


def test_every_kind_over_many_seeds():
    for kind in LAYOUT_KINDS:
        seen = set()
        for index in range(200):
            layout = sample_layout(source_for("test", 0, index), kind)
            assert layout.total_out_bits <= 16 and 1 <= len(layout.out_dims) <= 3
            seen.add(layout)
            if kind == "distributed":
                assert _is_distributed(layout)
            elif kind == "memory":
                assert layout.is_invertible() and all(1 <= bin(c).count("1") <= 2 for c in layout.columns)
            elif kind == "invertible":
                assert layout.is_invertible()
            elif kind == "injective":
                assert layout.is_injective()
        assert len(seen) > 150, f"{kind}: too few distinct layouts"


def test_memory_layouts_reach_two_bit_columns_and_swizzles():
    two_bit = sum(
        any(bin(c).count("1") == 2 for c in sample_layout(source_for("t", 1, i), "memory").columns) for i in range(100)
    )
    assert two_bit > 50


def test_permutation_is_a_permutation():
    for i in range(50):
        p = permutation(source_for("perm", 0, i), i % 9)
        assert sorted(p) == list(range(i % 9))


CASES_DIGEST = """
import hashlib, sys
sys.path.insert(0, {root!r})
from layoutfuzz.harness import registry
from layoutfuzz.harness.target import make_case
t = registry.load({target!r})
print(hashlib.sha256("\\n".join(make_case(t, 7, i).to_json() for i in range(300)).encode()).hexdigest())
"""


@pytest.mark.parametrize("name", ["triton.linear_layout", "triton.layouts", "triton.bank_conflicts", "triton.compile"])
def test_same_seed_same_cases_byte_for_byte_across_processes(name):
    target = registry.load(name)
    here = hashlib.sha256("\n".join(make_case(target, 7, i).to_json() for i in range(300)).encode()).hexdigest()
    for hashseed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=hashseed)
        out = subprocess.run(
            [sys.executable, "-c", CASES_DIGEST.format(root=ROOT, target=name)], env=env, capture_output=True, text=True,
            check=True,
        )
        assert out.stdout.strip() == here
    assert [make_case(target, 7, i) for i in range(5)] != [make_case(target, 8, i) for i in range(5)]
    assert make_case(target, 7, 0) == make_case(target, 7, 0)
    for i in range(100):  # and every generated case is valid for its oracle
        target.validate(make_case(target, 7, i))


def test_a_case_read_back_from_its_json_is_the_same_case_with_the_same_text():
    from layoutfuzz.generators.case import Case

    case = Case("t", 3, 7, {"b": [1, 2], "a": {"y": None, "x": 1.5}})
    text = case.to_json()
    back = Case.from_json(text)
    assert back == case and back.to_json() == text and back.params == {"a": {"x": 1.5, "y": None}, "b": [1, 2]}
    assert text == '{"index":7,"params":{"a":{"x":1.5,"y":null},"b":[1,2]},"seed":3,"target":"t"}'


def test_the_random_source_draws_as_random_randrange_does():
    # RandomSource skips randrange's argument handling: draw for draw, it must still be Python's documented stream
    import random

    from layoutfuzz.generators.source import RandomSource

    for seed in range(30):
        ours, theirs = RandomSource(f"s/{seed}"), random.Random(f"s/{seed}")
        for low, high in [(0, 0), (0, 1), (3, 3), (-5, 5), (0, 7), (0, 8), (1, 1 << 14), (0, (1 << 64) - 1), (10, 1000)] * 20:
            assert ours.integer(low, high) == theirs.randrange(low, high + 1)
        options = list(range(11))
        assert [ours.choice(options) for _ in range(50)] == [options[theirs.randrange(len(options))] for _ in range(50)]
    with pytest.raises(ValueError):
        RandomSource("s").integer(3, 2)


def test_targets_that_say_their_params_are_plain_generate_plain_params():
    # plain_params skips the JSON round trip of every case: the claim must hold for what each such target draws
    from layoutfuzz.harness.target import _plain

    claimed = [name for name in registry.available_specs() if registry.load(name).plain_params]
    assert {"tma.swizzle", "wgmma.descriptor"} <= set(claimed)
    for name in claimed:
        target = registry.load(name)
        for i in range(300):
            params = target.generate(source_for(target.case_model or target.name, 0, i))
            assert _plain(params), (name, i, params)
