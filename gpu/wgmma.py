"""Driver for the wgmma descriptor probe (gpu/kernels/wgmma_probe.cu): which shared-memory element
the tensor cores read for every (mn, k) of an operand, given its descriptor, for f16, bf16, tf32,
e4m3, e5m2, s8 and u8 operands.

``probe_layout``, ``probe_descriptor``, ``digit_plan``, ``decode`` and ``decode_many`` are pure; ``WgmmaRunner``
needs an sm_90a device (and torch for buffers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from layoutfuzz.gpu.device import SHARED_MAX_SM90, KernelRunner, allow_dynamic_shared
from layoutfuzz.oracles.wgmma import CanonicalLayout, Major, MatrixDescriptor, SwizzleMode, descriptor_base_offset

WINDOW = 32 * 1024
# element type -> (kernel code, bits, digit bits: the largest n with every integer below 2^n exact)
DTYPES = {
    "f16": (0, 16, 11), "bf16": (1, 16, 8), "tf32": (2, 32, 11), "e4m3": (3, 8, 4), "e5m2": (4, 8, 3),
    "s8": (5, 8, 7), "u8": (6, 8, 8),
}
# one block of the probe: gpu/kernels/wgmma_probe.cu's WgmmaCase, field for field
BLOCK = np.dtype([("desc", "<u8"), ("start", "<i4"), ("operand", "<i4"), ("mn", "<i4"), ("n", "<i4"), ("type", "<i4"),
                  ("shift", "<i4"), ("bits", "<i4"), ("window_offset", "<i4")])
OFFSET_LAUNCHES = ((0, 1), (1, 64 * 1024), (64 * 1024, 1 << 20))  # window offsets per launch: none, low, high
IDENTITY = CanonicalLayout(Major.K, SwizzleMode.NONE, 16, 8, 1, lbo=128, sbo=256)  # 8-row x 16-byte cores, K-major


def digit_plan(dtype: str) -> list[tuple[int, int]]:
    """(shift, bits) of each launch: together they carry every element index of the window."""
    _, bits, digit = DTYPES[dtype]
    index_bits = (WINDOW * 8 // bits - 1).bit_length()
    return [(shift, digit) for shift in range(0, index_bits, digit)]


def probe_base_offset(p: Mapping[str, Any]) -> int:
    """The base-offset field of a probe case: PTX's rule with the pattern starting on the start
    address's row, 0 as CUTLASS and the other peers write it, or a given value."""
    if p["base_offset"] == "ptx":
        return descriptor_base_offset(p["start"] - p["start"] % 128, SwizzleMode[p["swizzle"]])
    return 0 if p["base_offset"] == "zero" else int(p["base_offset"])


def probe_layout(p: Mapping[str, Any]) -> CanonicalLayout:
    """The canonical layout of the operand under test (offsets from the 1024-aligned window base)."""
    bits = DTYPES[p.get("dtype", "f16")][1]
    return CanonicalLayout(Major(p["major"]), SwizzleMode[p["swizzle"]], bits, p["m"], p["k"], p["lbo"], p["sbo"], p["start"],
                           probe_base_offset(p))


def probe_descriptor(p: Mapping[str, Any]) -> MatrixDescriptor:
    """The descriptor the probe hands the hardware (its start address is added on the device),
    with the case's LBO field where PTX ignores LBO."""
    desc = probe_layout(p).descriptor()
    if p.get("lbo_field") is not None:
        desc = MatrixDescriptor(desc.start_address, int(p["lbo_field"]), desc.stride_byte_offset, desc.base_offset, desc.swizzle)
    return desc


def decode(p: Mapping[str, Any], digits: list[np.ndarray]) -> list[list[int]]:
    """Byte offset (from the window base) of the element read for each (mn, k), from the
    accumulators of the digit launches; -1 where a value is not a digit."""
    return decode_many([p], [np.asarray(d).reshape(1, 64 * 64) for d in digits])[0].tolist()


