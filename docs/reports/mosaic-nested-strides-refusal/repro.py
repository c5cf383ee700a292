"""Mosaic GPU's Tiling.tile_nested_shape_strides ('a fused version of tile_shape and tile_strides for nested shapes'):
the SHAPE array stored at NESTED_SHAPE / NESTED_STRIDES (each logical dim made of sub-dims, major first) and tiled
by TILES must come back as nested shape and strides that address every element of the tiled array where the untiled
ones address it; refusing is right only where the tiling does not apply to SHAPE or no nested shape and strides
address the tiled array (checked element by element below).

Found by layoutfuzz (case mosaic.transfers/31/0). Needs only JAX and NumPy; runs on a CPU. Exit 1 while the problem
shows, 0 once it is gone, 2 where this JAX cannot express the case (a class or argument it lacks)."""
from __future__ import annotations

import dataclasses
import itertools
import sys
from math import prod

import numpy as np

EXPECTED = ("the tiled array's nested shape and strides, addressing each element where NESTED_SHAPE and "
            'NESTED_STRIDES address it (a refusal only where the tiling does not apply to SHAPE or none exist)')


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

SHAPE = (6,)
NESTED_SHAPE = ((2, 3),)
NESTED_STRIDES = ((3, 1),)
TILES = ((2,),)


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


try:
    tiling = fa.Tiling(TILES)
except (AttributeError, TypeError) as exc:
    unexpressible(exc)
want = brute_force_tiling(SHAPE, NESTED_SHAPE, NESTED_STRIDES, TILES)
print("expected:", EXPECTED + ":",
      "a refusal" if want is None else f"e.g. nested shape {want[0]} strides {want[1]}")
try:
    answer = tiling.tile_nested_shape_strides(NESTED_SHAPE, NESTED_STRIDES)
except Exception as exc:
    documented = isinstance(exc, ValueError) and want is None
    print("observed: raised", f"{type(exc).__name__}: {exc}"[:300], "" if documented else "(spurious refusal)")
    sys.exit(0 if documented else 1)
why = misplaced(SHAPE, NESTED_SHAPE, NESTED_STRIDES, TILES, answer)
print("observed: nested shape", answer[0], "strides", answer[1], "" if why is None else f"({why})")
sys.exit(0 if why is None else 1)
