"""Triton's legacy layouts as linear layouts (Props 4.6/9.1, 4.7/9.2, 4.8, Def 4.11).

Each legacy layout is a frozen dataclass named and parametrised as in Gluon; ``linear_layout``
builds its F2 layout for a tensor shape. The paper fixes the structure (identity tiles
multiplied together, Def 4.3) and leaves some orders to the implementation ("the order may be
chosen by the implementation", Prop 9.2); where it does, the order follows Triton's
conventions, said at each choice: the register tile of an mma is kWidth registers along the
inner dim, 4 lanes inner, 8 lanes outer, repeats outer then inner; Ampere warps are row-major
and Hopper warps column-major; tiles smaller than the tensor repeat over registers (fastest dim
first); tiles larger than the tensor broadcast lanes and warps and drop registers (Section 5.1).
Only single-CTA layouts (one block) are modelled.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import prod

from layoutfuzz.oracles.linear_layout import LayoutError, LinearLayout, log2_exact

REGISTER, LANE, WARP, BLOCK, OFFSET = "register", "lane", "warp", "block", "offset"


def dim_names(rank: int) -> list[str]:
    return [f"dim{i}" for i in range(rank)]


def identity_standard_nd(in_dim: str, shape: Sequence[int], order: Sequence[int]) -> LinearLayout:
    """Product of 1-D identities over ``order`` (fastest first): Prop 9.1's id_R^o."""
    names = dim_names(len(shape))
    layout = _empty(in_dim)
    for d in order:
        layout = layout * LinearLayout.identity_1d(shape[d], in_dim, names[d])
    return layout


def _empty(in_dim: str) -> LinearLayout:
    return LinearLayout(((in_dim, ()),), ())


def ensure_not_smaller(layout: LinearLayout, shape: dict[str, int]) -> LinearLayout:
    """Repeat the tile over the first input dim (registers/offsets) until it covers ``shape``,
    output dims in the layout's order (Section 5.1: a tile smaller than the tensor is replicated)."""
    first = layout.in_dim_names[0]
    for name, size in layout.out_dims:
        want = shape[name]
        if size < want:
            layout = layout * LinearLayout.identity_1d(want // size, first, name)
    return layout


def ensure_not_larger(layout: LinearLayout, shape: dict[str, int]) -> LinearLayout:
    """Fold a tile larger than the tensor onto it: from the largest basis down, zero bases until
    the dim fits, so that the zeroed registers, lanes and warps hold copies (Section 5.1)."""
    bases = {n: [list(b) for b in bs] for n, bs in layout.in_dims}
    out_sizes = []
    for i, (name, size) in enumerate(layout.out_dims):
        want, actual = shape[name], size
        found = [(bs[k][i], n, k) for n, bs in bases.items() for k in range(len(bs)) if bs[k][i]]
        found.sort(key=lambda t: -t[0])  # stable: ties keep input-dim order
        for _, n, k in found:
            if actual <= want:
                break
            bases[n][k][i] = 0
            actual >>= 1
        out_sizes.append((name, min(size, want)))
    return LinearLayout.from_bases(list(bases.items()), out_sizes)


def fit_to_shape(cta: LinearLayout, shape: Sequence[int]) -> LinearLayout:
    """A CTA tile fitted to a tensor shape, one block, output dims in standard order."""
    names = dim_names(len(shape))
    want = dict(zip(names, shape))
    for s in shape:
        log2_exact(s, "tensor dim")
    layout = ensure_not_larger(ensure_not_smaller(cta, want), want)
    layout = layout.transpose_outs(names)
    return LinearLayout(layout.in_dims + ((BLOCK, ()),), layout.out_dims)


@dataclass(frozen=True)
class BlockedLayout:
    """Blocked layout (Prop 9.1): sizePerThread x threadsPerWarp x warpsPerCTA along ``order``."""

    size_per_thread: tuple[int, ...]
    threads_per_warp: tuple[int, ...]
    warps_per_cta: tuple[int, ...]
    order: tuple[int, ...]

    def linear_layout(self, shape: Sequence[int]) -> LinearLayout:
        _check_rank(self, len(shape), self.size_per_thread, self.threads_per_warp, self.warps_per_cta, self.order)
        cta = (
            identity_standard_nd(REGISTER, self.size_per_thread, self.order)
            * identity_standard_nd(LANE, self.threads_per_warp, self.order)
            * identity_standard_nd(WARP, self.warps_per_cta, self.order)
        )
        return fit_to_shape(cta, shape)

    @property
    def rank(self) -> int:
        return len(self.order)


@dataclass(frozen=True)
class NVMMADistributedLayout:
    """NVIDIA mma accumulator: version (2, 0) = mma.sync (Ampere), (3, 0) = wgmma (Hopper)."""

    version: tuple[int, int]
    warps_per_cta: tuple[int, ...]
    instr_shape: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.warps_per_cta)

    @property
    def is_hopper(self) -> bool:
        return self.version[0] == 3

    def tile_shape(self) -> list[int]:
        """(16, 8) for mma v2, (16, N) for wgmma m64nNk*: one warp's accumulator tile."""
        return [16, self.instr_shape[1]] if self.is_hopper else [16, 8]

    def warp_order(self) -> list[int]:
        """Ampere warps row-major, Hopper column-major (warp-groups stack along M)."""
        return matrix_order(self.rank, row_major=not self.is_hopper)

    def linear_layout(self, shape: Sequence[int]) -> LinearLayout:
        _check_rank(self, len(shape), self.warps_per_cta)
        if self.rank != 2:
            raise LayoutError("only rank-2 mma layouts are modelled")
        order = matrix_order(self.rank, row_major=True)
        cta = mma_tile(self.tile_shape(), 2, order, order)
        cta = cta * identity_standard_nd(WARP, self.warps_per_cta, self.warp_order())
        return fit_to_shape(cta, shape)


