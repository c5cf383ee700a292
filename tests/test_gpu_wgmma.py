"""The wgmma probe: CPU-side descriptors, identity and decoding, kernel compilation, and (marked gpu)
the hardware run."""

from __future__ import annotations

import numpy as np
import pytest

from layoutfuzz.generators.source import RandomSource
from layoutfuzz.generators.wgmma import PROBE_WINDOW, device_case
from layoutfuzz.gpu.wgmma import DTYPES, IDENTITY, decode, digit_plan, probe_descriptor, probe_layout
from layoutfuzz.oracles.wgmma import SwizzleMode


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
    from layoutfuzz.gpu.device import compile_kernel

    try:
        code = compile_kernel("wgmma_probe.cu")
    except Exception as exc:
        pytest.skip(f"NVRTC unavailable: {exc}")
    assert len(code.code) > 1000


@pytest.mark.gpu
def test_hardware_reads_match_the_oracle():
    from layoutfuzz.gpu.wgmma import WgmmaRunner

    cases = [device_case(RandomSource(f"gpu/{i}")) for i in range(200)]
    observed = WgmmaRunner().run(cases)
    wrong = [p for p, o in zip(cases, observed) if o != probe_layout(p).addresses()]
    assert not wrong, wrong[:3]


class SimulatedProbe:
    """The probe's accumulators as the kernel leaves them where the hardware reads what the one-layout oracle
    says (D = A x I or D[:K] = B, digit by digit), with planted faults: a case's two reads swapped, one read
    that is not a digit; everything after the accumulators is the code under test."""

    def __init__(self, swapped: int, garbled: int) -> None:
        self.swapped, self.garbled = swapped, garbled

    def digits(self, index: int, p, shift: int, bits: int) -> np.ndarray:
        d = np.zeros((64, 64), np.float32)
        elem_bytes = DTYPES[p["dtype"]][1] // 8
        for mn, row in enumerate(probe_layout(p).addresses()):
            for kk, address in enumerate(row):
                r, c = (mn, kk) if p["operand"] == "A" else (kk, mn)
                d[r, c] = (address // elem_bytes >> shift) & ((1 << bits) - 1)
        if index == self.swapped:
            d[[0, 1], 0] = d[[1, 0], 0]
        if index == self.garbled:
            d[2, 0] = 0.5
        return d.reshape(-1)

    def run_arrays(self, cases):
        from layoutfuzz.gpu.wgmma import decode_many

        out = [None] * len(cases)
        for dtype in DTYPES:
            group = [i for i, p in enumerate(cases) if p["dtype"] == dtype]
            if group:
                digits = [np.stack([self.digits(self.index[i], cases[i], shift, bits) for i in group]) for shift, bits in digit_plan(dtype)]
                for i, table in zip(group, decode_many([cases[i] for i in group], digits)):
                    out[i] = table
        return out

    def run(self, cases):
        return [a.tolist() for a in self.run_arrays(cases)]


def test_batch_methods_give_each_case_the_outcome_of_its_own_call(monkeypatch):
    # one oracle call, one probe run and one comparison over 120 operands of every type against each case alone
    from layoutfuzz.gpu import targets
    from layoutfuzz.harness.compare import to_jsonable
    from layoutfuzz.harness.runner import evaluate, evaluate_many, make_case

    target = targets.WgmmaDescriptor()
    cases = [make_case(target, 9, i) for i in range(120)]
    probe = SimulatedProbe(swapped=7, garbled=30)
    monkeypatch.setattr(targets, "_wgmma_runner", lambda: probe)

    def row(result):
        values = result.pop("_values", None)
        result.pop("duration_s")
        return result | {"values": to_jsonable(values, limit=10**6)}

    probe.index = {i: case.index for i, case in enumerate(cases)}
    batched = [row(r) for r in evaluate_many(target, cases)]
    one_by_one = []
    for case in cases:
        probe.index = {0: case.index}
        one_by_one.append(row(evaluate(target, case)))
    assert batched == one_by_one
    assert [i for i, r in enumerate(batched) if r["outcome"] != "pass"] == [7, 30]
    (a, *_), (b, *_) = probe_layout(cases[7].params).addresses()[:2]
    assert batched[7]["mismatches"][:2] == [f"[0][0]: expected {a}, observed {b}", f"[1][0]: expected {b}, observed {a}"]
    assert batched[30]["mismatches"][0].endswith("observed -1")  # not a digit: decoded as -1, never as an address
    assert {c.params["dtype"] for c in cases} == set(DTYPES)  # every element type in one batch
