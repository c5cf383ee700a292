"""The rules every generated case obeys, as checks: a case a user hands in, or a reducer makes, is a
valid input only if these pass. Each check states the domain of one sampler in ``generators/``
(and the preconditions the systems under test assert on), and raises ``ValueError`` saying what
is wrong."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import prod
from typing import Any

from layoutfuzz.generators.layouts import DISTRIBUTED_DIMS
from layoutfuzz.oracles import triton_layouts as tl
from layoutfuzz.oracles.linear_layout import LinearLayout


def power_of_two(value: Any, what: str, low: int = 1, high: int | None = None) -> int:
    """``value`` if it is an int power of two in [low, high]."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1 or value & (value - 1):
        raise ValueError(f"{what} must be a power of two, got {value!r}")
    if value < low or (high is not None and value > high):
        raise ValueError(f"{what} must lie in [{low}, {high}], got {value}")
    return value


def check_shape(shape: Any, rank: int | None = None, what: str = "shape") -> list[int]:
    """A list of power-of-two dims (of ``rank`` dims where given)."""
    if not isinstance(shape, list) or not shape or (rank is not None and len(shape) != rank):
        raise ValueError(f"{what} must be a list of {rank or 'one or more'} dims, got {shape!r}")
    for d in shape:
        power_of_two(d, f"{what} dim")
    return shape


def _bit_count(column: int) -> int:
    return bin(column).count("1")


def check_layout_kind(layout: LinearLayout, kind: str, max_out_bits: int | None = None, named_inputs: bool = True) -> None:
    """``layout`` is of the kind ``generators.layouts.sample_layout`` draws (Defs 4.10, 4.14, ...);
    ``named_inputs=False`` for a distributed map over other input names (the outer side of a composition)."""
    if max_out_bits is not None and layout.total_out_bits > max_out_bits:
        raise ValueError(f"{layout.total_out_bits} output bits, more than {max_out_bits}")
    columns = layout.columns
    if kind == "arbitrary":
        return
    if kind == "distributed":  # Def 4.10
        if named_inputs and set(layout.in_dim_names) - {*DISTRIBUTED_DIMS, "block"}:
            raise ValueError(f"a distributed layout's inputs are among {(*DISTRIBUTED_DIMS, 'block')}, got {layout.in_dim_names}")
        nonzero = [c for c in columns if c]
        if any(_bit_count(c) > 1 for c in columns) or len(set(nonzero)) != len(nonzero) or not layout.is_surjective():
            raise ValueError("not a distributed layout (Def 4.10): one bit per column, no repeated column, surjective")
    elif kind == "memory":  # Def 4.14
        if len(layout.in_dims) != 1 or not layout.is_invertible() or any(not 1 <= _bit_count(c) <= 2 for c in columns):
            raise ValueError("not a memory layout (Def 4.14): one input dim, invertible, one or two bits per column")
    elif kind == "invertible":
        if not layout.is_invertible():
            raise ValueError("not invertible")
    elif kind == "injective":
        if not layout.is_injective():
            raise ValueError("not injective")
    else:
        raise ValueError(f"unknown layout kind {kind!r}")


# ---- Triton's legacy layouts (generators/legacy_layouts.py) -----------------------------------


def _permutation(order: Sequence[int], rank: int, what: str) -> None:
    if sorted(order) != list(range(rank)):
        raise ValueError(f"{what} {list(order)} is not a permutation of 0..{rank - 1}")