@dataclass(frozen=True)
class DotOperandLayout:
    """An mma operand in registers (Prop 9.2): A (op 0) or B (op 1), kWidth elements per register run."""

    operand_index: int
    parent: NVMMADistributedLayout
    k_width: int

    @property
    def rank(self) -> int:
        return self.parent.rank

    def linear_layout(self, shape: Sequence[int]) -> LinearLayout:
        rank = self.rank
        _check_rank(self, len(shape), self.parent.warps_per_cta)
        if rank != 2:
            raise LayoutError("only rank-2 dot operands are modelled")
        is_a = self.operand_index == 0
        if not is_a and self.parent.is_hopper:
            raise LayoutError("wgmma takes operand B from shared memory only")
        tile = [16, self.k_width * 8] if is_a else [self.k_width * 8, 8]
        order = [1, 0] if is_a else [0, 1]  # K fastest
        cta = mma_tile(tile, self.k_width, order, order)
        k_dim = rank - 1 if is_a else rank - 2
        names = dim_names(rank)
        warps = _empty(WARP)
        for d in self.parent.warp_order():  # warps along K hold copies: a zero column (Prop 9.2)
            one = LinearLayout.zeros_1d if d == k_dim else LinearLayout.identity_1d
            warps = warps * one(self.parent.warps_per_cta[d], WARP, names[d])
        return fit_to_shape(cta * warps, shape)


