"""Driver for TMA tiled copies on a Hopper GPU: tensor maps through cuda.bindings, the copy
kernel (gpu/kernels/tma_copy.cu) through cuda.core, many cases per launch.

``tensor_map_params`` and ``expected_window`` are pure and run anywhere; ``TmaRunner`` needs a
CUDA device (and torch for device buffers).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from layoutfuzz.gpu.device import KernelRunner
from layoutfuzz.oracles.tma import TiledBox

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
        """A device buffer whose first ``size`` bytes are ``hashed_bytes(size)``."""
        if self._source is None or self._source.numel() < size:
            data = hashed_bytes(max(size, 2 * (0 if self._source is None else self._source.numel())))
            self._source = self.torch.from_numpy(data.copy()).cuda()
        return self._source

    def run(self, boxes: list[TiledBox], window: int, coord: int = 0) -> list[np.ndarray | str]:
        """Each box's shared-memory window after the copy from (coord, ..., coord), or the CUDA
        error that refused it. The oracle's windows are for coordinate 0."""
        if window % 16:
            raise ValueError(f"the window is whole 16-byte units (the kernel fills and dumps it so), not {window} bytes")
        torch = self.torch
        results: list[np.ndarray | str] = [""] * len(boxes)
        keep, maps, cases = [], [], []
        params = [tensor_map_params(box) for box in boxes]
        src = self.source(max(p.global_bytes for p in params))  # one buffer: every map reads its start
        for i, (box, p) in enumerate(zip(boxes, params)):
            try:
                maps.append(self.encode(p, src.data_ptr()))
            except RuntimeError as exc:
                results[i] = str(exc)
                continue
            keep.append(i)
            cases.append((p.rank, box.dst, box.size_bytes, coord))
        if keep:
            tmaps = torch.from_numpy(np.stack(maps)).cuda()
            table = torch.tensor(cases, dtype=torch.int32).cuda()
            out = torch.empty((len(keep), window), dtype=torch.uint8, device="cuda")
            self.launch(len(keep), window + 1024, tmaps, table, out, np.int32(window), np.uint8(FILL))
            dumped = self.host(out)
            for row, i in enumerate(keep):
                results[i] = dumped[row]
        return results
