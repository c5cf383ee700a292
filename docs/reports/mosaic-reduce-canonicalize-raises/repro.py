"""Mosaic GPU's reduced layout (reduce, mosaic.layout_relations/0/4092, found by layoutfuzz): the input is inside the relation's
domain (a layout Mosaic constructs, a shape its tiling applies to where the relation needs one), so Mosaic must answer,
and answer as the relation's definition does. Needs only JAX and NumPy; runs on a CPU. Exit 1 while Mosaic's answer
differs (or it raises), 0 once it agrees, 2 where this JAX lacks the API."""
import sys
from collections import namedtuple

import numpy as np

try:
    import jax
    from jax.experimental.mosaic.gpu import constraints as cs
    from jax.experimental.mosaic.gpu import fragmented_array as fa
    from jax.experimental.mosaic.gpu import layouts
    from jax.experimental.mosaic.gpu import utils
except ImportError as exc:
    print("unavailable:", exc)
    sys.exit(2)

REPLICATED = fa.Replicated
Site = namedtuple("Site", "shape memory_space")  # what a constraint variable's key tells: a value's shape and memory
SHAPE = (1, 1, 96, 32)
TILES = ((96, 32), (32, 32), (2, 16), (2,))
AXES = (2,)
KEEP_DIMS = False
LAYOUT = fa.TiledLayout(fa.Tiling(((96, 32), (32, 32), (2, 16), (2,))), (-3, -4, ), (-5, -1, ), -6, _check_canonical=False).canonicalize()
THREADS = 128


class Numbers:  # arith on integers, one value per thread: thread_idxs emits addi/muli/divui/remui on the thread index
    addi = staticmethod(lambda a, b: a + b)
    muli = staticmethod(lambda a, b: a * b)
    divui = staticmethod(lambda a, b: a // b)
    remui = staticmethod(lambda a, b: a % b)
    index_castui = staticmethod(lambda _type, a: a)
    constant = staticmethod(lambda _type, value: value)


def holders(layout, shape):
    """[thread, register element] -> the row-major index in ``shape`` of the element it holds."""
    fa.arith = utils.arith = Numbers
    fa.c = utils.c = lambda value, _type=None: int(value)
    utils.thread_idx = lambda: np.arange(THREADS)
    from jaxlib.mlir import ir
    with ir.Context():  # the index code names MLIR integer types
        starts = list(layout.thread_idxs(shape))
    strides = tuple(utils.get_contiguous_strides(shape))
    step = layout.tiling.tile_strides(strides)[layout.vector_dim]
    out = np.zeros((THREADS, len(starts) * layout.vector_length), dtype=np.int64)
    for r, index in enumerate(starts):
        linear = sum(np.broadcast_to(np.asarray(i), (THREADS,)) * s for i, s in zip(index, strides))
        for v in range(layout.vector_length):
            out[:, r * layout.vector_length + v] = linear + v * step
    return out


def applies(tiles, shape):
    """The Tiling docstring: each tile in turn tiles the trailing dims of the (tiled) shape, no more dims than it
    has, each dividing the dim it tiles (a dim n under a tile t becomes n / t, the tile's dims go to the end)."""
    dims = list(shape)
    for tile in tiles:
        if not tile or len(tile) > len(dims) or any(n % t for n, t in zip(dims[len(dims) - len(tile):], tile)):
            return False
        dims = dims[:len(dims) - len(tile)] + [n // t for n, t in zip(dims[len(dims) - len(tile):], tile)] + list(tile)
    return True


def broadcasts(shape, target):
    """NumPy's broadcast rule: target has at least shape's dims, and each of shape's (aligned right) is 1 or equal."""
    return len(target) >= len(shape) and all(n in (1, m) for n, m in zip(shape[::-1], target[::-1]))


def projected(layout, shape, out_shape):
    """Per thread, the elements of the reduced array its elements reduce into (AXES dropped, or kept as 0)."""
    coords = np.unravel_index(holders(layout, shape), shape)
    kept = [np.zeros_like(c) if d in AXES else c for d, c in enumerate(coords) if KEEP_DIMS or d not in AXES]
    flat = np.ravel_multi_index(kept, out_shape) if kept else np.zeros_like(coords[0])
    return [set(row.tolist()) for row in flat]


def judge_reduce(answer):
    """None where the reduced layout holds, in each thread, what the thread's elements reduce into; else why not."""
    out_shape = tuple(1 if d in AXES else n for d, n in enumerate(SHAPE) if KEEP_DIMS or d not in AXES)
    if isinstance(LAYOUT, fa.WGSplatFragLayout) or isinstance(answer, fa.WGSplatFragLayout):
        return None if answer == fa.WGSplatFragLayout(out_shape) else f"not a splat of {out_shape}"
    if not isinstance(answer, fa.TiledLayout) or not isinstance(LAYOUT, fa.TiledLayout):
        return None  # a strided reduction: its placement is not checked here
    want, got = projected(LAYOUT, SHAPE, out_shape), [set(row.tolist()) for row in holders(answer, out_shape)]
    wrong = [t for t in range(THREADS) if got[t] != want[t]]
    return f"{len(wrong)} threads hold other elements than their own reduce into" if wrong else None


def judge_reshape(answer):
    """None where the layout on the new shape keeps every element in its thread and register; else why not."""
    if isinstance(LAYOUT, fa.WGSplatFragLayout) or not isinstance(answer, fa.TiledLayout):
        return None if not isinstance(LAYOUT, fa.WGSplatFragLayout) or answer == fa.WGSplatFragLayout(TARGET) else \
            f"not a splat of {TARGET}"
    want, got = holders(LAYOUT, SHAPE), holders(answer, TARGET)
    moved = int((got != want).sum()) if got.shape == want.shape else got.size
    return f"{moved} elements held elsewhere after the reshape" if moved else None


print("jax", jax.__version__)
try:
    answer = cs.reduce_reduce_expression(cs.Reduce(cs.RegisterLayout(LAYOUT), AXES, len(SHAPE), KEEP_DIMS), {})
except Exception as exc:
    print("expected: an answer (the input is inside the relation's domain)")
    print("observed: raised", f"{type(exc).__name__}: {exc}"[:300])
    sys.exit(1)
print("expected: a layout where each thread holds what its elements reduce into, or the expression left unreduced")
if not isinstance(answer, cs.RegisterLayout):
    print("observed: left unreduced (a documented limit):", str(answer)[:100])
    sys.exit(0)
why = judge_reduce(answer.value)
print("observed:", str(answer.value)[:100], "" if why is None else f"({why})")
sys.exit(0 if why is None else 1)
