"""Mosaic GPU's shared-memory transforms and transfer planning, judged by their definitions (pure Python/NumPy).

Each judgement cites the definition it implements:

- ``tile_nested_shape_strides``: its docstring ("a fused version of ``tile_shape`` and ``tile_strides`` for nested
  shapes", each logical dim made of physical sub-dims, major first): the tiled nested shape and strides must address
  every element where the untiled ones do, at the element's tiled index (``Tiling`` docstring: each trailing dim of
  size n unfolds into (n / t, t), the tile dims moved to the end).
- ``plan_tiled_transfer``: its docstring ("plans the tiled transfer in a way that avoids SMEM bank conflicts"), the
  ``TransferPlan`` classes (a trivial plan: every lane transfers the same tile at a step; a staggered plan: lanes
  with ``(lane // group_stride) % 2 == 1`` transfer the tile rotated by ``stagger`` along one dim), judged by brute
  force under the hardware's model: 32 banks of 4 bytes, a warp's access of 16 (8) bytes a lane served in quarter
  (half) warps (CUDA C++ Programming Guide, "Shared Memory", compute capability 5.x and later), the address swizzled
  as PTX ISA 5.5.7 / 9.7.15.5.1 define it (the 16-byte chunk bits [4, 4 + b) XOR the 128-byte row bits [7, 7 + b),
  b = log2(swizzle / 16)), the ref 1024-byte aligned.
- ``tiled_copy_smem_gmem_layout``: ``copy_tiled``'s docstring (the SMEM ref tiled into (8, swizzle_elems)) and the
  layout's own comment ("we never end up with bank conflicts"): every element in exactly one thread's register, the
  copy conflict-free under the model above.
- ``reduce_transpose_expression``: a transposed tiled memref is tiled by the answer iff its tiles are the source's
  tiles (the same partition of the elements); its comment's documented rejection (a swap between tiled and untiled
  dims).
- ``reduce_collapse_shape_expression``: the collapsed memref (``CollapseShape`` docstring: contiguous dims collapsed
  row-major) tiled by the answer must place every element at the source's tiled address; its documented rejections
  (the tiling does not apply; a group mixing tiled and untiled dims).
- ``IsValidMmaTiling``, ``MinorDimDivisibleBy``: their docstrings, verbatim.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from math import prod
from typing import Any

import numpy as np

from layoutfuzz.oracles.linear_layout import LayoutError
from layoutfuzz.oracles.mosaic_relations import tiled_dims

SMEM_BANKS = 32
BANK_BYTES = 4
WARP_SIZE = 32
WARPS = 4
SWIZZLES = (16, 32, 64, 128)


# ---- shared memory: swizzle and banks -------------------------------------------------------------------------------

def swizzle(byte_address: np.ndarray, swizzle_bytes: int) -> np.ndarray:
    """PTX ISA 5.5.7: the 16-byte chunk index (bits 4..) XOR the 128-byte row index (bits 7..), log2(swizzle/16)
    bits of each; 16 is no swizzle."""
    b = (swizzle_bytes // 16).bit_length() - 1
    a = np.asarray(byte_address, dtype=np.int64)
    return a ^ (((a >> 7) & ((1 << b) - 1)) << 4)


def lanes_per_phase(transfer_bytes: int) -> int:
    """A warp's access of 16 bytes a lane is served in quarter warps, of 8 in half warps, of 4 or fewer at once."""
    return WARP_SIZE // max(1, transfer_bytes // BANK_BYTES)


