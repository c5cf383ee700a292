"""The wgmma probe: CPU-side descriptors, identity and decoding, kernel compilation, and (marked gpu)
the hardware run."""

from __future__ import annotations

import numpy as np
import pytest

from generators.source import RandomSource
from generators.wgmma import PROBE_WINDOW, device_case
from gpu.wgmma import DTYPES, IDENTITY, decode, digit_plan, probe_descriptor, probe_layout
from oracles.wgmma import SwizzleMode


def test_probe_cases_are_injective_fit_the_window_and_carry_the_folklore():
    seen = set()
    for i in range(400):
        p = device_case(RandomSource(f"w/{i}"))
        layout = probe_layout(p)
        addresses = [a for row in layout.addresses() for a in row]
        assert len(set(addresses)) == len(addresses) and max(addresses) + 16 <= PROBE_WINDOW
        rows, cols = layout.shape
        k_extent = 32 * 8 // DTYPES[p["dtype"]][1]  # K of one wgmma: 32 bytes
        assert (rows, cols) == ((64, k_extent) if p["operand"] == "A" else (p["n"], k_extent))
        if p["operand"] == "A":
            assert p["n"] >= k_extent  # every column of A shows in D = A x I
        if DTYPES[p["dtype"]][1] != 16:
            assert p["major"] == "k"  # PTX: only 16-bit operands may be transposed
        seen.add(("dtype", p["dtype"]))
        desc = probe_descriptor(p)
        if p["lbo_field"] is not None:
            seen.add(("lbo", min(desc.leading_byte_offset, 17)))
        seen.add(("base", p["base_offset"] if isinstance(p["base_offset"], str) else "random"))
    assert {("lbo", 0), ("lbo", 1), ("lbo", 16), ("lbo", 17), ("base", "ptx"), ("base", "zero"), ("base", "random")} <= seen
    assert {("dtype", d) for d in DTYPES} <= seen


def test_digit_plans_cover_the_window_exactly_in_each_type():
    for dtype, (_, bits, digit) in DTYPES.items():
        plan = digit_plan(dtype)
        covered = sum(b for _, b in plan)
        assert covered >= (32 * 1024 * 8 // bits - 1).bit_length() and all(b == digit for _, b in plan)
    assert digit_plan("f16") == [(0, 11), (11, 11)] and len(digit_plan("e5m2")) == 5
    assert IDENTITY.descriptor().swizzle is SwizzleMode.NONE


@pytest.mark.parametrize("index", range(6))
def test_decode_reads_digits_back_into_addresses(index):
    p = device_case(RandomSource(f"w/{index}"))
    expected = probe_layout(p).addresses()
    elem_bytes = DTYPES[p["dtype"]][1] // 8
    digits = [np.zeros((64, 64), np.float32) for _ in digit_plan(p["dtype"])]
    for mn, row in enumerate(expected):
        for kk, address in enumerate(row):
            r, c = (mn, kk) if p["operand"] == "A" else (kk, mn)
            for d, (shift, bits) in zip(digits, digit_plan(p["dtype"])):
                d[r, c] = (address // elem_bytes >> shift) & ((1 << bits) - 1)
    assert decode(p, digits) == expected
    digits[0][0, 0] = 0.5  # not a digit: reported as -1 (element (0, 0) is D[0, 0] for either operand)
    assert decode(p, digits)[0][0] == -1


def test_probe_kernel_compiles_for_sm_90a_without_a_gpu():
    pytest.importorskip("cuda.core", reason="needs cuda.core (the [cuda] or [gpu] extra; CI installs it)")
    from gpu.device import compile_kernel

    try:
        code = compile_kernel("wgmma_probe.cu")
    except Exception as exc:
        pytest.skip(f"NVRTC unavailable: {exc}")
    assert len(code.code) > 1000


@pytest.mark.gpu
def test_hardware_reads_match_the_oracle():
    from gpu.wgmma import WgmmaRunner

    cases = [device_case(RandomSource(f"gpu/{i}")) for i in range(200)]
    observed = WgmmaRunner().run(cases)
    wrong = [p for p, o in zip(cases, observed) if o != probe_layout(p).addresses()]
    assert not wrong, wrong[:3]
