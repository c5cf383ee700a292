"""Target ``mosaic.layouts``: JAX Mosaic GPU's register layouts (``TiledLayout``, the WGMMA layouts) on the CPU:
which thread of the warpgroup and which register hold each element, against ``oracles.mosaic_layouts`` (the PTX
wgmma fragments; the F2 layout a TiledLayout denotes by its documented definition).

What Mosaic says is read from its own index code: ``TiledLayout.thread_idxs(shape)``, the per-thread, per-register
index every untiled load, store and ``foreach`` of a ``FragmentedArray`` is built from. It emits MLIR ``arith`` ops on
the thread index; here it runs with those ops on NumPy integers instead (one value per thread of the warpgroup:
``addi``, ``muli``, ``divui``, ``remui`` on non-negative integers are +, *, //, %), so nothing is compiled. Each
layout is also canonicalized (``TiledLayout.canonicalize``), which must not change which thread holds what.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.mosaic_layouts import NAMED, WGMMA, mosaic_layout_case
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.targets.mosaic_base import MosaicTarget
from layoutfuzz.oracles import mosaic_layouts as oracle
from layoutfuzz.oracles import mosaic_relations as relations
from layoutfuzz.oracles.linear_layout import LayoutError

SHOWN = 4


class MosaicLayouts(MosaicTarget):
    name = "mosaic.layouts"
    layer = "JAX Mosaic GPU (fragmented_array.TiledLayout)"
    description = "JAX Mosaic GPU's register layouts (TiledLayout, WGMMA layouts): which thread and register hold each element"
    module = "fragmented_array"

    def generate(self, source: Source) -> dict[str, Any]:
        return mosaic_layout_case(source)

    def validate(self, case: Case) -> None:
        p = case.params
        if p.get("family") not in ("wgmma", "named", "random"):
            raise ValueError("family must be wgmma, named or random")
        if p["family"] != "random" and p.get("name") not in (WGMMA if p["family"] == "wgmma" else NAMED):
            raise ValueError(f"no {p['family']} layout {p.get('name')!r}")
        self.expected(case)

    def family(self, case: Case) -> str:
        p = case.params
        return f"{p['family']}: {p['name']}" if "name" in p else p["family"]

    def parameter_space(self) -> Space:
        source = "Mosaic GPU fragmented_array.py (jax 0.10.2)"
        return Space((
            Parameter("family", ("wgmma", "named", "random"), "PTX wgmma fragments; Mosaic's named and any tiled layouts",
                      lambda p: p["family"]),
            Parameter("named layout", tuple(NAMED), source, lambda p: p.get("name") if p["family"] == "named" else None),
            Parameter("array rank", (1, 2, 3), "TiledLayout: any rank its tiling applies to", lambda p: len(p["shape"])),
            Parameter("base tile", ("powers of two", "not a power of two"), "Tiling: any positive tile sizes",
                      lambda p: "powers of two" if all(n & (n - 1) == 0 for n in p["tiles"][0]) else "not a power of two"),
            Parameter("replicated warps or lanes", ("no", "yes"), "TiledLayout: Replicated(n) among warp/lane dims",
                      lambda p: "yes" if any(isinstance(d, dict) for d in (*p["warp_dims"], *p["lane_dims"])) else "no"),
            Parameter("vector length", ("1", "2", "4", "8+", "not a power of two"), "TiledLayout: any size of the vector dim",
                      lambda p: _vector_label(p)),
        ), _illegal)

    def expected(self, case: Case) -> np.ndarray:
        """[thread, register element]: the row-major index of the element held (the PTX fragment or the F2 layout)."""
        p = case.params
        if p["family"] == "wgmma":
            rows, cols = p["shape"]
            if rows != 64:
                raise LayoutError("a wgmma fragment is 64 rows")
            fragment = oracle.wgmma_fragment(WGMMA[p["name"]][0], cols)
            return fragment[..., 0] * cols + fragment[..., 1]
        args = (p["shape"], p["tiles"], _dims(p["warp_dims"]), _dims(p["lane_dims"]), p["vector_dim"])
        if all(n & (n - 1) == 0 for n in (*p["shape"], *(t for tile in p["tiles"] for t in tile))):
            return oracle.holders(oracle.tiled_layout(*args))
        return relations.tiled_placement(*args)  # any sizes: the same definition counted in integers

    def observed(self, case: Case) -> dict[str, Any]:
        """What Mosaic's thread_idxs gives for the layout and for its canonical form."""
        from jax.experimental.mosaic.gpu import fragmented_array as fa

        p = case.params
        layout = fa.TiledLayout(fa.Tiling(tuple(tuple(t) for t in p["tiles"])), _mosaic_dims(fa, p["warp_dims"]),
                                _mosaic_dims(fa, p["lane_dims"]), p["vector_dim"], _check_canonical=False)
        shape = tuple(p["shape"])
        holders = thread_holders(layout, shape)
        try:
            canonical = layout.canonicalize()
        except ValueError as exc:  # Mosaic's own check of the layout it built: an answer, not a harness error
            return {"holders": holders, "canonical": f"raised {type(exc).__name__}: {str(exc)[:200]}"}
        return {"holders": holders, "canonical": thread_holders(canonical, shape)}

    def reproducer_script(self, case: Case) -> str | None:
        """A script that needs only JAX and NumPy (``layoutfuzz export``)."""
        return reproducer(case)

    def compare(self, case: Case, expected: np.ndarray, observed: Mapping[str, Any]) -> Comparison:
        if isinstance(observed["canonical"], str):
            return Comparison(False, 1, (observed["canonical"],), f"canonical: {observed['canonical'][:120]}",
                              f"canonicalize() of a layout that holds every element {observed['canonical']}")
        for key, what in (("holders", "Mosaic's layout"), ("canonical", "its canonical form")):
            got = np.asarray(observed[key])
            if got.shape != expected.shape:
                return Comparison(False, 1, (f"{got.shape[1]} register elements a thread, expected {expected.shape[1]}",),
                                  f"{key}: another number of registers", f"{what} holds {got.shape} for {expected.shape}")
            wrong = np.argwhere(got != expected)
            if len(wrong):
                examples = tuple(f"thread {t} register element {r}: element {got[t, r]}, expected {expected[t, r]}"
                                 for t, r in wrong[:SHOWN])
                return Comparison(False, len(wrong), examples, f"{key}: elements in other threads or registers",
                                  f"{what} puts {len(wrong)} of {got.size} (thread, register) slots elsewhere")
        return Comparison(True)


