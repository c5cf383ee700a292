"""Driver for TMA tiled copies on a Hopper GPU: tensor maps through ctypes on libcuda, the copy
kernels (gpu/kernels/tma_copy.cu) through cuda.core, many cases per launch.

The oracle's side (``box_encoding``, ``expected_window``) is in ``oracles.tma_windows`` and runs anywhere;
``TmaRunner`` needs a CUDA device (and torch for device buffers).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from typing import Any

import numpy as np

from layoutfuzz.gpu.device import KernelRunner, compile_kernel
from layoutfuzz.oracles.tensor_map import DATA_TYPE_BYTES, TiledEncoding
from layoutfuzz.oracles.tma import TiledBox
from layoutfuzz.oracles.tma_copy import TensorCopy, reach_bytes
from layoutfuzz.oracles.tma_windows import DTYPE_BY_BYTES, FILL, Placements, box_encoding, hashed_bytes


def encode_tiled(e: TiledEncoding) -> tuple[int, np.ndarray]:
    """``libcuda``'s ``cuTensorMapEncodeTiled`` of ``e``, called through ctypes: its CUresult and the 128-byte tensor
    map as 16 uint64 words. Every array is a real pointer (an empty one too): cuda.bindings passes null for an empty
    list, which the driver refuses (docs/findings.md)."""
    import ctypes

    encode, tensor_map = _encoder()

    def array(kind: Any, values: tuple[int, ...]) -> Any:
        bits = 8 * ctypes.sizeof(kind)
        if any(v < 0 or v >> bits for v in values):  # ctypes would wrap it round: refused, as NumPy refuses it
            raise OverflowError(f"{list(values)} do not fit {bits}-bit unsigned fields")
        return (kind * (len(values) + 1))(*values)  # one spare element: never a null pointer

    result = encode(tensor_map.ctypes.data, e.data_type, e.rank, e.global_address, array(ctypes.c_uint64, e.global_dims),
                    array(ctypes.c_uint64, e.global_strides), array(ctypes.c_uint32, e.box_dims),
                    array(ctypes.c_uint32, e.element_strides), e.interleave, e.swizzle, e.l2_promotion, e.oob_fill)
    return int(result), tensor_map.copy()


@cache
def _encoder() -> tuple[Any, np.ndarray]:
    """``cuTensorMapEncodeTiled`` with its C signature declared (ctypes then converts each argument without being told
    how), and the 64-byte aligned 128 bytes it writes the tensor map into (copied out after each call)."""
    import ctypes

    from layoutfuzz.gpu.device import libcuda

    encode = libcuda().cuTensorMapEncodeTiled
    pointer, i32, u32 = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32
    encode.argtypes = [pointer, i32, u32, pointer, ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64),
                       ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32), i32, i32, i32, i32]
    encode.restype = i32
    storage = np.zeros(16 + 8, dtype=np.uint64)  # the tensor map, 64-byte aligned by hand
    offset = (-storage.ctypes.data % 64) // 8
    return encode, storage[offset:offset + 16]


def result_name(result: int) -> str:
    """A CUresult's name (``CUDA_ERROR_INVALID_VALUE``), as cuda.bindings spells it."""
    from cuda.bindings import driver

    try:
        return driver.CUresult(result).name
    except ValueError:
        return f"CUresult {result}"


def encode_tensor_map(e: TiledEncoding) -> np.ndarray:
    """The 128-byte tensor map of ``e``, as 16 uint64 words; a refusal raises ``RuntimeError`` with the CUresult's name."""
    result, words = encode_tiled(e)
    if result:
        raise RuntimeError(f"cuTensorMapEncodeTiled: {result_name(result)}")
    return words


def stored_pattern(size: int) -> np.ndarray:
    """The bytes the raw store kernel writes from shared memory (byte i = 13 i + 1)."""
    return ((13 * np.arange(size) + 1) & 0xFF).astype(np.uint8)


class TmaStoreRunner(KernelRunner):
    """The raw TMA store (``tma_store`` in gpu/kernels/tma_copy.cu): one box from shared memory to a
    global tensor, no compiler in between, to replay a store finding one layer below Triton."""

    def __init__(self) -> None:
        super().__init__("tma_copy.cu", "tma_store")

    def store(self, encoding: TiledEncoding, coords: tuple[int, ...], fill: int) -> np.ndarray:
        """The global tensor's bytes (first filled with ``fill``) after storing the box at ``coords``
        (innermost first); ``encoding``'s address is replaced by the tensor's."""
        torch = self.torch
        dst = torch.full((encoding.global_bytes,), fill, dtype=torch.uint8, device="cuda")
        tmap = torch.from_numpy(encode_tensor_map(replace(encoding, global_address=dst.data_ptr()))).cuda()
        box_bytes = int(np.prod(encoding.box_dims)) * DATA_TYPE_BYTES[encoding.data_type]
        padded = [*coords, *[0] * (5 - len(coords))]
        self.launch(1, box_bytes + 2048, tmap, np.int32(encoding.rank), *(np.int32(c) for c in padded), np.int32(box_bytes))
        return dst.cpu().numpy()


