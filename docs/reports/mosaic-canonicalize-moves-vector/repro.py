"""Mosaic GPU's TiledLayout.canonicalize() on one layout (mosaic.layouts/0/0, found by layoutfuzz): the canonical form
must hold every element in the same thread and register as the layout it came from. Needs only JAX and NumPy; runs on a
CPU. Exit 1 while they differ (or canonicalize raises), 0 once they agree, 2 where this JAX lacks the API."""
import sys

import numpy as np

try:
    import jax
    from jax.experimental.mosaic.gpu import fragmented_array as fa
    from jax.experimental.mosaic.gpu import utils
except ImportError as exc:
    print("unavailable:", exc)
    sys.exit(2)

REPLICATED = fa.Replicated
SHAPE = (512,)
LAYOUT = fa.TiledLayout(fa.Tiling(((512,), (64,), (64,), (8,))), (REPLICATED(4), ), (-4, REPLICATED(4), ), -3, _check_canonical=False)  # as Mosaic's own passes build one
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


print("jax", jax.__version__)
expected = holders(LAYOUT, SHAPE)
print("expected: canonicalize() keeps every element where it is:", expected.shape[1], "register elements a thread,",
      "thread 0 holds", expected[0][:8].tolist())
try:
    canonical = LAYOUT.canonicalize()
except ValueError as exc:
    print("observed: canonicalize() raised ValueError:", exc)
    sys.exit(1)
observed = holders(canonical, SHAPE)
same = observed.shape == expected.shape and bool((observed == expected).all())
print("observed:", canonical, "holds", observed.shape[1], "register elements a thread, thread 0 holds",
      observed[0][:8].tolist(), "" if same else "(elements moved)")
sys.exit(0 if same else 1)