def _traits(layout: Mapping[str, Any]) -> dict[str, Any]:
    """What a fixed (named or wgmma) layout always draws: its rank, replication and vector length."""
    return {"array rank": len(layout["tiles"][0]),
            "replicated warps or lanes": "yes" if any(isinstance(d, dict) for d in (*layout["warp_dims"], *layout["lane_dims"])) else "no",
            "vector length": _vector_label({**layout, "shape": layout["tiles"][0]})}


def _illegal(a: str, x: Any, b: str, y: Any) -> bool:
    """Pairs that cannot occur: a named layout has one rank, replication and vector length, and only in family named;
    the wgmma family draws three of them."""
    pair = {a: x, b: y}
    if "named layout" in pair:
        traits = _traits(NAMED[pair["named layout"]])
        return pair.get("family", "named") != "named" or any(pair[k] != v for k, v in traits.items() if k in pair)
    if pair.get("family") == "wgmma":
        allowed = [_traits(NAMED[name]) for name in WGMMA]
        return not any(all(pair[k] == t[k] for k in pair if k in t) for t in allowed)
    if pair.get("family") == "named":
        return not any(all(pair[k] == t[k] for k in pair if k in t) for t in map(_traits, NAMED.values()))
    return False


def _vector_label(p: Mapping[str, Any]) -> str | None:
    try:
        size = relations.tiled_dims(p["shape"], p["tiles"])[p["vector_dim"]].size
    except LayoutError:  # a wgmma fragment's shape its named tiling does not apply to
        return None
    if size & (size - 1):
        return "not a power of two"
    return str(size) if size < 8 else "8+"


def _dims(dims: list[Any]) -> list[oracle.Dim]:
    return [oracle.Replicated(d["replicated"]) if isinstance(d, dict) else d for d in dims]


def _mosaic_dims(fa: Any, dims: list[Any]) -> tuple[Any, ...]:
    return tuple(fa.Replicated(d["replicated"]) if isinstance(d, dict) else d for d in dims)


