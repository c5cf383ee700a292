"""Driver for the wgmma descriptor probe (gpu/kernels/wgmma_probe.cu): which shared-memory element
the tensor cores read for every (mn, k) of an operand, given its descriptor, for f16, bf16, tf32,
e4m3, e5m2, s8 and u8 operands.

``probe_layout``, ``probe_descriptor``, ``digit_plan`` and ``decode`` are pure; ``WgmmaRunner``
needs an sm_90a device (and torch for buffers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from gpu.device import KernelRunner
from oracles.wgmma import CanonicalLayout, Major, MatrixDescriptor, SwizzleMode, descriptor_base_offset

WINDOW = 32 * 1024
# element type -> (kernel code, bits, digit bits: the largest n with every integer below 2^n exact)
DTYPES = {
    "f16": (0, 16, 11), "bf16": (1, 16, 8), "tf32": (2, 32, 11), "e4m3": (3, 8, 4), "e5m2": (4, 8, 3),
    "s8": (5, 8, 7), "u8": (6, 8, 8),
}
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
    layout = probe_layout(p)
    rows, cols = layout.shape
    elem_bytes = layout.elem_bits // 8
    index = np.zeros((64, 64), dtype=np.int64)
    bad = np.zeros((64, 64), dtype=bool)
    for (shift, bits), d in zip(digit_plan(p.get("dtype", "f16")), digits):
        values = np.asarray(d, dtype=np.float64).reshape(64, 64)
        ints = np.rint(values)
        bad |= (ints != values) | (ints < 0) | (ints >= 1 << bits)
        index += ints.astype(np.int64) << shift
    out = []
    for mn in range(rows):
        row = []
        for kk in range(cols):
            r, c = (mn, kk) if p["operand"] == "A" else (kk, mn)  # D = A (B identity) or D[:K] = B
            row.append(-1 if bad[r, c] else int(index[r, c]) * elem_bytes)
        out.append(row)
    return out


class WgmmaRunner(KernelRunner):
    """Compiles the probe once and runs batches of cases on the current device."""

    def __init__(self) -> None:
        super().__init__("wgmma_probe.cu", "wgmma_probe")
        self.identity_desc = IDENTITY.descriptor().encode() & ~0x3FFF

    def run(self, cases: list[Mapping[str, Any]]) -> list[list[list[int]]]:
        """The read-address table of each case; one launch per digit per element type."""
        results: list[list[list[int]]] = [[] for _ in cases]
        for dtype in DTYPES:
            group = [i for i, p in enumerate(cases) if p.get("dtype", "f16") == dtype]
            if group:
                for i, table in zip(group, self._run_type(dtype, [cases[i] for i in group])):
                    results[i] = table
        return results

    def _run_type(self, dtype: str, cases: list[Mapping[str, Any]]) -> list[list[list[int]]]:
        torch = self.torch
        table = np.zeros(len(cases), dtype=[("desc", "<u8"), ("start", "<i4"), ("operand", "<i4"), ("mn", "<i4"), ("n", "<i4")])
        for i, p in enumerate(cases):
            table[i] = (probe_descriptor(p).encode() & ~0x3FFF, p["start"], 0 if p["operand"] == "A" else 1,
                        1 if p["major"] == "mn" else 0, p["n"])
        cases_dev = torch.from_numpy(table.view(np.uint8)).cuda()
        digits = []
        for shift, bits in digit_plan(dtype):
            out = torch.zeros((len(cases), 64 * 64), dtype=torch.float32, device="cuda")
            self.launch(len(cases), WINDOW + 4096 + 1024, cases_dev, np.int32(DTYPES[dtype][0]),
                        np.uint64(self.identity_desc), out, np.int32(WINDOW), np.int32(shift), np.int32(bits))
            digits.append(out.cpu().numpy())
        return [decode(p, [d[i] for d in digits]) for i, p in enumerate(cases)]
