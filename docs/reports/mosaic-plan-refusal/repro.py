"""Mosaic GPU's plan_tiled_transfer ('plans the tiled transfer in a way that avoids SMEM bank conflicts'): a (1, 8,
192) array of 8-bit elements in registers (the layout below) moved to or from a SMEM ref tiled (8, 32), row-major
over its tiles, swizzled 32 bytes. Each access the plan makes (its TransferPlan class: a trivial plan moves the same
tile in every lane at a step, a staggered one rotates one tile dim in every other group of lanes) is counted below
under the hardware's model: 32 banks of 4 bytes, 16 (8) bytes a lane served a quarter (half) warp at a time, PTX's
swizzle. A refusal is checked against a search of the plans of those two kinds.

Found by layoutfuzz (case mosaic.transfers/31/0). Needs only JAX and NumPy; runs on a CPU. Exit 1 while the problem
shows, 0 once it is gone, 2 where this JAX cannot express the case (a class or argument it lacks)."""
from __future__ import annotations

import dataclasses
import itertools
import sys
from math import prod

import numpy as np

EXPECTED = ('a plan (trivial or staggered) whose every access is free of bank conflicts under 32 banks x 4 bytes; '
            'a refusal only where no trivial or staggered plan is, or a documented limit applies')


def unexpressible(exc):
    """This JAX lacks a class, function or argument the case needs: no verdict on the problem (exit 2)."""
    print("expected:", EXPECTED)
    print("observed: this JAX cannot express the case:", f"{type(exc).__name__}: {exc}"[:300])
    sys.exit(2)


try:
    import jax
    from jax.experimental.mosaic.gpu import constraints as cs
    from jax.experimental.mosaic.gpu import fragmented_array as fa
    from jax.experimental.mosaic.gpu import launch_context as lc
except ImportError as exc:
    unexpressible(exc)
print("jax", jax.__version__)

SHAPE = (1, 8, 192)
BITS = 8
SWIZZLE = 32
# the SMEM ref, tiled (8, 32), row-major over its tiles: each logical dim's sub-dims (major first) and their
# strides, in elements
NESTED_SHAPE = ((1,), (1, 8), (6, 32))
NESTED_STRIDES = ((1536,), (1536, 32), (256, 1))
SEARCH = 60