def mma_tile(tile: Sequence[int], k_width: int, order: Sequence[int], rep_order: Sequence[int]) -> LinearLayout:
    """One warp's mma register tile (Prop 9.2): kWidth registers and 4 lanes along the inner
    dim, 8 lanes along the outer dim, then register repeats outer then inner."""
    names = dim_names(len(tile))
    inner, outer = order[0], order[1]
    m, n = tile[outer], tile[inner]
    if m % 8 or n % (4 * k_width):
        raise LayoutError(f"mma tile {list(tile)} does not hold 8 x {4 * k_width}")
    start = _empty(REGISTER)
    for d in rep_order:  # fixes the output-dim order, hence the order repeats are added in
        start = start * LinearLayout.identity_1d(1, REGISTER, names[d])
    return (
        start
        * LinearLayout.identity_1d(k_width, REGISTER, names[inner])
        * LinearLayout.identity_1d(4, LANE, names[inner])
        * LinearLayout.identity_1d(8, LANE, names[outer])
        * LinearLayout.identity_1d(m // 8, REGISTER, names[outer])
        * LinearLayout.identity_1d(n // (4 * k_width), REGISTER, names[inner])
    )


def matrix_order(rank: int, row_major: bool) -> list[int]:
    """Fastest-first dim order of a (batched) matrix: [r-1, r-2, ...] or [r-2, r-1, ...]."""
    order = list(range(rank - 1, -1, -1))
    if not row_major:
        order[0], order[1] = order[1], order[0]
    return order


@dataclass(frozen=True)
class SliceLayout:
    """The parent layout with dim ``dim`` reduced away (Prop 4.8): that output row is removed,
    and registers left pointing nowhere are dropped."""

    dim: int
    parent: ParentLayout

    @property
    def rank(self) -> int:
        return self.parent.rank - 1

    def linear_layout(self, shape: Sequence[int]) -> LinearLayout:
        if len(shape) != self.rank:
            raise LayoutError(f"slice of a rank-{self.parent.rank} layout takes {self.rank} dims, got {list(shape)}")
        parent_shape = list(shape)
        parent_shape.insert(self.dim, 1)
        parent = self.parent.linear_layout(parent_shape)
        keep = [i for i in range(self.parent.rank) if i != self.dim]
        in_dims = []
        for name, bases in parent.in_dims:
            projected = [tuple(b[i] for i in keep) for b in bases]
            if name == REGISTER:
                projected = [b for b in projected if any(b)]
            in_dims.append((name, tuple(projected)))
        return LinearLayout(tuple(in_dims), tuple(zip(dim_names(self.rank), shape)))


ParentLayout = BlockedLayout | NVMMADistributedLayout | DotOperandLayout | SliceLayout


@dataclass(frozen=True)
class SwizzledSharedLayout:
    """mma swizzling (Def 4.11): offset -> element with column ``j`` XOR vec * ((i / perPhase) % maxPhase)."""

    vec: int
    per_phase: int
    max_phase: int
    order: tuple[int, ...]

    @property
    def rank(self) -> int:
        return len(self.order)

    def linear_layout(self, shape: Sequence[int]) -> LinearLayout:
        _check_rank(self, len(shape), self.order)
        names = dim_names(len(shape))
        if len(shape) == 1:
            return fit_to_shape(LinearLayout.identity_1d(shape[0], OFFSET, names[0]), shape)
        col, row = self.order[0], self.order[1]
        cols, rows = shape[col], shape[row]
        bases = [(0, 1 << k) for k in range(cols.bit_length() - 1)]
        for k in range(rows.bit_length() - 1):
            i = 1 << k
            bases.append((i, (self.vec * ((i // self.per_phase) % self.max_phase)) % cols))  # row c_i of Prop 4.12
        cta = LinearLayout.from_bases({OFFSET: bases}, [(names[row], rows), (names[col], cols)])
        for d in self.order[2:]:
            cta = cta * LinearLayout.identity_1d(shape[d], OFFSET, names[d])
        return fit_to_shape(cta, shape)


@dataclass(frozen=True)
class NVMMASharedLayout:
    """The shared layout wgmma and TMA read: 8-row swizzle atoms of ``swizzle_byte_width`` bytes
    (Swizzle<B,4,3> on bytes, as seed 003's canonical layouts), stacked along the rows first."""

    swizzle_byte_width: int
    element_bitwidth: int
    rank: int = 2
    transposed: bool = False

    @property
    def vec(self) -> int:
        return 128 // self.element_bitwidth  # one 16-byte unit

    @property
    def per_phase(self) -> int:
        return 128 // self.swizzle_byte_width if self.swizzle_byte_width else 1

    @property
    def max_phase(self) -> int:
        return self.swizzle_byte_width // 16 if self.swizzle_byte_width else 1

    def linear_layout(self, shape: Sequence[int]) -> LinearLayout:
        if len(shape) != self.rank or self.rank < 2:
            raise LayoutError(f"NVMMA shared layout of rank {self.rank} for shape {list(shape)}")
        if self.swizzle_byte_width not in (0, 32, 64, 128) or self.element_bitwidth not in (8, 16, 32):
            raise LayoutError(f"NVMMA shared layout of {self.swizzle_byte_width} bytes, {self.element_bitwidth}-bit elements")
        names = dim_names(self.rank)
        contig = 0 if self.transposed else self.rank - 1
        if self.swizzle_byte_width == 0:  # row-major identity, last dim fastest
            cta = identity_standard_nd(OFFSET, [min(s, 256) for s in shape], list(range(self.rank - 1, -1, -1)))
            return fit_to_shape(cta.transpose_outs(names), shape)
        # Triton's nvmmaSharedToLinearLayout (LinearLayoutConversions.cpp): an 8-row swizzle atom over the
        # TMA block collapsed to 2-D [outer dims, last dim] (transposed: [last dim, outer dims]), repeated to
        # fill it, reshaped row-major to the block with the first dim rotated last when transposed, then
        # the dims permuted back; the block is the shape with each dim at most 256 and the contiguous one
        # at most the atom's width (getTMABlockShape).
        tile_cols = 8 * self.swizzle_byte_width // self.element_bitwidth
        block = [min(s, 256) for s in shape]
        block[contig] = min(block[contig], tile_cols)
        outer = prod(block[:-1])
        rows, cols = (block[-1], outer) if self.transposed else (outer, block[-1])
        if cols < tile_cols or rows < 8:
            raise LayoutError(f"shape {list(shape)} is smaller than the {8} x {tile_cols} swizzle atom")
        bases = [(0, 1 << k) for k in range(tile_cols.bit_length() - 1)]
        for k in range(3):
            i = 1 << k
            bases.append((i, self.vec * ((i // self.per_phase) % self.max_phase)))
        tile = LinearLayout.from_bases({OFFSET: bases}, [("row", 8), ("col", tile_cols)])
        tile = ensure_not_smaller(tile, {"row": rows, "col": cols})
        rotated = block[1:] + block[:1] if self.transposed else block
        split = [(names[d], rotated[d]) for d in range(self.rank)]
        layout = tile.transpose_outs(["col", "row"]).reshape_outs(split[::-1]).transpose_outs(names)  # row-major
        if self.transposed:  # transposeLinearLayout with order [rank - 1, 0, ..., rank - 2]
            order = [self.rank - 1, *range(self.rank - 1)]
            in_dims = tuple((n, tuple(tuple(b[i] for i in order) for b in bs)) for n, bs in layout.in_dims)
            layout = LinearLayout(in_dims, tuple((names[d], shape_d) for d, shape_d in enumerate(block)))
        return fit_to_shape(layout, shape)  # repeats dim0 first


def _check_rank(layout: object, rank: int, *params: Sequence[int]) -> None:
    for p in params:
        if len(p) != rank:
            raise LayoutError(f"{type(layout).__name__} parameters {list(p)} do not match a rank-{rank} shape")


Layout = BlockedLayout | NVMMADistributedLayout | DotOperandLayout | SliceLayout | SwizzledSharedLayout | NVMMASharedLayout

_KINDS = {
    "blocked": BlockedLayout,
    "nvmma": NVMMADistributedLayout,
    "dot_operand": DotOperandLayout,
    "slice": SliceLayout,
    "swizzled_shared": SwizzledSharedLayout,
    "nvmma_shared": NVMMASharedLayout,
}


def to_dict(layout: Layout) -> dict:
    """Plain-data form: {"kind": ..., fields...}, parents nested."""
    out: dict = {"kind": next(k for k, cls in _KINDS.items() if isinstance(layout, cls))}
    for f in layout.__dataclass_fields__:
        value = getattr(layout, f)
        out[f] = to_dict(value) if f == "parent" else (list(value) if isinstance(value, tuple) else value)
    return out


def from_dict(data: dict) -> Layout:
    """Inverse of ``to_dict``."""
    data = dict(data)
    try:
        cls = _KINDS[data.pop("kind")]
    except KeyError as exc:
        raise LayoutError(f"unknown legacy layout kind in {data}") from exc
    if "parent" in data:
        data["parent"] = from_dict(data["parent"])
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in data.items()})