def conflicting_phases(starts: np.ndarray, transfer_bytes: int, swizzle_bytes: int) -> int:
    """How many phases of one warp's access conflict: ``starts`` [lanes] the byte address each lane's access begins at
    (unswizzled); a phase conflicts where two distinct 4-byte words in it fall in one bank (one word read by many
    lanes is a broadcast)."""
    starts = np.asarray(starts, dtype=np.int64)
    words = max(1, transfer_bytes // BANK_BYTES)
    per = lanes_per_phase(transfer_bytes)
    bad = 0
    for phase in range(0, len(starts), per):
        touched = set()
        for s in starts[phase:phase + per]:
            for k in range(words):
                touched.add(int(swizzle(s + k * BANK_BYTES, swizzle_bytes)) // BANK_BYTES)
        banks = [w % SMEM_BANKS for w in touched]
        bad += len(banks) != len(set(banks))
    return bad


# ---- nested shapes and strides --------------------------------------------------------------------------------------

def nested_address(nested_shape: Sequence[Sequence[int]], nested_strides: Sequence[Sequence[int]],
                   index: Sequence[int]) -> int:
    """The address of a logical index: each logical dim's index split over its sub-dims, major first (row-major)."""
    address = 0
    for i, shape, strides in zip(index, nested_shape, nested_strides):
        for size, stride in zip(reversed(shape), reversed(strides)):
            address += (i % size) * stride
            i //= size
    return address


def tiled_memref_nested(shape: Sequence[int], tiling: Sequence[int] | None) -> tuple[list[list[int]], list[list[int]]]:
    """The nested shape and strides of a contiguous SMEM ref of logical ``shape`` under a tile transform (the trailing
    dims split into (n / t, t), the tile dims at the end, row-major over the tiled shape); a dim tiled by 1 is one
    sub-dim, as Mosaic's transfer code builds them. No tiling: the ref row-major."""
    tiling = list(tiling or [])
    k = len(tiling)
    lead = list(shape[:len(shape) - k])
    tiled = lead + [n // t for n, t in zip(shape[len(shape) - k:], tiling)] + tiling
    strides = [prod(tiled[i + 1:]) for i in range(len(tiled))]
    nshape, nstrides = [], []
    for i, n in enumerate(shape):
        j = i - len(lead)
        if j >= 0 and tiling[j] != 1:
            nshape.append([n // tiling[j], tiling[j]])
            nstrides.append([strides[i], strides[len(shape) + j]])
        else:
            nshape.append([n])
            nstrides.append([strides[i]])
    return nshape, nstrides


def tiled_coordinates(shape: Sequence[int], tiles: Sequence[Sequence[int]]) -> tuple[list[Any], np.ndarray]:
    """The tiled dims of ``shape`` and, for every element (row-major), its tiled index [elements, tiled dims]."""
    dims = tiled_dims(shape, tiles)
    index = np.indices(tuple(shape)).reshape(len(shape), -1)
    out = np.stack([(index[d.dim] // d.step) % d.size for d in dims], axis=1)
    return dims, out


def judge_nested(shape: Sequence[int], nested_shape: Sequence[Sequence[int]], nested_strides: Sequence[Sequence[int]],
                 tiles: Sequence[Sequence[int]], answer: Mapping[str, Any] | None) -> str | None:
    """``tile_nested_shape_strides``: None where the answer (``{"shape", "strides"}``, or None for a refusal) is
    right; else what is wrong. A refusal is right where the tiling does not apply to the logical shape or where no
    nested shape and strides address the tiled array (its address is not a sum of per-dim nested-strided maps)."""
    try:
        dims, coords = tiled_coordinates(shape, tiles)
    except LayoutError:
        return None if answer is None else "answered for a tiling that does not apply to the shape"
    index = np.indices(tuple(shape)).reshape(len(shape), -1).T
    addresses = np.array([nested_address(nested_shape, nested_strides, i) for i in index], dtype=np.int64)
    if answer is None:
        if representable(dims, coords, addresses):
            return "refused a tiling whose tiled array has nested strides"
        return None
    out_shape, out_strides = answer["shape"], answer["strides"]
    if len(out_shape) != len(dims) or len(out_strides) != len(dims):
        return f"{len(out_shape)} tiled dims, the tiling gives {len(dims)}"
    for k, d in enumerate(dims):
        if prod(out_shape[k]) != d.size or len(out_shape[k]) != len(out_strides[k]):
            return f"tiled dim {k} has nested shape {out_shape[k]}, its size is {d.size}"
    got = np.array([nested_address(out_shape, out_strides, c) for c in coords], dtype=np.int64)
    wrong = np.flatnonzero(got != addresses)
    if len(wrong):
        i = int(wrong[0])
        return (f"element {tuple(int(x) for x in index[i])} (tiled {tuple(int(x) for x in coords[i])}) at address "
                f"{int(got[i])}, the untiled ref has it at {int(addresses[i])}")
    return None


def representable(dims: Sequence[Any], coords: np.ndarray, addresses: np.ndarray) -> bool:
    """Whether the tiled array's address is sum over tiled dims of a nested-strided map of that dim's index."""
    parts = []
    for k, d in enumerate(dims):
        f = np.zeros(d.size, dtype=np.int64)
        others_zero = np.all(np.delete(coords, k, axis=1) == 0, axis=1)
        f[coords[others_zero, k]] = addresses[others_zero]
        if not nested_strided(f):
            return False
        parts.append(f)
    total = sum(parts[k][coords[:, k]] for k in range(len(dims))) - (len(dims) - 1) * addresses[0] if dims else addresses
    return bool(np.array_equal(total, addresses))


def nested_strided(f: np.ndarray) -> bool:
    """Whether f(i), i < n, is sum of digit * stride over a mixed-radix split of i (greedy: the innermost sub-dim is
    the longest run f(i) = f(0) + i * (f(1) - f(0)); coalescible sub-dims merge, so the run is exact)."""
    f = np.asarray(f, dtype=np.int64) - int(f[0])
    n = len(f)
    while n > 1:
        step = int(f[1])
        run = 1
        while run < n and f[run] == run * step:
            run += 1
        if n % run or run == 1:
            return False
        blocks = f[:n].reshape(n // run, run)
        if not np.array_equal(blocks - blocks[:, :1], np.broadcast_to(np.arange(run) * step, blocks.shape)):
            return False
        f, n = blocks[:, 0], n // run
    return True


# ---- register layouts: who holds what -------------------------------------------------------------------------------

def holders(shape: Sequence[int], layout: Mapping[str, Any]) -> tuple[list[Any], dict[str, list[int]]]:
    """The tiled dims of ``shape`` under the layout's tiling, and which tiled dims are the warps', the lanes' (major to
    minor; ``None`` a replication, with its size) and the vector's (``Tiling`` / ``TiledLayout`` docstrings)."""
    dims = tiled_dims(shape, layout["tiles"])
    n = len(dims)

    def parts(data: Sequence[Any]) -> list[tuple[int | None, int]]:
        return [(None, d["replicated"]) if isinstance(d, Mapping) else (n + d, dims[n + d].size) for d in data]

    return dims, {"warp": parts(layout["warp_dims"]), "lane": parts(layout["lane_dims"]),
                  "vector": [(n + layout["vector_dim"], dims[n + layout["vector_dim"]].size)]}


def _digits(value: int, parts: Sequence[tuple[int | None, int]]) -> dict[int, int]:
    out = {}
    for dim, size in reversed(parts):
        if dim is not None:
            out[dim] = value % size
        value //= size
    return out


class Transfer:
    """A register array of ``shape`` in ``layout`` moved to or from a SMEM ref (nested shape and strides, in elements)
    of ``element_bits`` wide elements swizzled by ``swizzle``: the accesses a plan makes, by definition."""

    def __init__(self, shape: Sequence[int], layout: Mapping[str, Any], nested_shape: Any, nested_strides: Any,
                 element_bits: int, swizzle_bytes: int):
        self.shape, self.bits, self.swizzle = list(shape), element_bits, swizzle_bytes
        self.dims, self.parts = holders(shape, layout)
        self.nested_shape, self.nested_strides = nested_shape, nested_strides
        owned = {d for kind in self.parts.values() for d, _ in kind if d is not None}
        self.tile_dims = [k for k in range(len(self.dims)) if k not in owned]
        self.vector_dim, self.vector_length = self.parts["vector"][0]
        self.transfer_bits = self.vector_length * element_bits

    def address(self, tiled_index: Mapping[int, int]) -> int:
        """The element address (in elements) of a tiled index (missing dims 0)."""
        logical = [0] * len(self.shape)
        for k, v in tiled_index.items():
            d = self.dims[k]
            logical[d.dim] += v * d.step
        return nested_address(self.nested_shape, self.nested_strides, logical)

    def lane_elements(self, warp: int, lane: int, tile: Mapping[int, int]) -> list[int]:
        """The element addresses one lane's vector holds at one tile (register) index."""
        base = {**tile, **_digits(warp, self.parts["warp"]), **_digits(lane, self.parts["lane"])}
        return [self.address({**base, self.vector_dim: v}) for v in range(self.vector_length)]

    def contiguous(self) -> bool:
        """Whether every vector is at consecutive addresses (``transfer_tiled``: the vector dim has stride 1)."""
        tile = {k: 0 for k in self.tile_dims}
        e = self.lane_elements(0, 0, tile)
        step = [self.address({self.vector_dim: v}) - self.address({}) for v in range(self.vector_length)]
        return step == list(range(self.vector_length)) and len(e) == self.vector_length

    def accesses(self, tile_of_lane: Any) -> Any:
        """Per step (a tile index of the tile dims), per warp: each lane's vector's element addresses, where
        ``tile_of_lane(step, lane)`` is the tile the lane transfers at that step."""
        radices = [self.dims[k].size for k in self.tile_dims]
        for step in itertools.product(*(range(r) for r in radices)):
            for warp in range(WARPS):
                yield step, warp, [self.lane_elements(warp, lane, dict(zip(self.tile_dims, tile_of_lane(step, lane))))
                                   for lane in range(WARP_SIZE)]

    def judge(self, tile_of_lane: Any, limit: int | None = None) -> tuple[str | None, int]:
        """(what is wrong, conflicting phases): coverage (every lane transfers each of its tiles once), then bank
        conflicts of every step and warp; vectors not at consecutive addresses are one access per element."""
        radices = [self.dims[k].size for k in self.tile_dims]
        steps = list(itertools.product(*(range(r) for r in radices)))
        for lane in range(WARP_SIZE):
            seen = sorted(tuple(tile_of_lane(s, lane)) for s in steps)
            if seen != steps:
                return f"lane {lane} transfers tiles {seen[:4]}... not each of its {len(steps)} tiles once", 0
        bad = 0
        contiguous = self.contiguous()
        for _step, _warp, elements in self.accesses(tile_of_lane):
            if contiguous:
                if self.transfer_bits % 8:
                    return "a vector is not a whole number of bytes", 0
                nbytes = self.transfer_bits // 8
                if nbytes > 16:
                    return f"a vector of {nbytes} bytes: no access of one lane moves more than 16", 0
                starts = np.array([e[0] * self.bits // 8 for e in elements])
                if np.any(starts % nbytes) and nbytes in (2, 4, 8, 16):
                    return f"a vector of {nbytes} bytes at byte {int(starts[np.argmax(starts % nbytes != 0)])}", 0
                if self.swizzle > 16 and nbytes <= 16 and np.any(starts // 16 != (starts + nbytes - 1) // 16):
                    return "a vector crosses a 16-byte swizzle chunk", 0
                bad += conflicting_phases(starts, nbytes, self.swizzle)
            else:
                if self.bits % 8:
                    return None, -1  # sub-byte elements one by one: not an access the hardware makes
                for v in range(self.vector_length):
                    starts = np.array([e[v] * self.bits // 8 for e in elements])
                    bad += conflicting_phases(starts, self.bits // 8, self.swizzle)
            if limit is not None and bad > limit:
                break
        return None, bad


def trivial(step: Sequence[int], lane: int) -> Sequence[int]:
    return step


def staggered(radices: Sequence[int], nested_to_tile: Any, stagger: int, dim: int, size: int,
              group_stride: int) -> Any:
    """A staggered plan's tile for a lane: the second group (``(lane // group_stride) % 2``) rotates nested tile dim
    ``dim`` by ``stagger`` modulo ``size`` (``StaggeredTransferPlan.tile_index_transforms``). ``nested_to_tile`` maps
    a step (a tile index) to its nested digits and back."""
    to_nested, from_nested = nested_to_tile

    def tile(step: Sequence[int], lane: int) -> Sequence[int]:
        if (lane // group_stride) % 2 == 0:
            return step
        digits = list(to_nested(step))
        digits[dim] = (digits[dim] + stagger) % size
        return from_nested(digits)

    return tile


def nested_digits(tile_radices: Sequence[int], nested: Sequence[Sequence[int]]) -> Any:
    """Maps between a tile index (one coordinate per tile dim) and the flattened nested digits (each tile dim's index
    split over its nested sub-dims, major first)."""

    def to_nested(step: Sequence[int]) -> list[int]:
        out = []
        for v, subs in zip(step, nested):
            digits = []
            for s in reversed(subs):
                digits.append(v % s)
                v //= s
            out.extend(reversed(digits))
        return out

    def from_nested(digits: Sequence[int]) -> list[int]:
        out, i = [], 0
        for subs in nested:
            v = 0
            for s in subs:
                v = v * s + digits[i]
                i += 1
            out.append(v)
        return out

    return to_nested, from_nested


# ---- SMEM tilings under transpose and collapse ----------------------------------------------------------------------

def tile_ids(shape: Sequence[int], tiling: Sequence[int]) -> np.ndarray:
    """For every element of ``shape`` (row-major) the index of the tile holding it (its tiled index's leading part)."""
    k = len(tiling)
    index = np.indices(tuple(shape)).reshape(len(shape), -1)
    lead = [index[i] for i in range(len(shape) - k)]
    grid = [index[len(shape) - k + j] // t for j, t in enumerate(tiling)]
    return np.stack(lead + grid, axis=1) if lead or grid else np.zeros((index.shape[1], 0), dtype=np.int64)


def applies(shape: Sequence[int], tiling: Sequence[int]) -> bool:
    return len(tiling) <= len(shape) and all(n % t == 0 for n, t in zip(shape[len(shape) - len(tiling):], tiling))


def transpose_documented_reject(tiling: Sequence[int], permutation: Sequence[int]) -> bool:
    """``reduce_transpose_expression``'s documented rejection: a swap between tiled and untiled dims."""
    offset = len(permutation) - len(tiling)
    return bool(tiling) and any(d < offset for d in permutation[-len(tiling):])


def judge_transpose(shape: Sequence[int], tiling: Sequence[int] | None, permutation: Sequence[int],
                    answer: Any) -> str | None:
    """``answer``: ``{"tiling": list | None}`` or ``"unsatisfiable"``. The transposed ref (result dim i is source dim
    permutation[i]) is tiled by the answer iff the answer applies to its shape and its tiles are the source's."""
    if tiling is None:
        return None if answer == {"tiling": None} else f"no tiling transposes to {answer}"
    if answer == "unsatisfiable":
        if transpose_documented_reject(tiling, permutation):
            return None
        candidate = [tiling[d - (len(permutation) - len(tiling))] for d in permutation[-len(tiling):]] if tiling else []
        if judge_transpose(shape, tiling, permutation, {"tiling": candidate}) is None:
            return f"unsatisfiable, though tiling {candidate} keeps every tile"
        return None
    new = answer["tiling"]
    if new is None:
        return "the tiled ref transposed to an untiled one"
    if not applies(shape, tiling):
        return None  # outside the definition: the source is no tiled ref of this shape (the expression has none)
    out_shape = [shape[d] for d in permutation]
    if not applies(out_shape, new):
        return f"tiling {new} does not apply to the transposed shape {out_shape}"
    src = tile_ids(shape, tiling)
    index = np.indices(tuple(shape)).reshape(len(shape), -1)
    moved = np.ravel_multi_index(tuple(index[d] for d in permutation), tuple(out_shape))
    dst = tile_ids(out_shape, new)[moved]
    pairs = {}
    for a, b in zip(map(tuple, src), map(tuple, dst)):
        if pairs.setdefault(a, b) != b:
            return f"source tile {a} is split over tiles of {new} in the transposed ref"
    if len(set(pairs.values())) != len(pairs):
        return f"tiles of {new} in the transposed ref merge source tiles"
    return None


def tiled_offsets(shape: Sequence[int], tiling: Sequence[int]) -> np.ndarray:
    """Each element's (row-major) address in a contiguous tiled ref: the row-major offset of its tiled index."""
    k = len(tiling)
    index = np.indices(tuple(shape)).reshape(len(shape), -1)
    lead = list(shape[:len(shape) - k])
    tshape = lead + [n // t for n, t in zip(shape[len(shape) - k:], tiling)] + list(tiling)
    tindex = [index[i] for i in range(len(lead))]
    tindex += [index[len(lead) + j] // t for j, t in enumerate(tiling)]
    tindex += [index[len(lead) + j] % t for j, t in enumerate(tiling)]
    return np.ravel_multi_index(tuple(tindex), tuple(tshape)) if tshape else np.zeros(1, dtype=np.int64)


def collapse_documented_reject(shape: Sequence[int], tiling: Sequence[int], groups: Sequence[int]) -> bool:
    """``reduce_collapse_shape_expression``'s documented rejections: the tiling does not apply (a tile larger than
    its dim included), or a group of collapsed dims mixes tiled and untiled dims."""
    if not applies(shape, tiling):
        return True
    left = len(tiling)
    for g in reversed(groups):
        if left <= 0:
            break
        if g > left:
            return True
        left -= g
    return False


def collapsed_shape(shape: Sequence[int], groups: Sequence[int]) -> list[int]:
    out, i = [], 0
    for g in groups:
        out.append(prod(shape[i:i + g]))
        i += g
    return out


def judge_collapse(shape: Sequence[int], tiling: Sequence[int] | None, groups: Sequence[int], answer: Any) -> str | None:
    """``answer``: ``{"tiling": list | None}`` or ``"unsatisfiable"``. The collapsed ref tiled by the answer must put
    every element at the address the source's tiling gives it (contiguous refs)."""
    if tiling is None:
        return None if answer == {"tiling": None} else f"no tiling collapses to {answer}"
    if answer == "unsatisfiable":
        if collapse_documented_reject(shape, tiling, groups):
            return None
        candidate, left, i = [], list(tiling), len(groups) - 1
        while left:
            g = groups[i]
            candidate.insert(0, prod(left[-g:]))
            left, i = left[:-g], i - 1
        if judge_collapse(shape, tiling, groups, {"tiling": candidate}) is None:
            return f"unsatisfiable, though tiling {candidate} places every element"
        return None
    new = answer["tiling"]
    if new is None:
        return "a tiled ref collapsed to an untiled one"
    out = collapsed_shape(shape, groups)
    if not applies(out, new):
        return f"tiling {new} does not apply to the collapsed shape {out}"
    if not applies(shape, tiling):
        return None  # outside the definition: the source is no tiled ref of this shape
    src = tiled_offsets(shape, tiling)
    dst = tiled_offsets(out, new)  # the collapsed index of an element is its row-major index: the same order
    wrong = np.flatnonzero(src != dst)
    if len(wrong):
        i = int(wrong[0])
        return f"element {np.unravel_index(i, tuple(shape))} at {int(dst[i])} under {new}, the source has it at {int(src[i])}"
    return None


# ---- the SMEM tiling constraints -------------------------------------------------------------------------------------

def valid_mma_tiling(tiling: Sequence[int] | None, bitwidth: int, allow_unswizzled: bool) -> bool:
    """``IsValidMmaTiling``'s docstring: (8, s * 8 // bitwidth) for s in 32, 64, 128 (and 16 when unswizzled tilings
    are allowed)."""
    if tiling is None:
        return False
    swizzles = (16, 32, 64, 128) if allow_unswizzled else (32, 64, 128)
    return list(tiling) in [[8, s * 8 // bitwidth] for s in swizzles]


def minor_dim_divisible(tiling: Sequence[int] | None, divisor: int) -> bool:
    """``MinorDimDivisibleBy``'s docstring: the tiling's minor dim divisible by ``divisor``; true where untiled."""
    return not tiling or tiling[-1] % divisor == 0