def decode_many(cases: list[Mapping[str, Any]], digits: list[np.ndarray]) -> list[np.ndarray]:
    """``decode`` of cases of one element type at once: ``digits[j]`` holds digit launch j's accumulators,
    one row of 64 x 64 per case; each answer is an [mn][k] array of byte offsets (-1: not a digit)."""
    dtype = cases[0].get("dtype", "f16") if cases else "f16"
    out: list[np.ndarray] = [np.empty(0)] * len(cases)
    for operand, region in (("A", np.s_[:, :, :32]), ("B", np.s_[:, :32, :])):  # K <= 32: D's part that shows the operand
        group = [i for i, p in enumerate(cases) if p["operand"] == operand]
        if not group:
            continue
        index, bad = 0, False
        for (shift, bits), d in zip(digit_plan(dtype), digits):
            values = np.asarray(d, dtype=np.float32).reshape(len(cases), 64, 64)[group][region]  # the accumulators
            with np.errstate(invalid="ignore"):  # NaN casts to something: it is marked bad below
                ints = np.clip(values, -1, 1 << bits).astype(np.int32)  # clipped first: no value overflows the cast
            bad = bad | (ints != values) | (ints < 0) | (ints >= 1 << bits)  # a fraction, NaN, or a digit out of range
            index = index | ints << shift  # element indices of a 32 KiB window: < 2^15
        address = np.where(bad, -1, index * (DTYPES[dtype][1] // 8)).astype(np.int64)
        for row, i in enumerate(group):
            rows, cols = probe_layout(cases[i]).shape
            out[i] = address[row, :rows, :cols] if operand == "A" else address[row, :cols, :rows].T  # D = A (B identity) or D[:K] = B
    return out


class WgmmaRunner(KernelRunner):
    """Compiles the probe once and runs batches of cases on the current device."""

    def __init__(self) -> None:
        super().__init__("wgmma_probe.cu", "wgmma_probe")
        allow_dynamic_shared(self.kernel, SHARED_MAX_SM90)  # windows placed anywhere in a block's shared memory
        self.identity_desc = IDENTITY.descriptor().encode() & ~0x3FFF

    def run(self, cases: list[Mapping[str, Any]]) -> list[list[list[int]]]:
        """The read-address table of each case; one launch per digit per element type."""
        return [a.tolist() for a in self.run_arrays(cases)]

    def run_arrays(self, cases: list[Mapping[str, Any]]) -> list[np.ndarray]:
        """``run``'s tables as [mn][k] arrays: one launch for every digit of every case (a block each)."""
        torch = self.torch
        rows = np.zeros(sum(len(digit_plan(p.get("dtype", "f16"))) for p in cases), dtype=BLOCK)
        groups: dict[str, list[int]] = {}
        for i, p in enumerate(cases):
            groups.setdefault(p.get("dtype", "f16"), []).append(i)
        first, row = {}, 0  # dtype -> its rows: digit j of the group's case c at first + j * len(group) + c
        for dtype, members in groups.items():
            first[dtype] = row
            fields = [(probe_descriptor(cases[i]).encode() & ~0x3FFF, cases[i]["start"], 0 if cases[i]["operand"] == "A" else 1,
                       1 if cases[i]["major"] == "mn" else 0, cases[i]["n"], DTYPES[dtype][0]) for i in members]
            offsets = [cases[i].get("window_offset", 0) for i in members]
            for shift, bits in digit_plan(dtype):
                rows[row:row + len(members)] = [(*f, shift, bits, o) for f, o in zip(fields, offsets)]
                row += len(members)
        results: list[np.ndarray] = [np.empty(0)] * len(cases)
        if not cases:
            return results
        # blocks whose window sits high need most of a multiprocessor's shared memory, which leaves room for one block:
        # each range of window offsets is a launch of its own, so that low windows keep several blocks an SM
        order = np.argsort(rows["window_offset"], kind="stable")
        dumped = np.empty((len(rows), 64 * 64), dtype=np.float32)
        for low, high in OFFSET_LAUNCHES:
            part = order[(rows["window_offset"][order] >= low) & (rows["window_offset"][order] < high)]
            if not len(part):
                continue
            table = torch.from_numpy(np.ascontiguousarray(rows[part]).view(np.uint8)).cuda()
            out = torch.empty((len(part), 64 * 64), dtype=torch.float32, device="cuda")
            shared = int(rows["window_offset"][part].max()) + WINDOW + 4096 + 1024  # window, identity, alignment slack
            self.launch(len(part), shared, table, np.uint64(self.identity_desc), out, np.int32(WINDOW))
            dumped[part] = self.host(out)
        for dtype, members in groups.items():
            n = len(members)
            digits = [dumped[first[dtype] + j * n: first[dtype] + (j + 1) * n] for j in range(len(digit_plan(dtype)))]
            for i, answer in zip(members, decode_many([cases[i] for i in members], digits)):
                results[i] = answer
        return results