class _Numbers:
    """Stands in for ``jaxlib.mlir.dialects.arith`` in Mosaic's index code: the ops on integers, one per thread."""

    addi = staticmethod(lambda a, b: a + b)
    muli = staticmethod(lambda a, b: a * b)
    divui = staticmethod(lambda a, b: a // b)
    remui = staticmethod(lambda a, b: a % b)
    index_castui = staticmethod(lambda _type, a: a)
    constant = staticmethod(lambda _type, value: value)


@contextlib.contextmanager
def _on_integers() -> Iterator[None]:
    """Mosaic's index code evaluated on NumPy integers for the 128 threads of a warpgroup, then restored."""
    from jax.experimental.mosaic.gpu import fragmented_array as fa
    from jax.experimental.mosaic.gpu import utils
    from jaxlib.mlir import ir

    saved = (fa.arith, fa.c, utils.arith, utils.c, utils.thread_idx)
    fa.arith = utils.arith = _Numbers
    fa.c = utils.c = lambda value, _type=None: int(value)
    utils.thread_idx = lambda: np.arange(oracle.THREADS, dtype=np.int64)
    try:
        with ir.Context():  # the index code names MLIR integer types
            yield
    finally:
        fa.arith, fa.c, utils.arith, utils.c, utils.thread_idx = saved


def thread_holders(layout: Any, shape: tuple[int, ...]) -> np.ndarray:
    """[thread, register element]: the row-major index each thread holds, from Mosaic's ``thread_idxs``; the elements
    of a register's vector are its start plus the vector dim's stride (``Tiling.tile_strides``), element by element."""
    from jax.experimental.mosaic.gpu import utils

    with _on_integers():
        starts = list(layout.thread_idxs(shape))
    strides = tuple(utils.get_contiguous_strides(shape))
    vector_stride = layout.tiling.tile_strides(strides)[layout.vector_dim]
    length = layout.vector_length
    out = np.zeros((oracle.THREADS, len(starts) * length), dtype=np.int64)
    for r, index in enumerate(starts):
        linear = sum(np.broadcast_to(np.asarray(i, dtype=np.int64), (oracle.THREADS,)) * s for i, s in zip(index, strides))
        for v in range(length):
            out[:, r * length + v] = linear + v * vector_stride
    return out


def tiled_source(layout: Mapping[str, Any]) -> str:
    """A tiled layout dict ({"tiles", "warp_dims", "lane_dims", "vector_dim"}) as the script line that builds it, its
    replicated dims as ``REPLICATED(n)`` (a script sets ``REPLICATED = fa.Replicated``), uncanonicalized."""
    def dims(data: list[Any]) -> str:
        names = [str(d) if isinstance(d, int) else "REPLICATED({})".format(d["replicated"]) for d in data]
        return "(" + "".join(f"{n}, " for n in names) + ")"

    return (f"fa.TiledLayout(fa.Tiling({tuple(tuple(t) for t in layout['tiles'])!r}), {dims(layout['warp_dims'])}, "
            f"{dims(layout['lane_dims'])}, {layout['vector_dim']}, _check_canonical=False)")


# script text: holders(layout, shape), which thread and register hold each element, from Mosaic's own index code run
# on NumPy integers for the 128 threads of a warpgroup (a script imports numpy as np, fa and utils from Mosaic GPU)
HOLDERS = '''THREADS = 128


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
'''


def reproducer(case: Case) -> str | None:
    """A script that needs only JAX (and NumPy): it builds the case's TiledLayout as Mosaic's own passes do
    (``_check_canonical=False``), canonicalizes it and compares which thread and register hold each element before and
    after (Mosaic's ``thread_idxs`` evaluated on NumPy integers for the 128 threads); exit 1 while they differ or
    canonicalize() raises, 0 once they agree, 2 where this JAX lacks the API. None for the named and wgmma families."""
    p = case.params
    if p["family"] != "random":
        return None
    return f'''"""Mosaic GPU's TiledLayout.canonicalize() on one layout ({case.case_id}, found by layoutfuzz): the canonical form
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
SHAPE = {tuple(p["shape"])!r}
LAYOUT = {tiled_source(p)}  # as Mosaic's own passes build one
{HOLDERS}

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
'''
