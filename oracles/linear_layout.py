"""Labelled F2 linear layouts: Section 4.2 of the Linear Layouts paper (Defs 4.1-4.5).

A layout maps named input dims (register, lane, warp, block, offset, ...) to named output
dims, every size a power of two. It is stored as Triton stores it: for each input dim, the
image of each of its bits (a "basis", one coordinate per output dim). Flattening puts the
first dim in the least significant bits, as Triton does, so bit ``k`` of the packed input is
column ``k`` of the paper's matrix and bit ``r`` of a packed output is its row ``r``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from layoutfuzz.oracles import f2

Basis = tuple[int, ...]
InDim = tuple[str, tuple[Basis, ...]]
OutDim = tuple[str, int]


class LayoutError(ValueError):
    """An operation's precondition does not hold (sizes, names, surjectivity, ...)."""


def log2_exact(size: int, what: str = "size") -> int:
    """log2 of a power of two, or LayoutError."""
    if not isinstance(size, (int, np.integer)) or size < 1 or size & (size - 1):
        raise LayoutError(f"{what} must be a power of two, got {size!r}")
    return int(size).bit_length() - 1


@dataclass(frozen=True)
class LinearLayout:
    """A linear map between labelled F2 vector spaces (Def 4.1).

    ``in_dims``: (name, bases) per input dim, ``bases[k]`` the image of input ``1 << k``.
    ``out_dims``: (name, size) per output dim.
    """

    in_dims: tuple[InDim, ...]
    out_dims: tuple[OutDim, ...]

    def __post_init__(self) -> None:
        names = [name for name, _ in self.in_dims]
        if len(set(names)) != len(names):
            raise LayoutError(f"repeated input dim in {names}")
        outs = [name for name, _ in self.out_dims]
        if len(set(outs)) != len(outs):
            raise LayoutError(f"repeated output dim in {outs}")
        for name, size in self.out_dims:
            log2_exact(size, f"size of output dim {name!r}")
        for name, bases in self.in_dims:
            for basis in bases:
                if len(basis) != len(self.out_dims):
                    raise LayoutError(
                        f"basis {list(basis)} of {name!r} has {len(basis)} coordinates "
                        f"for {len(self.out_dims)} output dims"
                    )
                for value, (out, size) in zip(basis, self.out_dims):
                    if not 0 <= value < size:
                        raise LayoutError(f"basis {list(basis)} of {name!r} leaves {out!r} (size {size})")

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def from_bases(
        cls,
        bases: Mapping[str, Sequence[Sequence[int]]] | Sequence[tuple[str, Sequence[Sequence[int]]]],
        out_dims: Mapping[str, int] | Sequence[tuple[str, int]] | Sequence[str],
    ) -> LinearLayout:
        """Builds a layout from Triton-style bases; ``out_dims`` names with sizes, or names only
        (each size then the smallest power of two that holds every basis, as Triton infers it)."""
        items = list(bases.items()) if isinstance(bases, Mapping) else list(bases)
        in_dims = tuple((str(name), tuple(tuple(int(v) for v in b) for b in bs)) for name, bs in items)
        if isinstance(out_dims, Mapping):
            outs = tuple((str(n), int(s)) for n, s in out_dims.items())
        elif all(isinstance(o, str) for o in out_dims):
            sizes = [1] * len(out_dims)
            for _, bs in in_dims:
                for b in bs:
                    for i, v in enumerate(b):
                        sizes[i] = max(sizes[i], 1 << int(v).bit_length())
            outs = tuple(zip(map(str, out_dims), sizes))
        else:
            outs = tuple((str(n), int(s)) for n, s in out_dims)
        return cls(in_dims, outs)

    @classmethod
    def from_columns(
        cls, in_dims: Sequence[tuple[str, int]], out_dims: Sequence[tuple[str, int]], columns: Sequence[int]
    ) -> LinearLayout:
        """Builds a layout from packed columns (one per input bit) over named dims with sizes."""
        out_bits = [log2_exact(s) for _, s in out_dims]
        result, k = [], 0
        for name, size in in_dims:
            bases = []
            for _ in range(log2_exact(size, f"size of input dim {name!r}")):
                bases.append(_unpack(columns[k], out_bits))
                k += 1
            result.append((name, tuple(bases)))
        if k != len(columns):
            raise LayoutError(f"{len(columns)} columns for {k} input bits")
        return cls(tuple(result), tuple((n, int(s)) for n, s in out_dims))

    @classmethod
    def identity(cls, dims: Sequence[tuple[str, int]]) -> LinearLayout:
        """The identity on named dims (each input dim maps to the output dim of the same name)."""
        bits = sum(log2_exact(size) for _, size in dims)
        return cls.from_columns(dims, dims, [1 << k for k in range(bits)])

    @classmethod
    def identity_1d(cls, size: int, in_dim: str, out_dim: str) -> LinearLayout:
        """x -> x from a dim of ``size`` to another."""
        return cls.strided_1d(size, 1, in_dim, out_dim)

    @classmethod
    def strided_1d(cls, size: int, stride: int, in_dim: str, out_dim: str) -> LinearLayout:
        """x -> x * stride (``stride`` a power of two), as Triton's strided1D."""
        bits = log2_exact(size)
        log2_exact(stride, "stride")
        return cls(((in_dim, tuple((stride << k,) for k in range(bits))),), ((out_dim, size * stride),))

    @classmethod
    def zeros_1d(cls, size: int, in_dim: str, out_dim: str, out_size: int = 1) -> LinearLayout:
        """Every input to zero: a pure broadcast."""
        return cls(((in_dim, ((0,),) * log2_exact(size)),), ((out_dim, out_size),))

    # ---- shape --------------------------------------------------------------------------

    @property
    def in_dim_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.in_dims)

    @property
    def out_dim_names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.out_dims)

    def in_dim_size(self, name: str) -> int:
        return 1 << len(self._bases(name))

    def out_dim_size(self, name: str) -> int:
        return dict(self.out_dims)[name]

    @property
    def in_sizes(self) -> tuple[tuple[str, int], ...]:
        return tuple((name, 1 << len(bases)) for name, bases in self.in_dims)

    @cached_property
    def out_bits(self) -> tuple[int, ...]:
        return tuple(size.bit_length() - 1 for _, size in self.out_dims)

    @property
    def total_in_bits(self) -> int:
        return sum(len(bases) for _, bases in self.in_dims)

    @property
    def total_out_bits(self) -> int:
        return sum(self.out_bits)

    def _bases(self, name: str) -> tuple[Basis, ...]:
        for dim, bases in self.in_dims:
            if dim == name:
                return bases
        raise LayoutError(f"no input dim {name!r} in {list(self.in_dim_names)}")

    # ---- the matrix ---------------------------------------------------------------------

    @cached_property
    def columns(self) -> tuple[int, ...]:
        """Packed images of the input bits: the columns of the paper's matrix."""
        return tuple(_pack(b, self.out_bits) for _, bases in self.in_dims for b in bases)

    def dim_columns(self, name: str) -> tuple[int, ...]:
        """Packed images of one input dim's bits (none if the layout lacks the dim)."""
        return tuple(_pack(b, self.out_bits) for b in dict(self.in_dims).get(name, ()))

    def matrix(self) -> np.ndarray:
        """The (out bits x in bits) 0/1 matrix, rows and columns in flattening order."""
        rows, cols = self.total_out_bits, self.total_in_bits
        m = np.zeros((rows, cols), dtype=np.uint8)
        for j, c in enumerate(self.columns):
            for r in range(rows):
                m[r, j] = (c >> r) & 1
        return m

    def _with_columns(self, columns: Sequence[int], in_dims=None, out_dims=None) -> LinearLayout:
        return LinearLayout.from_columns(in_dims or self.in_sizes, out_dims or self.out_dims, columns)

    # ---- evaluation ---------------------------------------------------------------------

    def apply(self, point: Mapping[str, int]) -> dict[str, int]:
        """Image of one input point (missing dims are 0)."""
        unknown = set(point) - set(self.in_dim_names)
        if unknown:
            raise LayoutError(f"unknown input dims {sorted(unknown)}")
        value = 0
        for name, bases in self.in_dims:
            x = int(point.get(name, 0))
            if not 0 <= x < 1 << len(bases):
                raise LayoutError(f"{name}={x} is outside its size {1 << len(bases)}")
            for k, b in enumerate(bases):
                if x >> k & 1:
                    value ^= _pack(b, self.out_bits)
        return dict(zip(self.out_dim_names, _unpack(value, self.out_bits)))

    def table(self) -> np.ndarray:
        """Packed outputs of every packed input, in order: the whole map, vectorised."""
        if self.total_out_bits > 64:
            raise LayoutError("more than 64 output bits cannot be tabulated")
        out = np.zeros(1 << self.total_in_bits, dtype=np.uint64)
        for k, column in enumerate(self.columns):
            half = 1 << k
            np.bitwise_xor(out[:half], np.uint64(column), out=out[half : 2 * half])
        return out

    def apply_all(self) -> dict[str, np.ndarray]:
        """For every packed input, the coordinate in each output dim."""
        table = self.table()
        result, shift = {}, 0
        for (name, _), bits in zip(self.out_dims, self.out_bits):
            result[name] = ((table >> np.uint64(shift)) & np.uint64((1 << bits) - 1)).astype(np.int64)
            shift += bits
        return result

    # ---- Defs 4.2-4.5 -------------------------------------------------------------------

    def compose(self, outer: LinearLayout) -> LinearLayout:
        """``outer ∘ self`` (Def 4.2): self's output dims must be outer's input dims, in order."""
        if self.out_dim_names != outer.in_dim_names:
            raise LayoutError(f"cannot compose: outputs {list(self.out_dim_names)} vs inputs {list(outer.in_dim_names)}")
        for (name, size), (_, osize) in zip(self.out_dims, outer.in_sizes):
            if size > osize:
                raise LayoutError(f"cannot compose: {name!r} has size {size} but outer takes {osize}")
        # Embed self's packed outputs into outer's packed inputs, then multiply.
        embed = _reembed(self.out_dims, outer.in_sizes)
        inner = [embed(c) for c in self.columns]
        return self._with_columns(f2.multiply(outer.columns, inner), out_dims=outer.out_dims)

    def __mul__(self, other: LinearLayout) -> LinearLayout:
        """Product (Def 4.3), label-wise as Triton's ``operator*``: dims in both multiply, self minor."""
        in_names = list(dict.fromkeys(self.in_dim_names + other.in_dim_names))
        out_names = list(dict.fromkeys(self.out_dim_names + other.out_dim_names))
        sizes = {n: dict(self.out_dims).get(n, 1) * dict(other.out_dims).get(n, 1) for n in out_names}
        shift = {n: dict(self.out_dims).get(n, 1).bit_length() - 1 for n in out_names}

        def lift(layout: LinearLayout, b: Basis, shifted: bool) -> Basis:
            coords = dict(zip(layout.out_dim_names, b))
            return tuple(coords.get(n, 0) << (shift[n] if shifted else 0) for n in out_names)

        in_dims = []
        for name in in_names:
            bases = [lift(self, b, False) for b in (self._bases(name) if name in self.in_dim_names else ())]
            bases += [lift(other, b, True) for b in (other._bases(name) if name in other.in_dim_names else ())]
            in_dims.append((name, tuple(bases)))
        return LinearLayout(tuple(in_dims), tuple((n, sizes[n]) for n in out_names))

    def divide_left(self, tile: LinearLayout) -> LinearLayout | None:
        """``self /_l tile`` (Def 4.4): M2 with self = tile × M2 block-diagonally, label-wise; else None."""
        if not set(tile.in_dim_names) <= set(self.in_dim_names) or not set(tile.out_dim_names) <= set(self.out_dim_names):
            return None
        tile_out = dict(tile.out_dims)
        out_dims = []
        for name, size in self.out_dims:
            t = tile_out.get(name, 1)
            if size % t:
                return None
            out_dims.append((name, size // t))
        in_dims = []
        for name, bases in self.in_dims:
            tile_bases = [dict(zip(tile.out_dim_names, b)) for b in (tile._bases(name) if name in tile.in_dim_names else ())]
            if len(tile_bases) > len(bases):
                return None
            for mine, theirs in zip(bases, tile_bases):
                if any(v != theirs.get(n, 0) for (n, _), v in zip(self.out_dims, mine)):
                    return None
            rest = []
            for b in bases[len(tile_bases) :]:
                if any(v % tile_out.get(n, 1) for (n, _), v in zip(self.out_dims, b)):
                    return None  # the off-diagonal block must be zero
                rest.append(tuple(v // tile_out.get(n, 1) for (n, _), v in zip(self.out_dims, b)))
            in_dims.append((name, tuple(rest)))
        return LinearLayout(tuple(in_dims), tuple(out_dims))

    @cached_property
    def _echelon(self) -> f2.EchelonBasis:
        return f2.EchelonBasis.of(self.columns)

    @property
    def rank(self) -> int:
        return self._echelon.rank

    def is_injective(self) -> bool:
        return self.rank == self.total_in_bits

    def is_surjective(self) -> bool:
        return self.rank == self.total_out_bits

    def is_invertible(self) -> bool:
        return self.is_injective() and self.is_surjective()

    def pseudoinverse(self) -> LinearLayout:
        """A generalised inverse G (self ∘ G ∘ self = self), from the outputs back to the inputs.

        Each output is written in the pivot columns (the first independent input bits); slack
        variables and the components outside the image are zero (Section 5.4: minimal Hamming
        weight, so broadcast copies all read from the first one).
        """
        echelon = self._echelon
        columns = [echelon.project(1 << r) for r in range(self.total_out_bits)]
        return LinearLayout.from_columns(self.out_dims, self.in_sizes, columns)

    def right_inverse(self) -> LinearLayout:
        """R with self ∘ R = id (Def 4.5), slack variables zero; self must be surjective."""
        if not self.is_surjective():
            raise LayoutError("only a surjective layout has a right inverse")
        return self.pseudoinverse()

    def invert(self) -> LinearLayout:
        """The inverse of an invertible layout."""
        if not self.is_invertible():
            raise LayoutError("layout is not invertible (it must be injective and surjective)")
        return self.pseudoinverse()

    def invert_and_compose(self, outer: LinearLayout) -> LinearLayout:
        """C with self = outer ∘ C, i.e. outer⁻¹ ∘ self (Section 5.4's B⁻¹ ∘ A), slack variables zero.

        outer must reach every output of self; self's output dims must be outer's (sizes may be smaller).
        """
        if set(self.out_dim_names) != set(outer.out_dim_names):
            raise LayoutError(f"output dims differ: {list(self.out_dim_names)} vs {list(outer.out_dim_names)}")
        embed = _reembed(self.out_dims, outer.out_dims)
        targets = [embed(c) for c in self.columns]
        solution = f2.solve(outer.columns, targets)
        if solution is None:
            raise LayoutError("the image of self is not contained in the image of outer")
        return self._with_columns(solution, out_dims=outer.in_sizes)

    # ---- broadcasting, dims -------------------------------------------------------------

    def free_variable_masks(self) -> dict[str, int]:
        """Per input dim, the bits whose basis is zero: broadcast copies (Section 5.1)."""
        return {name: sum(1 << k for k, b in enumerate(bases) if not any(b)) for name, bases in self.in_dims}

    def transpose_ins(self, order: Sequence[str]) -> LinearLayout:
        """The same map with input dims in another order."""
        if sorted(order) != sorted(self.in_dim_names):
            raise LayoutError(f"{list(order)} is not a permutation of {list(self.in_dim_names)}")
        return LinearLayout(tuple((n, self._bases(n)) for n in order), self.out_dims)

    def transpose_outs(self, order: Sequence[str]) -> LinearLayout:
        """The same map with output dims in another order."""
        if sorted(order) != sorted(self.out_dim_names):
            raise LayoutError(f"{list(order)} is not a permutation of {list(self.out_dim_names)}")
        index = [self.out_dim_names.index(n) for n in order]
        in_dims = tuple((n, tuple(tuple(b[i] for i in index) for b in bases)) for n, bases in self.in_dims)
        return LinearLayout(in_dims, tuple(self.out_dims[i] for i in index))

    def reshape_ins(self, new_dims: Sequence[tuple[str, int]]) -> LinearLayout:
        """Flattens the input dims (first dim minor) and splits them into ``new_dims``."""
        if _prod(s for _, s in new_dims) != 1 << self.total_in_bits:
            raise LayoutError(f"cannot reshape {list(self.in_sizes)} into {list(new_dims)}")
        return LinearLayout.from_columns(new_dims, self.out_dims, self.columns)

    def reshape_outs(self, new_dims: Sequence[tuple[str, int]]) -> LinearLayout:
        """Flattens the output dims (first dim minor) and splits them into ``new_dims``."""
        if _prod(s for _, s in new_dims) != 1 << self.total_out_bits:
            raise LayoutError(f"cannot reshape {list(self.out_dims)} into {list(new_dims)}")
        return LinearLayout.from_columns(self.in_sizes, new_dims, self.columns)

    def sublayout(self, in_names: Iterable[str], out_names: Iterable[str]) -> LinearLayout:
        """Restriction to some input dims and projection onto some output dims (orders kept)."""
        ins, outs = set(in_names), set(out_names)
        if not ins <= set(self.in_dim_names) or not outs <= set(self.out_dim_names):
            raise LayoutError("sublayout names dims the layout does not have")
        keep = [i for i, n in enumerate(self.out_dim_names) if n in outs]
        in_dims = tuple(
            (n, tuple(tuple(b[i] for i in keep) for b in bases)) for n, bases in self.in_dims if n in ins
        )
        return LinearLayout(in_dims, tuple(self.out_dims[i] for i in keep))

    # ---- plain data ---------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: {"bases": [[name, [[...], ...]], ...], "out_dims": [[name, size], ...]}."""
        return {
            "bases": [[n, [list(b) for b in bases]] for n, bases in self.in_dims],
            "out_dims": [[n, s] for n, s in self.out_dims],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LinearLayout:
        try:
            return cls.from_bases([(n, bs) for n, bs in data["bases"]], [(n, s) for n, s in data["out_dims"]])
        except (KeyError, TypeError, ValueError) as exc:
            if isinstance(exc, LayoutError):
                raise
            raise LayoutError(f"not a layout: {json.dumps(data)[:200]}") from exc

    def __str__(self) -> str:
        lines = [f"{n}={1 << k} -> {b}" for n, bases in self.in_dims for k, b in enumerate(bases)]
        outs = ", ".join(f"{n}:{s}" for n, s in self.out_dims)
        return "LinearLayout(" + "; ".join(lines) + f" | out {outs})"


def _pack(basis: Sequence[int], out_bits: Sequence[int]) -> int:
    value, shift = 0, 0
    for v, bits in zip(basis, out_bits):
        value |= int(v) << shift
        shift += bits
    return value


def _unpack(value: int, out_bits: Sequence[int]) -> Basis:
    coords = []
    for bits in out_bits:
        coords.append(value & ((1 << bits) - 1))
        value >>= bits
    return tuple(coords)


def _reembed(src: Sequence[OutDim], dst: Sequence[OutDim]):
    """Moves packed coordinates between packings of the same named dims in another order."""
    src_bits = [s.bit_length() - 1 for _, s in src]
    dst_bits = [s.bit_length() - 1 for _, s in dst]
    where = [[n for n, _ in src].index(n) for n, _ in dst]

    def embed(value: int) -> int:
        coords = _unpack(value, src_bits)
        return _pack([coords[i] for i in where], dst_bits)

    return embed


def _prod(values: Iterable[int]) -> int:
    result = 1
    for v in values:
        result *= v
    return result
