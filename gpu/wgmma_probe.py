"""Driver for the wgmma descriptor probe (gpu/kernels/wgmma_probe.cu): which shared-memory element
the tensor cores read for every (mn, k) of an operand, given its descriptor, for f16, bf16, tf32,
e4m3, e5m2, s8 and u8 operands and every N of m64nNkK PTX allows them.

``probe_descriptor``, ``digit_plan``, ``decode`` and ``decode_many`` are pure (the operand's layout, ``probe_layout``,
is the oracle's: ``oracles.wgmma``); ``WgmmaRunner`` needs an sm_90a device (and torch for buffers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from layoutfuzz.generators.wgmma import PROBE_WINDOW
from layoutfuzz.gpu.device import SHARED_MAX_SM90, KernelRunner, allow_dynamic_shared
from layoutfuzz.gpu.wgmma_shapes import SHAPES, probe_source
from layoutfuzz.oracles import wgmma
from layoutfuzz.oracles.wgmma import (
    DTYPES,
    CanonicalLayout,
    Major,
    MatrixDescriptor,
    SwizzleMode,
)

WINDOW = PROBE_WINDOW  # bytes of shared memory an operand may touch, by default (WIDE_WINDOW at most)
IDENTITY_BYTES = 4096  # the identity operand after the window (64 rows of 32 bytes)
# one block of the probe: gpu/kernels/wgmma_probe.cu's WgmmaCase, field for field
BLOCK = np.dtype([("desc", "<u8"), ("start", "<i4"), ("operand", "<i4"), ("mn", "<i4"), ("n", "<i4"), ("type", "<i4"),
                  ("shift", "<i4"), ("bits", "<i4"), ("window_offset", "<i4"), ("window", "<i4"),
                  ("out_offset", "<i4")], align=True)  # as C pads it
# where windows end (offset + size), per launch: a 32 KiB window at 0, low, high
END_LAUNCHES = ((0, WINDOW + 1), (WINDOW + 1, WINDOW + 64 * 1024), (WINDOW + 64 * 1024, 1 << 20))
IDENTITY = CanonicalLayout(Major.K, SwizzleMode.NONE, 16, 8, 1, lbo=128, sbo=256)  # 8-row x 16-byte cores, K-major


def digit_plan(dtype: str, window: int = WINDOW) -> list[tuple[int, int]]:
    """(shift, bits) of each launch: together they carry every element index of a window of ``window`` bytes."""
    _, bits, digit = DTYPES[dtype]
    index_bits = (window * 8 // bits - 1).bit_length()
    return [(shift, digit) for shift in range(0, index_bits, digit)]


def probe_descriptor(p: Mapping[str, Any]) -> MatrixDescriptor:
    """The descriptor the probe hands the hardware (its start address is added on the device),
    with the case's LBO field where PTX ignores LBO."""
    desc = wgmma.probe_layout(p).descriptor()
    if p.get("lbo_field") is not None:
        desc = MatrixDescriptor(desc.start_address, int(p["lbo_field"]), desc.stride_byte_offset, desc.base_offset, desc.swizzle)
    return desc


def written_extent(p: Mapping[str, Any]) -> tuple[int, int]:
    """(K, MN extent) of what the probe writes of a case's operand: K of one instruction (32 bytes of elements) by
    A's 64 rows or B's N."""
    return SHAPES[p.get("dtype", "f16")][1], 64 if p["operand"] == "A" else p["n"]


def decode(p: Mapping[str, Any], digits: list[np.ndarray]) -> list[list[int]]:
    """Byte offset (from the window base) of the element read for each (mn, k), from what the digit launches
    wrote (the operand as [k][mn] each); -1 where a value is not a digit."""
    return decode_many([p], [np.asarray(d).ravel() for d in digits])[0].tolist()


def decode_many(cases: list[Mapping[str, Any]], digits: list[np.ndarray]) -> list[np.ndarray]:
    """``decode`` of cases of one element type and window at once: ``digits[j]`` is what digit launch j wrote for
    them, one after the other (each case's operand as its [k][mn] values); each answer is an [mn][k] array of byte
    offsets (-1: not a digit)."""
    if not cases:
        return []
    address = digit_addresses([np.asarray(d, dtype=np.float32) for d in digits], cases[0].get("dtype", "f16"),
                              cases[0].get("window", WINDOW))
    return split_operands(cases, address)


