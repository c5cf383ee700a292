"""Driver for the wgmma descriptor probe (gpu/kernels/wgmma_probe.cu): which shared-memory element
the tensor cores read for every (mn, k) of an operand, given its descriptor.

``probe_layout``, ``probe_descriptor``, ``identity_image`` and ``decode`` are pure; ``WgmmaRunner``
needs an sm_90 device (and torch for buffers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from oracles.wgmma import CanonicalLayout, Major, MatrixDescriptor, SwizzleMode, descriptor_base_offset

WINDOW = 32 * 1024
THREADS = 128
DIGIT_BITS = 11  # f16 holds integers up to 2048 exactly
IDENTITY = CanonicalLayout(Major.K, SwizzleMode.NONE, 16, 8, 1, lbo=128, sbo=256)  # 64 x 16, K-major, no swizzle


def probe_base_offset(p: Mapping[str, Any]) -> int:
    """The base-offset field of a probe case: PTX's rule with the pattern starting on the start
    address's row, 0 as CUTLASS and the other peers write it, or a given value."""
    if p["base_offset"] == "ptx":
        return descriptor_base_offset(p["start"] - p["start"] % 128, SwizzleMode[p["swizzle"]])
    return 0 if p["base_offset"] == "zero" else int(p["base_offset"])


def probe_layout(p: Mapping[str, Any]) -> CanonicalLayout:
    """The canonical layout of the operand under test (offsets from the 1024-aligned window base)."""
    return CanonicalLayout(Major(p["major"]), SwizzleMode[p["swizzle"]], 16, p["m"], p["k"], p["lbo"], p["sbo"], p["start"],
                           probe_base_offset(p))


def probe_descriptor(p: Mapping[str, Any]) -> MatrixDescriptor:
    """The descriptor the probe hands the hardware (its start address is added on the device),
    with the case's LBO field where PTX ignores LBO."""
    desc = probe_layout(p).descriptor()
    if p.get("lbo_field") is not None:
        desc = MatrixDescriptor(desc.start_address, int(p["lbo_field"]), desc.stride_byte_offset, desc.base_offset, desc.swizzle)
    return desc


def identity_image() -> np.ndarray:
    """2048 f16 words: a 64 x 16 K-major identity (1.0 where mn == k) in the IDENTITY layout."""
    image = np.zeros(2048, dtype=np.float16)
    for mn in range(64):
        for kk in range(16):
            image[IDENTITY.smem_address(mn, kk) // 2] = 1.0 if mn == kk else 0.0
    return image.view(np.uint16)


def decode(p: Mapping[str, Any], digits: list[np.ndarray]) -> list[list[int]]:
    """Byte offset (from the window base) of the element read for each (mn, k), from the
    accumulators of the digit launches; -1 where a value is not a digit."""
    layout = probe_layout(p)
    rows, cols = layout.shape
    index = np.zeros((64, 64), dtype=np.int64)
    bad = np.zeros((64, 64), dtype=bool)
    for shift, d in enumerate(digits):
        values = np.asarray(d, dtype=np.float64).reshape(64, 64)
        ints = np.rint(values)
        bad |= (ints != values) | (ints < 0) | (ints >= 1 << DIGIT_BITS)
        index += ints.astype(np.int64) << (DIGIT_BITS * shift)
    out = []
    for mn in range(rows):
        row = []
        for kk in range(cols):
            r, c = (mn, kk) if p["operand"] == "A" else (kk, mn)  # D = A (B identity) or D[:16] = B
            row.append(-1 if bad[r, c] else int(index[r, c]) * 2)
        out.append(row)
    return out


class WgmmaRunner:
    """Compiles the probe once and runs batches of cases on the current device."""

    def __init__(self) -> None:
        import torch
        from cuda.core import Device

        from gpu.compile import compile_kernel

        self.torch = torch
        self.device = Device()
        self.device.set_current()
        self.stream = self.device.create_stream()
        self.kernel = compile_kernel("wgmma_probe.cu").get_kernel("wgmma_probe")
        self.identity = torch.from_numpy(identity_image().astype(np.int16)).cuda()
        self.identity_desc = IDENTITY.descriptor().encode() & ~0x3FFF

    def run(self, cases: list[Mapping[str, Any]]) -> list[list[list[int]]]:
        from cuda.core import LaunchConfig, launch

        from gpu.tma import DeviceFault

        torch = self.torch
        table = np.zeros(len(cases), dtype=[("desc", "<u8"), ("start", "<i4"), ("operand", "<i4"), ("mn", "<i4"), ("n", "<i4")])
        for i, p in enumerate(cases):
            table[i] = (probe_descriptor(p).encode() & ~0x3FFF, p["start"], 0 if p["operand"] == "A" else 1,
                        1 if p["major"] == "mn" else 0, p["n"])
        cases_dev = torch.from_numpy(table.view(np.uint8)).cuda()
        digits = []
        for launch_index in range(2):
            out = torch.zeros((len(cases), 64 * 64), dtype=torch.float32, device="cuda")
            torch.cuda.synchronize()
            config = LaunchConfig(grid=len(cases), block=THREADS, shmem_size=WINDOW + 4096 + 1024)
            try:
                launch(self.stream, config, self.kernel, np.uint64(cases_dev.data_ptr()), np.uint64(self.identity.data_ptr()),
                       np.uint64(self.identity_desc), np.uint64(out.data_ptr()), np.int32(WINDOW),
                       np.int32(DIGIT_BITS * launch_index))
                self.stream.sync()
            except Exception as exc:
                raise DeviceFault(f"{type(exc).__name__}: {exc}") from exc
            digits.append(out.cpu().numpy())
        return [decode(p, [digits[0][i], digits[1][i]]) for i, p in enumerate(cases)]