def check_legacy(layout: tl.Layout, shape: Sequence[int] | None = None, elem_bits: int | None = None) -> None:
    """A legacy layout inside the sampler's domain: 32 lanes, 1-32 warps (4-32 for wgmma), power-of-two
    sizes, mma instruction shapes PTX has, NVMMA swizzles whose atom fits the shape."""
    if isinstance(layout, tl.BlockedLayout):
        rank = len(layout.order)
        if not (len(layout.size_per_thread) == len(layout.threads_per_warp) == len(layout.warps_per_cta) == rank):
            raise ValueError("blocked layout: sizePerThread, threadsPerWarp, warpsPerCTA and order differ in rank")
        for name, sizes in (("sizePerThread", layout.size_per_thread), ("threadsPerWarp", layout.threads_per_warp),
                            ("warpsPerCTA", layout.warps_per_cta)):
            for s in sizes:
                power_of_two(s, name)
        _permutation(layout.order, rank, "order")
        if prod(layout.threads_per_warp) != 32:
            raise ValueError("threadsPerWarp must multiply to 32")
        power_of_two(prod(layout.warps_per_cta), "warps", 1, 32)
        power_of_two(prod(layout.size_per_thread), "elements per thread", 1, 16)
    elif isinstance(layout, tl.NVMMADistributedLayout):
        warps = power_of_two(prod(power_of_two(w, "warpsPerCTA") for w in layout.warps_per_cta), "warps", 1, 32)
        if tuple(layout.version) == (2, 0):
            if tuple(layout.instr_shape) != (16, 8):
                raise ValueError("mma v2 has instrShape [16, 8]")
        elif tuple(layout.version) == (3, 0):
            if len(layout.instr_shape) != 3 or layout.instr_shape[0] != 16 or layout.instr_shape[2] != 16:
                raise ValueError("wgmma (v3) instrShape is [16, N, 16]")
            power_of_two(layout.instr_shape[1], "wgmma N", 8, 256)
            if warps < 4 or layout.warps_per_cta[0] < 4:
                raise ValueError("wgmma needs whole warpgroups (4-32 warps), at least 4 warps along M")
        else:
            raise ValueError(f"unknown mma version {layout.version}")
    elif isinstance(layout, tl.DotOperandLayout):
        check_legacy(layout.parent)
        if not isinstance(layout.parent, tl.NVMMADistributedLayout):
            raise ValueError("a dot operand's parent is an mma layout")
        if layout.parent.is_hopper:
            if layout.operand_index != 0 or layout.k_width not in (2, 4):
                raise ValueError("a wgmma dot operand is A (opIdx 0) with kWidth 2 or 4")
        elif layout.operand_index not in (0, 1):
            raise ValueError("opIdx must be 0 or 1")
        else:
            power_of_two(layout.k_width, "kWidth", 1, 8)
    elif isinstance(layout, tl.SliceLayout):
        check_legacy(layout.parent)
        if not 0 <= layout.dim < layout.parent.rank or layout.parent.rank < 2:
            raise ValueError(f"slice dim {layout.dim} outside the parent's rank {layout.parent.rank}")
    elif isinstance(layout, tl.SwizzledSharedLayout):
        for name in ("vec", "per_phase", "max_phase"):
            power_of_two(getattr(layout, name), name, 1, 16)
        _permutation(layout.order, len(layout.order), "order")
    elif isinstance(layout, tl.NVMMASharedLayout):
        if layout.swizzle_byte_width not in (0, 32, 64, 128) or layout.element_bitwidth not in (8, 16, 32):
            raise ValueError("NVMMA shared: swizzle 0/32/64/128 bytes, 8/16/32-bit elements")
        if elem_bits is not None and layout.element_bitwidth != elem_bits:
            raise ValueError("the NVMMA shared layout's element width is not the case's")
        if shape is not None:
            if layout.rank != len(shape) or layout.rank not in (2, 3):
                raise ValueError("NVMMA shared layouts are rank 2 or 3, the shape's rank")
            contig = 0 if layout.transposed else layout.rank - 1
            rows = prod(d for i, d in enumerate(shape) if i != contig)
            width = layout.swizzle_byte_width
            if width and (8 * width // layout.element_bitwidth > shape[contig] or rows < 8):
                raise ValueError("the NVMMA swizzle atom (8 rows of the swizzle span) does not fit the shape")
    else:
        raise ValueError(f"unknown legacy layout {layout!r}")
    if shape is not None:
        check_shape(list(shape), layout.rank)


def check_nvmma_tensor(layout: tl.Layout, shape: Sequence[int]) -> None:
    """The sampler's rule for a tensor in an NVMMA shared layout: at least 8 elements in each dim and a
    contiguous dim as wide as the swizzle atom (``legacy_layouts.shared``)."""
    if not isinstance(layout, tl.NVMMASharedLayout):
        return
    contig = 0 if layout.transposed else layout.rank - 1
    if shape[contig] < 8 * max(layout.swizzle_byte_width, 16) // layout.element_bitwidth or min(shape) < 8:
        raise ValueError("the NVMMA shared tensor is under 8 elements in a dim, or narrower than its swizzle atom")


def legacy_kind(layout: tl.Layout) -> str:
    """The kind name ``generators.legacy_layouts`` gives a layout (``nvmma_v3`` for a wgmma accumulator)."""
    if isinstance(layout, tl.NVMMADistributedLayout):
        return f"nvmma_v{layout.version[0]}"
    return tl.to_dict(layout)["kind"]


def legacy_from_params(data: Any, what: str = "layout") -> tl.Layout:
    """The legacy layout a case's dict describes (ValueError for a malformed one)."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{what} must be a legacy layout dict")
    try:
        return tl.from_dict(dict(data))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{what} is not a legacy layout: {exc}") from None
