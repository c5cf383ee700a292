"""The wgmma probe: CPU-side descriptors, identity and decoding, kernel compilation, and (marked gpu)
the hardware run."""

from __future__ import annotations

import numpy as np
import pytest

from layoutfuzz.generators.source import RandomSource
from layoutfuzz.generators.wgmma import PROBE_WINDOW, WIDE_WINDOW, device_case
from layoutfuzz.gpu.wgmma_probe import IDENTITY, decode, digit_plan, probe_descriptor, written_extent
from layoutfuzz.oracles.wgmma import DTYPES, WGMMA_N, Major, SwizzleMode, probe_layout


@pytest.mark.slow
def test_probe_cases_are_injective_fit_the_window_and_carry_the_folklore():
    seen = set()
    for i in range(400):
        p = device_case(RandomSource(f"w/{i}"))
        layout = probe_layout(p)
        addresses = [a for row in layout.addresses() for a in row]
        assert max(addresses) + 16 <= p["window"] and p["window"] + p["window_offset"] <= WIDE_WINDOW
        if p["window"] != WIDE_WINDOW:  # a wide stride may land repeats on each other: then two reads share an element
            assert len(set(addresses)) == len(addresses)
        seen.add(("window", p["window"]))
        rows, cols = layout.shape
        k_extent = 32 * 8 // DTYPES[p["dtype"]][1]  # K of one wgmma: 32 bytes
        assert (rows, cols) == ((64, k_extent) if p["operand"] == "A" else (p["n"], k_extent))
        if p["operand"] == "A":
            assert p["n"] >= k_extent  # every column of A shows in D = A x I
        else:
            assert p["n"] in WGMMA_N[p["dtype"]]
            seen.add(("n", p["n"]))
        if DTYPES[p["dtype"]][1] != 16:
            assert p["major"] == "k"  # PTX: only 16-bit operands may be transposed
        seen.add(("dtype", p["dtype"]))
        desc = probe_descriptor(p)
        if p["lbo_field"] is not None:
            seen.add(("lbo", min(desc.leading_byte_offset, 17)))
        seen.add(("base", p["base_offset"] if isinstance(p["base_offset"], str) else "random"))
    assert {("lbo", 0), ("lbo", 1), ("lbo", 16), ("lbo", 17), ("base", "ptx"), ("base", "zero"), ("base", "random")} <= seen
    assert {("dtype", d) for d in DTYPES} <= seen
    assert {("window", PROBE_WINDOW), ("window", WIDE_WINDOW)} <= seen and len({v for key, v in seen if key == "n"}) >= 24


