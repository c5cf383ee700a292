"""Driver for TMA tiled copies on a Hopper GPU: tensor maps through cuda.bindings, the copy
kernel (gpu/kernels/tma_copy.cu) through cuda.core, many cases per launch.

``tensor_map_params`` and ``expected_window`` are pure and run anywhere; ``TmaRunner`` needs a
CUDA device (and torch for device buffers).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from layoutfuzz.gpu.device import KernelRunner
from layoutfuzz.oracles.tensor_map import TiledEncoding
from layoutfuzz.oracles.tma import TiledBox
from layoutfuzz.oracles.tma_windows import Placements

FILL = 0xA5  # shared-memory bytes the copy does not write keep this value
DTYPE_BY_BYTES = {1: 0, 2: 1, 4: 2, 8: 4}  # CU_TENSOR_MAP_DATA_TYPE_UINT8/16/32, UINT64 (value 4)


@dataclass(frozen=True)
class TensorMapParams:
    """The arguments of ``cuTensorMapEncodeTiled`` for a box copied from coordinate 0."""

    data_type: int
    rank: int
    global_dims: tuple[int, ...]
    global_strides: tuple[int, ...]  # bytes, dims 1.. (rank - 1 values)
    box_dims: tuple[int, ...]
    element_strides: tuple[int, ...]
    swizzle: int  # CUtensorMapSwizzle

    @property
    def global_bytes(self) -> int:
        if self.rank == 1:
            return self.global_dims[0] * _element_bytes(self.data_type)
        return self.global_strides[-1] * self.global_dims[-1]


def _element_bytes(data_type: int) -> int:
    return {v: k for k, v in DTYPE_BY_BYTES.items()}[data_type]


def tensor_map_params(box: TiledBox) -> TensorMapParams:
    """A global tensor just large enough for the box, rows padded to 16 bytes (the driver's rule)."""
    if box.element_bytes not in DTYPE_BY_BYTES or box.swizzle.spec.cuda is None:
        raise ValueError(f"no CUDA tensor map for {box.element_bytes}-byte elements in mode {box.swizzle.spec.name}")
    dims = tuple(box.box_dims)
    strides, pitch = [], -(-dims[0] * box.element_bytes // 16) * 16
    for d in dims[1:]:
        strides.append(pitch)
        pitch *= d
    return TensorMapParams(DTYPE_BY_BYTES[box.element_bytes], len(dims), dims, tuple(strides), dims,
                           tuple(box.element_strides), box.swizzle.spec.cuda)


def box_encoding(box: TiledBox, address: int = 0) -> TiledEncoding:
    """The ``cuTensorMapEncodeTiled`` arguments of the box's tensor map (``tensor_map_params``), for the validity oracle."""
    p = tensor_map_params(box)
    return TiledEncoding(p.data_type, address, p.global_dims, p.global_strides, p.box_dims, p.element_strides, 0, p.swizzle)


def global_bytes(params: TensorMapParams) -> np.ndarray:
    """The global tensor's bytes: a hash of each byte's offset, so misplaced data shows."""
    return hashed_bytes(params.global_bytes)


def hashed_bytes(size: int) -> np.ndarray:
    """``size`` bytes, each a hash of its offset: every tensor's data is the start of the same sequence, so
    one buffer of the largest serves a batch of tensor maps (read-only: a view of the sequence made so far)."""
    global _HASHED
    if size > _HASHED.size:
        index = np.arange(max(size, 2 * _HASHED.size, 1 << 20), dtype=np.uint64)  # grown by doubling: made once a campaign
        _HASHED = ((index * np.uint64(0x9E3779B1) >> np.uint64(13)) & np.uint64(0xFF)).astype(np.uint8)
        _HASHED.flags.writeable = False
    return _HASHED[:size]


_HASHED = np.empty(0, np.uint8)


def source_words(boxes: list[TiledBox]) -> np.ndarray:
    """The global data every box of a batch reads (``hashed_bytes`` up to the largest tensor), as 8-byte words:
    what ``oracles.tma_windows`` places."""
    size = max(tensor_map_params(box).global_bytes for box in boxes)
    return hashed_bytes(-(-size // 8) * 8).view(np.uint64)


def expected_window(box: TiledBox, window: int) -> np.ndarray:
    """The oracle's shared-memory window after the copy (``box.dst`` counted from its base)."""
    params = tensor_map_params(box)
    data = global_bytes(params)
    out = np.full(window, FILL, dtype=np.uint8)
    e = box.element_bytes
    pitches = (e, *params.global_strides)
    for index in box.indices():
        src = sum(i * s * p for i, s, p in zip(index, box.element_strides, pitches))
        dst = box.address(index)
        out[dst : dst + e] = data[src : src + e]
    return out


def encode_tensor_map(params: TensorMapParams, address: int) -> np.ndarray:
    """The 128-byte tensor map of ``params`` over global memory at ``address``, as 16 uint64 words."""
    from cuda.bindings import driver

    err, tmap = driver.cuTensorMapEncodeTiled(
        driver.CUtensorMapDataType(params.data_type), params.rank, address,
        [driver.cuuint64_t(d) for d in params.global_dims],
        [driver.cuuint64_t(s) for s in params.global_strides],
        [driver.cuuint32_t(b) for b in params.box_dims],
        [driver.cuuint32_t(s) for s in params.element_strides],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        driver.CUtensorMapSwizzle(params.swizzle),
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_NONE,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuTensorMapEncodeTiled: {err.name}")
    return np.array([int(w) for w in tmap.opaque], dtype=np.uint64)


def stored_pattern(size: int) -> np.ndarray:
    """The bytes the raw store kernel writes from shared memory (byte i = 13 i + 1)."""
    return ((13 * np.arange(size) + 1) & 0xFF).astype(np.uint8)


class TmaStoreRunner(KernelRunner):
    """The raw TMA store (``tma_store`` in gpu/kernels/tma_copy.cu): one box from shared memory to a
    global tensor, no compiler in between, to replay a store finding one layer below Triton."""

    def __init__(self) -> None:
        super().__init__("tma_copy.cu", "tma_store")

    def store(self, params: TensorMapParams, coords: tuple[int, ...], fill: int) -> np.ndarray:
        """The global tensor's bytes (first filled with ``fill``) after storing the box at ``coords``
        (innermost first)."""
        torch = self.torch
        dst = torch.full((params.global_bytes,), fill, dtype=torch.uint8, device="cuda")
        tmap = torch.from_numpy(encode_tensor_map(params, dst.data_ptr())).cuda()
        box_bytes = int(np.prod(params.box_dims)) * _element_bytes(params.data_type)
        padded = [*coords, *[0] * (5 - len(coords))]
        self.launch(1, box_bytes + 2048, tmap, np.int32(params.rank), *(np.int32(c) for c in padded), np.int32(box_bytes))
        return dst.cpu().numpy()


class TmaRunner(KernelRunner):
    """Compiles the copy kernel once and runs batches of boxes on the current CUDA device."""

    def __init__(self) -> None:
        super().__init__("tma_copy.cu", "tma_copy")
        self._source = None  # the device copy of hashed_bytes, kept between batches and grown by doubling

    def encode(self, params: TensorMapParams, address: int) -> np.ndarray:
        return encode_tensor_map(params, address)

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
        params = [tensor_map_params(box) for box in boxes]
        src = self.source(max(p.global_bytes for p in params))  # one buffer: every map reads its start
        for i, (box, p) in enumerate(zip(boxes, params)):
            try:
                maps.append(self.encode(p, src.data_ptr()))
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