def tiled_dims(shape, tiles):
    """The Tiling docstring: each tile in turn tiles the trailing dims of the (tiled) shape, a dim of n under a tile t
    unfolding into (n / t, t), the tile's dims moved to the end. Each tiled dim as (logical dim, step, size); None where
    a tile does not apply (more dims than the shape, or a size it does not divide)."""
    dims = [(i, 1, n) for i, n in enumerate(shape)]
    for tile in tiles:
        if not tile or len(tile) > len(dims):
            return None
        head, tail = dims[:len(dims) - len(tile)], dims[len(dims) - len(tile):]
        if any(t < 1 or size % t for (_, _, size), t in zip(tail, tile)):
            return None
        dims = (head + [(d, step * t, size // t) for (d, step, size), t in zip(tail, tile)]
                + [(d, step, t) for (d, step, _), t in zip(tail, tile)])
    return dims


def nested_address(nested_shape, nested_strides, index):
    """The address of a logical index (one int, or an array of many, per dim): each dim's index split over its
    sub-dims, major first, dotted with their strides (tile_nested_shape_strides' docstring: each logical dim is made of
    several physical dims)."""
    address = 0
    for i, shape, strides in zip(index, nested_shape, nested_strides):
        for size, stride in zip(reversed(shape), reversed(strides)):
            address = address + (i % size) * stride
            i = i // size  # a new value: an array passed in stays as it is
    return address


def elements(shape, dims):
    """Every element of ``shape`` (row-major): its logical index [dims, elements] and its index in the tiled array
    [elements, tiled dims]."""
    index = np.indices(tuple(shape)).reshape(len(shape), -1)
    tiled = np.stack([(index[d] // step) % size for d, step, size in dims], axis=1)
    return index, tiled


def nested_strides_of(f):
    """(sizes, strides), major first, with f(i) == f(0) + sum(digit * stride) over the mixed-radix digits of i, or
    None where no such split exists (greedy: the innermost sub-dim is the longest run at one stride; sub-dims that
    could merge do, so the run is exact)."""
    f = np.asarray(f, dtype=np.int64) - int(f[0])
    n, sizes, strides = len(f), [], []
    while n > 1:
        step, run = int(f[1]), 1
        while run < n and f[run] == run * step:
            run += 1
        if n % run or run == 1:
            return None
        blocks = f[:n].reshape(n // run, run)
        if not np.array_equal(blocks - blocks[:, :1], np.broadcast_to(np.arange(run) * step, blocks.shape)):
            return None
        sizes.insert(0, run)
        strides.insert(0, step)
        f, n = blocks[:, 0], n // run
    return (tuple(sizes) or (1,)), (tuple(strides) or (0,))


def brute_force_tiling(shape, nested_shape, nested_strides, tiles):
    """What tile_nested_shape_strides must answer, found by brute force: (nested shape, nested strides) of the tiled
    array that address each element where the ref does; None where the tiling does not apply to the logical shape or
    no nested shape and strides do (the tiled array's address is not a sum of one nested-strided map per tiled dim)."""
    dims = tiled_dims(shape, tiles)
    if dims is None:
        return None
    index, tiled = elements(shape, dims)
    address = nested_address(nested_shape, nested_strides, index)  # every element at once
    out, total = [], np.full(len(address), address[0])
    for k, (_, _, size) in enumerate(dims):
        alone = np.all(np.delete(tiled, k, axis=1) == 0, axis=1)  # the elements whose other tiled indices are 0
        f = np.zeros(size, dtype=np.int64)
        f[tiled[alone, k]] = address[alone]
        split = nested_strides_of(f)
        if split is None:
            return None
        out.append(split)
        total = total + f[tiled[:, k]] - f[0]
    if not np.array_equal(total, address):
        return None
    return tuple(s for s, _ in out), tuple(d for _, d in out)


def misplaced(shape, nested_shape, nested_strides, tiles, answer):
    """None where ``answer`` (nested shape, nested strides of the tiled array) addresses every element where the
    ref's nested shape and strides do; else what is wrong."""
    dims = tiled_dims(shape, tiles)
    if dims is None:
        return "an answer for a tiling that does not apply to the shape"
    out_shape, out_strides = answer
    if len(out_shape) != len(dims) or len(out_strides) != len(dims):
        return f"{len(out_shape)} tiled dims, the tiling gives {len(dims)}"
    for k, (_, _, size) in enumerate(dims):
        if prod(out_shape[k]) != size or len(out_shape[k]) != len(out_strides[k]):
            return f"tiled dim {k} has nested shape {out_shape[k]}, its size is {size}"
    index, tiled = elements(shape, dims)
    want = nested_address(nested_shape, nested_strides, index)
    got = nested_address(out_shape, out_strides, tiled.T)
    wrong = np.flatnonzero(got != want)
    if len(wrong):
        i = int(wrong[0])
        return (f"element {tuple(int(x) for x in index[:, i])} (tiled {tuple(int(x) for x in tiled[i])}) at address "
                f"{int(got[i])}, the ref has it at {int(want[i])}")
    return None


WARPS, WARP_SIZE, BANKS, BANK_BYTES = 4, 32, 32, 4  # a warpgroup; 32 banks of 4 bytes (CUDA C++ Programming Guide)


def swizzled(byte_address):
    """PTX ISA's swizzle of an address in a ref aligned to 1024 bytes: the 16-byte chunk bits [4, 4 + b) XOR the
    128-byte row bits [7, 7 + b), b = log2(SWIZZLE / 16) (SWIZZLE 16: none)."""
    b = (SWIZZLE // 16).bit_length() - 1
    return byte_address ^ (((byte_address >> 7) & ((1 << b) - 1)) << 4)


def conflicts(starts, nbytes):
    """The phases of one warp's access that conflict, each as (first lane, bank, the distinct 4-byte words on it):
    lane l reads ``nbytes`` from byte starts[l]; an access of 16 (8) bytes a lane is served a quarter (half) warp at a
    time, one of 4 or fewer all at once; a phase conflicts where two distinct words of it fall in one bank (a word read
    by several lanes is a broadcast)."""
    words = max(1, nbytes // BANK_BYTES)
    per = WARP_SIZE // words
    found = []
    for phase in range(0, len(starts), per):
        banks = {}
        for w in sorted({swizzled(int(s) + k * BANK_BYTES) // BANK_BYTES for s in starts[phase:phase + per]
                         for k in range(words)}):
            banks.setdefault(w % BANKS, []).append(w)
        shared = [(bank, ws) for bank, ws in banks.items() if len(ws) > 1]
        if shared:
            found.append((phase, *shared[0]))
    return found


class Transfer:
    """The accesses of a transfer of the SHAPE array held in ``layout`` to or from the SMEM ref NESTED_SHAPE,
    NESTED_STRIDES (in elements of BITS bits), by the layout's definition (the TiledLayout docstring): the warps, the
    lanes and the vector own tiled dims (major to minor; Replicated: no dim); the other tiled dims (the tile dims) are
    the steps, a tile of the warpgroup each."""

    def __init__(self, layout):
        self.dims = tiled_dims(SHAPE, layout.tiling.tiles)
        if self.dims is None:
            raise ValueError(f"the tiling {layout.tiling.tiles} does not apply to {SHAPE}")
        n = len(self.dims)
        def parts(ds):
            return [(None, d.times) if isinstance(d, fa.Replicated) else (d % n, self.dims[d % n][2]) for d in ds]
        self.warp, self.lane = parts(layout.warp_dims), parts(layout.lane_dims)
        self.vector_dim = layout.vector_dim % n
        self.vector_length = self.dims[self.vector_dim][2]
        owned = {d for d, _ in self.warp + self.lane if d is not None} | {self.vector_dim}
        self.tile_dims = [k for k in range(n) if k not in owned]
        self.radices = [self.dims[k][2] for k in self.tile_dims]
        self.transfer_bits = self.vector_length * BITS

    def address(self, tiled_index):
        """The element address of a tiled index (missing dims 0)."""
        logical = [0] * len(SHAPE)
        for k, v in tiled_index.items():
            d, step, _ = self.dims[k]
            logical[d] += v * step
        return nested_address(NESTED_SHAPE, NESTED_STRIDES, logical)

    def vector(self, warp, lane, tile):
        """The element addresses of one lane's vector at one tile (a tile index of the tile dims)."""
        base = {**dict(zip(self.tile_dims, tile)), **digits_of(warp, self.warp), **digits_of(lane, self.lane)}
        return [self.address({**base, self.vector_dim: v}) for v in range(self.vector_length)]

    def contiguous(self):
        """Whether each vector sits at consecutive addresses (transfer_tiled needs its dim at stride 1)."""
        return [self.address({self.vector_dim: v}) - self.address({}) for v in range(self.vector_length)] == list(
            range(self.vector_length))

    def judge(self, tile_of_lane, limit=None):
        """(what is wrong or None, conflicting phases, the first conflict): every lane transfers each of its tiles once
        (``tile_of_lane(step, lane)`` is the tile a lane moves at a step), then each step's access by each warp under
        the bank model; a vector not at consecutive addresses is one access per element. Conflicting phases are -1
        where sub-byte elements go one by one (no access the hardware makes)."""
        steps = list(itertools.product(*map(range, self.radices)))
        for lane in range(WARP_SIZE):
            seen = sorted(tuple(tile_of_lane(s, lane)) for s in steps)
            if seen != steps:
                return f"lane {lane} transfers tiles {seen[:4]}... not each of its {len(steps)} tiles once", 0, None
        bad, first, contiguous = 0, None, self.contiguous()
        for step in steps:
            for warp in range(WARPS):
                vectors = [self.vector(warp, lane, tile_of_lane(step, lane)) for lane in range(WARP_SIZE)]
                if contiguous:
                    if self.transfer_bits % 8:
                        return "a vector is not a whole number of bytes", 0, None
                    nbytes = self.transfer_bits // 8
                    if nbytes > 16:
                        return f"a vector of {nbytes} bytes: no access of one lane moves more than 16", 0, None
                    starts = [v[0] * BITS // 8 for v in vectors]
                    if nbytes in (2, 4, 8, 16) and any(s % nbytes for s in starts):
                        return f"a vector of {nbytes} bytes at byte {next(s for s in starts if s % nbytes)}", 0, None
                    if SWIZZLE > 16 and any(s // 16 != (s + nbytes - 1) // 16 for s in starts):
                        return "a vector crosses a 16-byte swizzle chunk", 0, None
                    found = [(step, warp, nbytes, c) for c in conflicts(starts, nbytes)]
                else:
                    if BITS % 8:
                        return None, -1, None
                    found = [(step, warp, BITS // 8, c) for v in range(self.vector_length)
                             for c in conflicts([e[v] * BITS // 8 for e in vectors], BITS // 8)]
                bad += len(found)
                first = first or (found[0] if found else None)
                if limit is not None and bad > limit:
                    return None, bad, first
        return None, bad, first


def describe(conflict):
    step, warp, nbytes, (lane, bank, words) = conflict
    return (f"e.g. at tile {step}, warp {warp}: the phase of lanes {lane}.. ({nbytes} bytes a lane) reads words "
            f"{words} of bank {bank}")


def trivial(step, lane):
    return step


def nested_digits(nested):
    """Maps between a tile index (one coordinate per tile dim) and its flattened nested digits (each tile dim's index
    split over its nested sub-dims, major first)."""
    def to_nested(step):
        out = []
        for v, subs in zip(step, nested):
            digits = []
            for s in reversed(subs):
                digits.append(v % s)
                v //= s
            out.extend(reversed(digits))
        return out

    def from_nested(digits):
        out, i = [], 0
        for subs in nested:
            v = 0
            for s in subs:
                v, i = v * s + digits[i], i + 1
            out.append(v)
        return tuple(out)

    return to_nested, from_nested


def staggered(nested, stagger, dim, size, group_stride):
    """StaggeredTransferPlan's tile for a lane: lanes with (lane // group_stride) % 2 == 1 rotate nested tile digit
    ``dim`` by ``stagger`` modulo ``size`` (its tile_index_transforms), the others move the step's tile."""
    to_nested, from_nested = nested_digits(nested)

    def tile(step, lane):
        if (lane // group_stride) % 2 == 0:
            return step
        digits = to_nested(step)
        digits[dim] = (digits[dim] + stagger) % size
        return from_nested(digits)

    return tile


def tile_nesting(t, tiled_nested_shape):
    """The nested radices of the tile dims and, for each position of Mosaic's flattened tiled nested shape, the
    flattened digit of the tile dims it is (None for a dim of the warps, the lanes or the vector)."""
    nested, where, offset = [tiled_nested_shape[k] for k in t.tile_dims], [], 0
    for k, subs in enumerate(tiled_nested_shape):
        for _ in subs:
            where.append(offset if k in t.tile_dims else None)
            offset += k in t.tile_dims
    return nested, where


def candidates(t, nested, where, search=SEARCH):
    """The trivial plan, then staggered plans over each nested tile digit (the first ``search`` of them), each with
    the call that names it."""
    yield "fa.TrivialTransferPlan()", trivial
    flat, count = [s for subs in nested for s in subs], 0
    for dim, size in enumerate(flat):
        if size < 2:
            continue
        for group_stride in (1, 2, 4, 8, 16):
            for stagger in range(1, size):
                count += 1
                if count > search:
                    return
                name = (f"fa.StaggeredTransferPlan(stagger={stagger}, dim={where.index(dim)}, size={size}, "
                        f"group_stride={group_stride})")
                yield name, staggered(nested, stagger, dim, size, group_stride)


def _digits(value: int, parts: Sequence[tuple[int | None, int]]) -> dict[int, int]:
    out = {}
    for dim, size in reversed(parts):
        if dim is not None:
            out[dim] = value % size
        value //= size
    return out


digits_of = _digits  # a warp or lane number over its (dim or None, size) parts


try:
    LAYOUT = fa.TiledLayout(
        fa.Tiling(((8, 64), (8, 8), (4,))),
        warp_dims=(fa.Replicated(2), -2), lane_dims=(-1, -4), vector_dim=-5, _check_canonical=False,
    ).canonicalize()
    plan_tiled_transfer, Trivial, Staggered = fa.plan_tiled_transfer, fa.TrivialTransferPlan, fa.StaggeredTransferPlan
except (AttributeError, TypeError) as exc:
    unexpressible(exc)
except ValueError as exc:  # canonicalize() refused the layout: no transfer of it to plan
    print("expected:", EXPECTED)
    print("observed: cannot run here: canonicalize() of the case's layout raised", exc)
    sys.exit(2)
try:
    plan, refusal = plan_tiled_transfer(NESTED_SHAPE, NESTED_STRIDES, LAYOUT, BITS, SWIZZLE), None
except Exception as exc:
    plan, refusal = None, f"{type(exc).__name__}: {exc}"[:300]
observed = "raised " + refusal if refusal else str(plan)
try:  # the tiled ref plan_tiled_transfer plans over: its tile dims' nested sub-dims, the digits a plan staggers
    tiled_nested_shape = LAYOUT.tiling.tile_nested_shape_strides(NESTED_SHAPE, NESTED_STRIDES)[0]
except ValueError as exc:  # judged as tile_nested_shape_strides' refusal (which plan_tiled_transfer meets first)
    want = brute_force_tiling(SHAPE, NESTED_SHAPE, NESTED_STRIDES, LAYOUT.tiling.tiles)
    print("expected:", "tile_nested_shape_strides of the layout's tiling over the ref:",
          "a refusal" if want is None else f"nested shape {want[0]} strides {want[1]}")
    print("observed: tile_nested_shape_strides raised", exc, "| plan_tiled_transfer:", observed)
    sys.exit(0 if want is None else 1)
t = Transfer(LAYOUT)
nested, where = tile_nesting(t, tiled_nested_shape)
if [prod(s) for s in tiled_nested_shape] != [size for _, _, size in t.dims]:
    print("expected:", "the tiled dims", [size for _, _, size in t.dims], "split into nested sub-dims")
    print("observed: tile_nested_shape_strides gave", tiled_nested_shape)
    sys.exit(1)
if not t.contiguous():
    print("expected:", EXPECTED)
    print("observed:", observed, "(not judged: the vector dim is not at stride 1 in the ref, which transfer_tiled "
          "refuses, so no transfer uses this plan)")
    sys.exit(0)
nbytes = t.transfer_bits / 8
if refusal is not None:
    if BITS > 32 or nbytes > 16:
        print("expected:", EXPECTED, "(here a documented limit: elements over 32 bits or vectors over 16 bytes)")
        print("observed: raised", refusal)
        sys.exit(0)
    if refusal.startswith("AssertionError") and t.transfer_bits % 8:
        print("expected:", EXPECTED, "(here a vector of a fractional number of bytes: checked at the call site)")
        print("observed: raised", refusal)
        sys.exit(0)
    for name, tile_of_lane in candidates(t, nested, where):
        problem, bad, _ = t.judge(tile_of_lane, limit=0)
        if problem is None and bad == 0:
            print("expected: a plan:", name, "is free of bank conflicts under 32 banks x 4 bytes (by brute force)")
            print("observed: raised", refusal)
            sys.exit(1)
    print("expected:", EXPECTED, f"(none of the trivial and first {SEARCH} staggered plans is conflict-free)")
    print("observed: raised", refusal)
    sys.exit(0)
if isinstance(plan, Staggered):
    digit = where[plan.dim] if plan.dim < len(where) else None
    flat = [s for subs in nested for s in subs]
    if digit is None or flat[digit] != plan.size:
        print("expected:", EXPECTED)
        print("observed:", plan, "staggers", "a dim of the warps, lanes or vector" if digit is None else
              f"a tile digit of size {flat[digit]} modulo {plan.size}", "(not a plan of the transfer's tiles)")
        sys.exit(1)
    tile_of_lane = staggered(nested, plan.stagger, digit, plan.size, plan.group_stride)
elif isinstance(plan, Trivial):
    tile_of_lane = trivial
else:
    print("expected:", EXPECTED)
    print("observed:", plan, "(a plan of a kind this script does not know)")
    sys.exit(2)
problem, bad, first = t.judge(tile_of_lane)
print("expected:", EXPECTED)
if bad < 0:
    print("observed:", plan, "(not judged: sub-byte elements moved one by one, no access the hardware makes)")
    sys.exit(0)
if problem is not None:
    print("observed:", plan, f"({problem})")
    sys.exit(1)
print("observed:", plan, f"{bad} conflicting phases (transfer {nbytes:g} bytes)" if bad else "no conflicts",
      describe(first) if first else "")
sys.exit(1 if bad else 0)
