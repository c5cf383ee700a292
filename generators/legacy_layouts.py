"""Samplers of Triton's legacy layouts over their whole valid parameter space.

Every sampler returns an ``oracles.triton_layouts`` dataclass and a tensor shape it applies
to: 32 lanes and 1-32 warps (4-32, whole warpgroups, for wgmma), shapes from smaller than the layout's tile to
larger than it, 8- to 32-bit elements for shared layouts.
"""

from __future__ import annotations

from math import prod

from layoutfuzz.generators.layouts import split_bits
from layoutfuzz.generators.source import Source, permutation
from layoutfuzz.oracles import triton_layouts as tl

DISTRIBUTED_KINDS = ("blocked", "slice", "nvmma_v2", "nvmma_v3", "dot_operand")
SHARED_KINDS = ("swizzled_shared", "nvmma_shared")
KINDS = DISTRIBUTED_KINDS + SHARED_KINDS
MAX_RANK = 4  # ranks 1-4 (Triton takes any; rank 4 is where per-dim rules first repeat)
MAX_SLICE_DEPTH = 3  # a slice of a slice of a slice


def _pow2_split(source: Source, total_log2: int, rank: int) -> tuple[int, ...]:
    return tuple(1 << b for b in split_bits(source, total_log2, rank))


def shape(source: Source, rank: int, min_log2: int = 0, max_total_log2: int = 14, max_dim_log2: int | None = None) -> list[int]:
    """A power-of-two tensor shape of ``rank`` dims (each at most 2^9 unless ``max_dim_log2`` says; one dim: up to
    the whole budget)."""
    if max_dim_log2 is None:
        max_dim_log2 = max_total_log2 if rank == 1 else 9
    out = []
    budget = max_total_log2
    for _ in range(rank):
        b = source.integer(min_log2, max(min_log2, min(max_dim_log2, budget - min_log2 * (rank - len(out) - 1))))
        budget -= b
        out.append(1 << b)
    return out


def blocked(source: Source, rank: int | None = None, num_warps: int | None = None) -> tl.BlockedLayout:
    """sizePerThread (1-16 elements a thread), threadsPerWarp (32), warpsPerCTA (1-32 warps), order; rank 1-4."""
    rank = rank or source.integer(1, MAX_RANK)
    num_warps = num_warps or (1 << source.integer(0, 5))
    return tl.BlockedLayout(
        _pow2_split(source, source.integer(0, 4), rank),
        _pow2_split(source, 5, rank),
        _pow2_split(source, num_warps.bit_length() - 1, rank),
        tuple(permutation(source, rank)),
    )