def test_wide_strides_reach_the_top_of_the_field_and_stay_in_the_window():
    fields = set()
    for i in range(3000):
        p = device_case(RandomSource(f"wide/{i}"))
        if p["window"] == WIDE_WINDOW:
            desc = probe_descriptor(p)
            fields.add(desc.stride_byte_offset // 1024)
            if not (p["major"] == Major.K.value and p["swizzle"] != "NONE"):
                fields.add(("lbo", desc.leading_byte_offset // 1024))
    assert len(set(range(14)) & fields) >= 12  # (nearly) every 16 KiB range of SBO a block's shared memory can hold
    assert {("lbo", b) for b in range(1, 8)} <= fields  # and LBO where PTX reads it


def test_the_case_table_is_laid_out_as_the_kernel_reads_it():
    # gpu/kernels/wgmma_probe.cu's struct WgmmaCase, field by field, with C's alignment: a field at a multiple of its
    # size, the struct padded to its largest field (a table off by 4 bytes a case reads every case but the first wrong)
    import re

    from layoutfuzz.gpu.device import KERNELS
    from layoutfuzz.gpu.wgmma_probe import BLOCK

    body = re.search(r"struct WgmmaCase \{(.*?)\};", (KERNELS / "wgmma_probe.cu").read_text(), re.S).group(1)
    fields = re.findall(r"^\s*(u64|int)\s+(\w+);", body, re.M)
    offset, offsets = 0, {}
    for ctype, name in fields:
        size = 8 if ctype == "u64" else 4
        offset = -(-offset // size) * size
        offsets[name], offset = offset, offset + size
    assert len(fields) == len(BLOCK.names) and BLOCK.itemsize == -(-offset // 8) * 8
    assert [BLOCK.fields[name][1] for name in BLOCK.names] == list(offsets.values())


def test_digit_plans_cover_the_window_exactly_in_each_type():
    for dtype, (_, bits, digit) in DTYPES.items():
        for window in (PROBE_WINDOW, WIDE_WINDOW):
            plan = digit_plan(dtype, window)
            covered = sum(b for _, b in plan)
            assert covered >= (window * 8 // bits - 1).bit_length() and all(b == digit for _, b in plan)
            assert covered - digit < (window * 8 // bits - 1).bit_length()  # no launch too many
    assert digit_plan("f16") == [(0, 11), (11, 11)] and len(digit_plan("e5m2")) == 5
    assert len(digit_plan("e5m2", WIDE_WINDOW)) == 6  # 227,328 one-byte elements: 18 bits in 3-bit digits
    assert IDENTITY.descriptor().swizzle is SwizzleMode.NONE


@pytest.mark.parametrize("index", range(6))
def test_decode_reads_digits_back_into_addresses(index):
    p = device_case(RandomSource(f"w/{index}"))
    expected = probe_layout(p).addresses()
    elem_bytes = DTYPES[p["dtype"]][1] // 8
    plan = digit_plan(p["dtype"], p["window"])
    digits = [np.full(written_extent(p), np.nan, np.float32) for _ in plan]  # what the probe writes: [k][mn]
    for mn, row in enumerate(expected):
        for kk, address in enumerate(row):
            for d, (shift, bits) in zip(digits, plan):
                d[kk, mn] = (address // elem_bytes >> shift) & ((1 << bits) - 1)
    assert decode(p, digits) == expected
    digits[0][0, 0] = 0.5  # not a digit: reported as -1
    assert decode(p, digits)[0][0] == -1


def test_probe_kernel_compiles_for_sm_90a_without_a_gpu():
    pytest.importorskip("cuda.core", reason="needs cuda.core (the [cuda] or [gpu] extra; CI installs it)")
    from layoutfuzz.gpu.device import compile_source
    from layoutfuzz.gpu.wgmma_shapes import probe_source

    # N 8 (the fewest accumulators), 40 (no integer shape: PTX's s8/u8 N go by 16 past 32), 256 (the most); the
    # whole source (every N) takes NVRTC most of a minute and compiles on the GPU machine, once per machine
    source = probe_source((8, 40, 256))
    assert "m64n40k32.s32" not in source and "m64n48k32.s32.s8.s8" in probe_source((48,))
    try:
        code = compile_source(source, "wgmma_probe.cu")
    except Exception as exc:
        pytest.skip(f"NVRTC unavailable: {exc}")
    assert b"wgmma_probe" in bytes(code.code) and len(code.code) > 1000


@pytest.mark.gpu
def test_hardware_reads_match_the_oracle():
    from layoutfuzz.gpu.wgmma_probe import WgmmaRunner

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
        d = np.full(written_extent(p), np.nan, np.float32)
        elem_bytes = DTYPES[p["dtype"]][1] // 8
        for mn, row in enumerate(probe_layout(p).addresses()):
            for kk, address in enumerate(row):
                d[kk, mn] = (address // elem_bytes >> shift) & ((1 << bits) - 1)
        if index == self.swapped:
            d[0, [0, 1]] = d[0, [1, 0]]
        if index == self.garbled:
            d[0, 2] = 0.5
        return d.ravel()

    def run_arrays(self, cases):
        from layoutfuzz.gpu.wgmma_probe import decode_many

        out = [None] * len(cases)
        for key in {(p["dtype"], p["window"]) for p in cases}:
            group = [i for i, p in enumerate(cases) if (p["dtype"], p["window"]) == key]
            if group:
                digits = [np.concatenate([self.digits(self.index[i], cases[i], shift, bits) for i in group])
                          for shift, bits in digit_plan(*key)]
                for i, table in zip(group, decode_many([cases[i] for i in group], digits)):
                    out[i] = table
        return out

    def run(self, cases):
        return [a.tolist() for a in self.run_arrays(cases)]


@pytest.mark.slow
def test_batch_methods_give_each_case_the_outcome_of_its_own_call(monkeypatch):
    # one oracle call, one probe run and one comparison over 120 operands of every type against each case alone
    from layoutfuzz.gpu.targets import wgmma_descriptor as targets
    from layoutfuzz.harness.target import make_case
    from layoutfuzz.harness.worker import evaluate, evaluate_many
    from layoutfuzz.reports.bounded import to_jsonable

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


def test_a_source_is_compiled_once_per_machine(tmp_path, monkeypatch):
    pytest.importorskip("cuda.core", reason="needs cuda.core (the [cuda] or [gpu] extra; CI installs it)")
    import cuda.core

    from layoutfuzz.gpu import device

    monkeypatch.setenv("LAYOUTFUZZ_CACHE", str(tmp_path))
    source = 'extern "C" __global__ void probe(int* p) { p[threadIdx.x] = threadIdx.x; }\n'
    try:
        first = device.compile_source.__wrapped__(source, "probe.cu")
    except Exception as exc:
        pytest.skip(f"NVRTC unavailable: {exc}")
    (cubin,) = (tmp_path / "cubins").glob("probe-*.cubin")
    monkeypatch.setattr(cuda.core, "Program", None)  # a second compile would fail: the cached cubin must be read
    again = device.compile_source.__wrapped__(source, "probe.cu")
    assert bytes(again.code) == bytes(first.code) == cubin.read_bytes()
    other = source.replace("threadIdx.x;", "threadIdx.x + 1;", 1)
    with pytest.raises(TypeError):  # another source is another key: compiled, not read (and here there is no NVRTC)
        device.compile_source.__wrapped__(other, "probe.cu")
    monkeypatch.setenv("LAYOUTFUZZ_CACHE", str(tmp_path / "cubins" / cubin.name))  # a file: no cache folder there
    with pytest.raises(TypeError):  # then it compiles, as it must
        device.compile_source.__wrapped__(source, "probe.cu")
