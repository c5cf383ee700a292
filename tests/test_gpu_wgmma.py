"""The wgmma probe: CPU-side descriptors, identity and decoding, kernel compilation, and (marked gpu)
the hardware run."""

from __future__ import annotations

import numpy as np
import pytest

from generators.source import RandomSource
from generators.wgmma import PROBE_WINDOW, device_case
from gpu.wgmma import IDENTITY, decode, identity_image, probe_descriptor, probe_layout
from oracles.wgmma import SwizzleMode


def test_probe_cases_are_injective_fit_the_window_and_carry_the_folklore():
    seen = set()
    for i in range(400):
        p = device_case(RandomSource(f"w/{i}"))
        layout = probe_layout(p)
        addresses = [a for row in layout.addresses() for a in row]
        assert len(set(addresses)) == len(addresses) and max(addresses) + 16 <= PROBE_WINDOW
        rows, cols = layout.shape
        assert (rows, cols) == ((64, 16) if p["operand"] == "A" else (p["n"], 16))
        desc = probe_descriptor(p)
        if p["lbo_field"] is not None:
            seen.add(("lbo", min(desc.leading_byte_offset, 17)))
        seen.add(("base", p["base_offset"] if isinstance(p["base_offset"], str) else "random"))
    assert {("lbo", 0), ("lbo", 1), ("lbo", 16), ("lbo", 17), ("base", "ptx"), ("base", "zero"), ("base", "random")} <= seen


def test_identity_image_is_a_k_major_identity():
    image = identity_image().view(np.float16)
    assert image.sum() == 16
    for k in range(16):
        assert image[IDENTITY.smem_address(k, k) // 2] == 1.0
    assert IDENTITY.descriptor().swizzle is SwizzleMode.NONE


def test_decode_reads_digits_back_into_addresses():
    p = device_case(RandomSource("w/3"))
    expected = probe_layout(p).addresses()
    lo, hi = np.zeros((64, 64), np.float32), np.zeros((64, 64), np.float32)
    for mn, row in enumerate(expected):
        for kk, address in enumerate(row):
            r, c = (mn, kk) if p["operand"] == "A" else (kk, mn)
            lo[r, c], hi[r, c] = (address // 2) & 2047, (address // 2) >> 11
    assert decode(p, [lo, hi]) == expected
    lo[0, 0] = 0.5  # not a digit: reported as -1 (element (0, 0) is D[0, 0] for either operand)
    assert decode(p, [lo, hi])[0][0] == -1


def test_probe_kernel_compiles_for_sm_90a_without_a_gpu():
    pytest.importorskip("cuda.core", reason="needs cuda.core (the [gpu] or [test] extra)")
    from gpu.compile import compile_kernel

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