def nvmma(source: Source, version: int | None = None, num_warps: int | None = None) -> tl.NVMMADistributedLayout:
    """mma v2 (instr 16x8; 1-32 warps) or wgmma v3 (instr 16xNx16, N a power of two up to 256; 4-32 warps, at least a
    warpgroup along M: any split of them)."""
    version = version or source.choice((2, 3))
    if version == 2:
        warps_log2 = source.integer(0, 5) if num_warps is None else num_warps.bit_length() - 1
        return tl.NVMMADistributedLayout((2, 0), _pow2_split(source, warps_log2, 2), (16, 8))
    warps = 4 << source.integer(0, 3) if num_warps is None else num_warps
    along_m = 4 << source.integer(0, (warps // 4).bit_length() - 1)
    warps_per_cta = (along_m, warps // along_m)
    n = 8 << source.integer(0, 5)
    return tl.NVMMADistributedLayout((3, 0), warps_per_cta, (16, n, 16))


def dot_operand(source: Source, num_warps: int | None = None) -> tl.DotOperandLayout:
    """A (op 0) or B (op 1, mma v2 only) with kWidth 1-8 (wgmma A: 32-bit registers of 8/16-bit)."""
    parent = nvmma(source, None if num_warps is None or num_warps >= 4 else 2, num_warps)
    if parent.is_hopper:
        return tl.DotOperandLayout(0, parent, source.choice((2, 4)))
    return tl.DotOperandLayout(source.integer(0, 1), parent, 1 << source.integer(0, 3))


def distributed(source: Source, kind: str | None = None) -> tuple[tl.Layout, list[int]]:
    """A distributed legacy layout of ``kind`` and a shape for it."""
    kind = kind or source.choice(DISTRIBUTED_KINDS)
    if kind == "blocked":
        layout = blocked(source)
        return layout, shape(source, layout.rank)
    if kind in ("nvmma_v2", "nvmma_v3"):
        return nvmma(source, int(kind[-1])), shape(source, 2, min_log2=0, max_total_log2=14)
    if kind == "dot_operand":
        return dot_operand(source), shape(source, 2, max_total_log2=14)
    if kind == "slice":
        layout = slice_of(source)
        return layout, shape(source, layout.rank)
    raise ValueError(f"unknown distributed layout kind {kind!r}")


def slice_of(source: Source, depth: int = 1) -> tl.SliceLayout:
    """A slice of a blocked (rank 2-4), mma or dot operand parent, or of a slice (a slice of a slice, down to
    ``MAX_SLICE_DEPTH`` slices, over a parent of enough dims)."""
    kinds = ("blocked", "nvmma_v2", "nvmma_v3", "dot_operand") + (("slice",) if depth < MAX_SLICE_DEPTH else ())
    parent_kind = source.choice(kinds)
    if parent_kind == "slice":
        parent = _slice_of_rank(source, depth + 1)
    elif parent_kind == "blocked":
        parent = blocked(source, rank=source.integer(2, MAX_RANK))
    else:
        parent = nvmma(source, int(parent_kind[-1])) if parent_kind != "dot_operand" else dot_operand(source)
    return tl.SliceLayout(source.integer(0, parent.rank - 1), parent)


def _slice_of_rank(source: Source, depth: int) -> tl.SliceLayout:
    """A slice of rank 2 or more: slices of a blocked parent of enough dims, ``MAX_SLICE_DEPTH - depth + 1`` deep
    at most."""
    slices = source.integer(1, MAX_SLICE_DEPTH - depth + 1)
    layout: tl.Layout = blocked(source, rank=source.integer(slices + 2, MAX_RANK))
    for _ in range(slices):
        layout = tl.SliceLayout(source.integer(0, layout.rank - 1), layout)
    return layout


def distributed_2d(source: Source, num_warps: int) -> tuple[str, tl.Layout]:
    """A rank-2 distributed layout over exactly ``num_warps`` warps (for one kernel)."""
    kinds = ("blocked", "nvmma_v2", "dot_operand") + (("nvmma_v3",) if num_warps >= 4 else ())
    kind = source.choice(kinds)
    if kind == "blocked":
        return kind, blocked(source, rank=2, num_warps=num_warps)
    if kind == "dot_operand":
        return kind, dot_operand(source, num_warps)
    return kind, nvmma(source, int(kind[-1]), num_warps)


def shared(source: Source, kind: str | None = None, elem_bits: int | None = None, rank: int | None = None,
           tensor_shape: list[int] | None = None) -> tuple[tl.Layout, list[int], int]:
    """A shared legacy layout, a shape it accepts and an element width."""
    kind = kind or source.choice(SHARED_KINDS)
    elem_bits = elem_bits or source.choice((8, 16, 32))
    if kind == "swizzled_shared":
        rank = rank or (len(tensor_shape) if tensor_shape else source.integer(1, MAX_RANK))
        layout = tl.SwizzledSharedLayout(  # vec, per_phase, max_phase: 1-16 each
            1 << source.integer(0, 4), 1 << source.integer(0, 4), 1 << source.integer(0, 4), tuple(permutation(source, rank))
        )
        return layout, tensor_shape or shape(source, rank), elem_bits
    if kind == "nvmma_shared":
        rank = rank or (len(tensor_shape) if tensor_shape else source.integer(2, 3))
        transposed = bool(source.integer(0, 1))
        contig = 0 if transposed else rank - 1
        if tensor_shape is None:
            swizzle = source.choice((0, 32, 64, 128))
            tensor_shape = shape(source, rank, min_log2=3, max_total_log2=15)
            tensor_shape[contig] = max(tensor_shape[contig], 8 * max(swizzle, 16) // elem_bits)
        else:  # the widest swizzles whose 8-row atom fits the given shape
            rows = prod(d for i, d in enumerate(tensor_shape) if i != contig)
            fits = [w for w in (0, 32, 64, 128) if w == 0 or (8 * w // elem_bits <= tensor_shape[contig] and rows >= 8)]
            swizzle = source.choice(fits)
        return tl.NVMMASharedLayout(swizzle, elem_bits, rank, transposed), tensor_shape, elem_bits
    raise ValueError(f"unknown shared layout kind {kind!r}")