class TmaRunner(KernelRunner):
    """Compiles the copy kernel once and runs batches of boxes on the current CUDA device."""

    def __init__(self) -> None:
        super().__init__("tma_copy.cu", "tma_copy")
        self._source = None  # the device copy of hashed_bytes, kept between batches and grown by doubling

    def encode(self, encoding: TiledEncoding) -> np.ndarray:
        return encode_tensor_map(encoding)

    def source(self, size: int):
        """A device buffer whose first ``size`` bytes are ``hashed_bytes(size)`` (a whole number of 8-byte words)."""
        size = -(-size // 8) * 8
        if self._source is None or self._source.numel() < size:
            data = hashed_bytes(max(size, 2 * (0 if self._source is None else self._source.numel())))
            self._source = self.torch.from_numpy(data.copy()).cuda()
        return self._source

    def run(self, boxes: list[TiledBox], window: int, coord: int = 0) -> list[np.ndarray | str]:
        """Each box's shared-memory window after the copy from (coord, ..., coord), or the CUDA
        error that refused it. The oracle's windows are for coordinate 0."""
        rows, windows = self.run_on_device(boxes, window, coord)
        if windows is None:
            return list(rows)  # type: ignore[arg-type]
        dumped = self.host(windows.out)
        return [r if isinstance(r, str) else dumped[r] for r in rows]

    def run_on_device(self, boxes: list[TiledBox], window: int, coord: int = 0) -> tuple[list[int | str], DeviceWindows | None]:
        """As ``run``, with the windows left on the device: each box's row of the batch's ``DeviceWindows``,
        or the CUDA error that refused its tensor map."""
        if window % 16:
            raise ValueError(f"the window is whole 16-byte units (the kernel fills and dumps it so), not {window} bytes")
        torch = self.torch
        results: list[int | str] = [""] * len(boxes)
        maps, cases = [], []
        src = self.source(max(box_encoding(box).global_bytes for box in boxes))  # one buffer: every map reads its start
        for i, box in enumerate(boxes):
            p = box_encoding(box, src.data_ptr())
            try:
                maps.append(self.encode(p))
            except RuntimeError as exc:
                results[i] = str(exc)
                continue
            results[i] = len(cases)
            cases.append((p.rank, box.dst, box.size_bytes, coord))
        if not cases:
            return results, None
        tmaps = torch.from_numpy(np.stack(maps)).cuda()
        table = torch.tensor(cases, dtype=torch.int32).cuda()
        out = torch.empty((len(cases), window), dtype=torch.uint8, device="cuda")
        self.launch(len(cases), window + 1024, tmaps, table, out, np.int32(window), np.uint8(FILL))
        return results, DeviceWindows(out, src)


@dataclass(frozen=True, eq=False)
class DeviceWindows:
    """A batch's shared-memory windows, left on the device (a row per accepted box) and checked there: only
    the windows of cases that differ travel to the host."""

    out: Any  # torch uint8 (rows, window) on the device
    source: Any  # the device's hashed bytes every tensor map read

    def row(self, r: int) -> np.ndarray:
        """Window ``r`` on the host."""
        return self.out[r].cpu().numpy()

    def mismatches(self, rows: np.ndarray, placed: Placements, fill: int) -> np.ndarray:
        """Which of the windows ``rows`` (placed.case k is window rows[k]) differ from the oracle's placements:
        ``oracles.tma_windows.window_mismatches``, its rule word for word, computed on the device."""
        torch = _torch()
        device = self.out.device
        words = self.out.view(torch.int64)  # 8-byte granules; equality is all that is asked of them
        source = self.source.view(torch.int64)
        index = torch.from_numpy(np.stack([placed.case, placed.word, placed.source_word])).to(device).long()
        case, word, source_word = index[0], index[1], index[2]
        row_of = torch.from_numpy(np.asarray(rows, dtype=np.int64)).to(device)
        fill_word = int(np.array([int.from_bytes(bytes([fill]) * 8, "little")], np.uint64).view(np.int64)[0])
        got = words[row_of[case], word]
        per_case = torch.zeros((2, placed.count), dtype=torch.int64, device=device)
        per_case[0].index_add_(0, case, (got != source[source_word]).long())  # placed granules holding other data
        per_case[1].index_add_(0, case, (got != fill_word).long())  # placed granules not holding the fill
        unfilled = (words[row_of] != fill_word).sum(dim=1)  # granules of the window not holding the fill
        wrong = (per_case[0] > 0) | (unfilled != per_case[1])
        return wrong.cpu().numpy()


def _torch():
    import torch

    return torch


GUARD = 256  # bytes before and after each tensor of a ``TensorCopyRunner`` batch: a write there is past the tensor
WAIT_CYCLES = 200_000_000  # a load's mbarrier wait before it counts as never completed (about 0.1 s at 1.98 GHz)
INCOMPLETE = "incomplete: the load's mbarrier never reached its transaction count"


def copy_encoding(copy: TensorCopy, address: int = 0) -> TiledEncoding:
    """The ``cuTensorMapEncodeTiled`` arguments of a copy's global tensor and box."""
    box = copy.box
    if box.element_bytes not in DTYPE_BY_BYTES or box.swizzle.spec.cuda is None:
        raise ValueError(f"no CUDA tensor map for {box.element_bytes}-byte elements in mode {box.swizzle.spec.name}")
    data_type = DTYPE_BY_BYTES[box.element_bytes] if copy.data_type is None else copy.data_type
    return TiledEncoding(data_type, address, copy.global_dims, copy.global_strides, box.box_dims,
                         box.element_strides, interleave=box.interleave, swizzle=box.swizzle.spec.cuda, oob_fill=copy.oob_fill)


def region_bytes(copy: TensorCopy) -> int:
    """A copy's share of a batch's global buffer: the guard zones and what a store may reach, in 256-byte units."""
    return GUARD + -(-reach_bytes(copy) // GUARD) * GUARD + GUARD


def initial_region(copy: TensorCopy) -> np.ndarray:
    """A copy's region before the kernel: a load's holds data (``hashed_bytes``, guards included), a store's the fill."""
    if copy.direction == "load":
        return hashed_bytes(region_bytes(copy))
    return np.full(region_bytes(copy), FILL, dtype=np.uint8)


def shared_pattern(window: int) -> np.ndarray:
    """The window a store's box is read from (the kernel writes it to shared memory first)."""
    return hashed_bytes(window)[::-1].copy()  # not the loads' sequence: a store of load data would show


class TensorCopyRunner(KernelRunner):
    """Loads and stores over global tensors from any coordinates (``tma_tensor_copy``), a batch a launch: each case's
    tensor has guard zones around it in one buffer, and the windows and the buffer come back to the host."""

    def __init__(self) -> None:
        super().__init__("tma_copy.cu", "tma_tensor_copy")
        self.multicast = compile_kernel("tma_copy.cu").get_kernel("tma_multicast_load")

    def run(self, copies: list[TensorCopy], window: int) -> list[tuple[np.ndarray, np.ndarray] | str]:
        """Each copy's (windows, region) after the launches, or the CUDA error that refused its tensor map, or
        ``INCOMPLETE`` for a load whose bytes never completed its mbarrier: one launch for the copies of one CTA, one for
        each cluster size's multicast loads (``tma_multicast_load``), whose windows are every CTA's, rank 0 first."""
        torch = self.torch
        sizes = [region_bytes(c) for c in copies]
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        buffer = torch.from_numpy(np.concatenate([initial_region(c) for c in copies])).cuda()
        results: list[Any] = [""] * len(copies)
        maps: dict[int, np.ndarray] = {}
        for i, copy in enumerate(copies):
            try:
                maps[i] = encode_tensor_map(copy_encoding(copy, buffer.data_ptr() + int(starts[i]) + GUARD))
            except RuntimeError as exc:
                results[i] = str(exc)
        groups: dict[int, list[int]] = {}
        for i in maps:
            groups.setdefault(copies[i].cluster, []).append(i)
        windows, incomplete = {}, set()
        for cluster, rows in groups.items():
            tmaps = torch.from_numpy(np.stack([maps[i] for i in rows])).cuda()
            out = torch.empty((len(rows) * cluster, window), dtype=torch.uint8, device="cuda")
            if cluster == 1:
                table = [(int(copies[i].direction == "store"), len(copies[i].coords), copies[i].box.dst, copies[i].box.size_bytes,
                          *_coords5(copies[i])) for i in rows]
                pattern = torch.from_numpy(shared_pattern(window)).cuda()
                complete = torch.zeros(len(rows), dtype=torch.int32, device="cuda")
                self.launch(len(rows), window + 1024, tmaps, torch.tensor(table, dtype=torch.int32).cuda(), pattern, out,
                            complete, np.int32(window), np.uint8(FILL), np.int64(WAIT_CYCLES))
                incomplete |= {i for i, done in zip(rows, self.host(complete)) if not done}
            else:
                table = [(len(copies[i].coords), copies[i].box.dst, copies[i].box.size_bytes, copies[i].multicast, copies[i].issuer,
                          *_coords5(copies[i])) for i in rows]
                self.launch(len(rows), window + 1024, tmaps, torch.tensor(table, dtype=torch.int32).cuda(), out, np.int32(window),
                            np.uint8(FILL), kernel=self.multicast, cluster=cluster)
            dumped = self.host(out).reshape(len(rows), cluster * window)
            windows.update({i: dumped[k] for k, i in enumerate(rows)})
        if windows:
            regions = self.host(buffer)
            for i, w in windows.items():
                results[i] = INCOMPLETE if i in incomplete else (w, regions[starts[i]:starts[i + 1]])
        return results


def _coords5(copy: TensorCopy) -> list[int]:
    return [*copy.coords, *(0,) * (5 - len(copy.coords))]