def digit_addresses(digits: list[Any], dtype: str, window: int) -> Any:
    """The byte offsets (-1: not a digit) that digit launches' outputs spell, element by element: NumPy arrays or
    torch tensors alike (a campaign decodes on the device and copies back one integer a read)."""
    index = bad = None
    for (shift, bits), values in zip(digit_plan(dtype, window), digits):
        with np.errstate(invalid="ignore"):  # NaN casts to something: it is marked bad below
            ints = values.clip(-1, 1 << bits)  # clipped first: no value overflows the cast
            ints = ints.astype(np.int32) if isinstance(ints, np.ndarray) else ints.int()
        wrong = (ints != values) | (ints < 0) | (ints >= 1 << bits)  # a fraction, NaN, or a digit out of range
        bad = wrong if bad is None else bad | wrong
        index = ints << shift if index is None else index | ints << shift  # element indices of the window
    address = index * (DTYPES[dtype][1] // 8)
    return address - bad * (address + 1)  # -1 where bad


def split_operands(cases: list[Mapping[str, Any]], address: np.ndarray) -> list[np.ndarray]:
    """Each case's [mn][k] table from the addresses of the cases' operands one after the other ([k][mn] each)."""
    out, at = [], 0
    for p in cases:
        k, mn = written_extent(p)
        out.append(address[at:at + k * mn].reshape(k, mn).T)
        at += k * mn
    return out


class WgmmaRunner(KernelRunner):
    """Compiles the probe once and runs batches of cases on the current device."""

    def __init__(self) -> None:
        super().__init__("wgmma_probe.cu", "wgmma_probe", probe_source())
        allow_dynamic_shared(self.kernel, SHARED_MAX_SM90)  # windows placed anywhere in a block's shared memory
        self.identity_desc = IDENTITY.descriptor().encode() & ~0x3FFF

    def run(self, cases: list[Mapping[str, Any]]) -> list[list[list[int]]]:
        """The read-address table of each case; one launch per digit per element type."""
        return [a.tolist() for a in self.run_arrays(cases)]

    def run_arrays(self, cases: list[Mapping[str, Any]]) -> list[np.ndarray]:
        """``run``'s tables as [mn][k] arrays: one launch for every digit of every case (a block each)."""
        torch = self.torch
        groups: dict[tuple[str, int], list[int]] = {}  # (element type, window) -> its cases: one digit plan
        for i, p in enumerate(cases):
            groups.setdefault((p.get("dtype", "f16"), p.get("window", WINDOW)), []).append(i)
        rows = np.zeros(sum(len(digit_plan(*key)) * len(members) for key, members in groups.items()), dtype=BLOCK)
        first, row = {}, 0  # group -> its rows: digit j of the group's case c at first + j * len(group) + c
        for key, members in groups.items():
            first[key] = row
            fields = [(probe_descriptor(cases[i]).encode() & ~0x3FFF, cases[i]["start"], 0 if cases[i]["operand"] == "A" else 1,
                       1 if cases[i]["major"] == "mn" else 0, cases[i]["n"], DTYPES[key[0]][0]) for i in members]
            places = [(cases[i].get("window_offset", 0), key[1]) for i in members]
            for shift, bits in digit_plan(*key):
                rows[row:row + len(members)] = [(*f, shift, bits, *w, 0) for f, w in zip(fields, places)]  # out_offset: below
                row += len(members)
        results: list[np.ndarray] = [np.empty(0)] * len(cases)
        if not cases:
            return results
        extents = [written_extent(p) for p in cases]
        sizes = np.array([extents[i][0] * extents[i][1] for key, members in groups.items()
                          for _ in digit_plan(*key) for i in members], dtype=np.int64)
        ends_at = np.cumsum(sizes)
        rows["out_offset"] = ends_at - sizes  # table order: a group's digit j is one run of out
        out = torch.empty(int(ends_at[-1]), dtype=torch.float32, device="cuda")
        # blocks whose window ends high need most of a multiprocessor's shared memory, which leaves room for one block:
        # each range of window ends is a launch of its own, so that low windows keep several blocks an SM
        ends = rows["window_offset"] + rows["window"]
        order = np.argsort(ends, kind="stable")
        for low, high in END_LAUNCHES:
            part = order[(ends[order] >= low) & (ends[order] < high)]
            if len(part):
                table = torch.from_numpy(np.ascontiguousarray(rows[part]).view(np.uint8)).cuda()
                shared = int(ends[part].max()) + IDENTITY_BYTES + 1024  # window, identity, alignment slack
                self.launch(len(part), shared, table, np.uint64(self.identity_desc), out)
        segments, at = {}, 0  # group -> where its addresses lie in the one copy back
        decoded = []
        for key, members in groups.items():
            n, start = len(members), first[key]
            digits = [out[int(ends_at[start + j * n] - sizes[start + j * n]):int(ends_at[start + (j + 1) * n - 1])]
                      for j in range(len(digit_plan(*key)))]
            decoded.append(digit_addresses(digits, *key))
            segments[key], at = (at, at + len(decoded[-1])), at + len(decoded[-1])
        host = self.host(torch.cat(decoded).int())
        for key, members in groups.items():
            low, high = segments[key]
            for i, answer in zip(members, split_operands([cases[i] for i in members], host[low:high])):
                results[i] = answer
        return results
