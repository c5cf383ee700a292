"""The scripts ``layoutfuzz export`` writes for ``mosaic.transfers``: the case built with Mosaic GPU's public API as its
users write it, Mosaic's answer judged by the definition written into the script (a round trip's equality; element
addresses of nested shapes by brute force; a transfer's accesses under 32 banks x 4 bytes by brute force, as
``oracles.mosaic_transfers`` counts them; the constraints' docstrings), ``expected:`` and ``observed:`` printed, exit 1
while the problem shows, 0 once it is gone, 2 where the installed JAX cannot express the case (a class or argument it
lacks). Only the transform attribute's round trip goes through MLIR's C++ (which can abort): it runs in a child process.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Mapping
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.oracles import mosaic_transfers as oracle

# ---- script text shared by the families ---------------------------------------------------------------------

_FOUND = ("Found by layoutfuzz (case CASE_ID). Needs only JAX and NumPy; runs on a CPU. Exit 1 while the problem "
          "shows, 0 once it is gone, 2 where this JAX cannot express the case (a class or argument it lacks).")


def _head(case: Case, doc: str) -> str:
    """The script's docstring: what the call must answer, and how the script says it (lines of at most 116 columns)."""
    paragraphs = [" ".join(doc.split()), _FOUND.replace("CASE_ID", case.case_id)]
    return '"""' + "\n\n".join(textwrap.fill(text, 116) for text in paragraphs) + '"""\n'

_IMPORTS = '''from __future__ import annotations

import dataclasses
import itertools
import sys
from math import prod

import numpy as np

EXPECTED = WORDS


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
'''

# the Tiling docstring and nested strides, by brute force (oracles.mosaic_transfers: tiled_coordinates, judge_nested)
NESTED_DEFS = '''

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
'''

# a transfer's accesses under the hardware's bank model (oracles.mosaic_transfers: swizzle, conflicting_phases,
# Transfer, trivial, staggered, nested_digits; harness.targets.mosaic_transfers: _tile_nesting, _candidates)
def _literal(value: Any) -> Any:
    """Nested lists as nested tuples (Mosaic's arguments are tuples)."""
    return tuple(_literal(v) for v in value) if isinstance(value, (list, tuple)) else value


def _constants(values: Mapping[str, Any]) -> str:
    return "".join(f"{name} = {_literal(value)!r}\n" for name, value in values.items())


def _tiled_source(layout: Mapping[str, Any], indent: str = "    ") -> str:
    """The case's register layout as the lines that build it, canonical (as the target, and Mosaic's passes, build
    one); its replicated dims as fa.Replicated(n)."""
    def dims(data: list[Any]) -> str:
        names = [str(d) if isinstance(d, int) else f"fa.Replicated({d['replicated']})" for d in data]
        return "(" + ", ".join(names) + ("," if len(names) == 1 else "") + ")"

    return (f"fa.TiledLayout(\n{indent}    fa.Tiling({_literal(layout['tiles'])!r}),\n"
            f"{indent}    warp_dims={dims(layout['warp_dims'])}, lane_dims={dims(layout['lane_dims'])}, "
            f"vector_dim={layout['vector_dim']}, _check_canonical=False,\n{indent}).canonicalize()")


def _words(words: str) -> str:
    """The expected answer in words as a Python literal, in lines of at most 116 columns."""
    lines = textwrap.wrap(words, 100)
    if len(lines) == 1:
        return repr(words)
    return "(" + "\n            ".join(repr(line + " ") for line in lines[:-1]) + "\n            " + repr(lines[-1]) + ")"


def _script(case: Case, doc: str, words: str, body: str) -> str:
    return _head(case, doc) + _IMPORTS.replace("WORDS", _words(words)) + body


# ---- the families -----------------------------------------------------------------------------------------------

def _transform_attr(case: Case) -> str:
    from layoutfuzz.harness.targets.script_parts import PARENT_IMPORTS, RUN_CHILD

    p = case.params
    if "swizzle" in p:
        transform = f"mgpu.dialect.SwizzlingMode({p['swizzle']})"
    elif p["rounding"] is None:
        transform = f"lc.TileTransform({_literal(p['tiling'])!r})"
    else:
        transform = f"lc.TileTransform({_literal(p['tiling'])!r}, lc.Rounding.{p['rounding']})"
    words = f"from_transform_attr(to_transform_attr(T)) == T for T = {transform}"
    doc = ("Mosaic GPU's transform attributes: layouts.from_transform_attr(layouts.to_transform_attr(T)) must give T "
           f"back (T = {transform}), so that a transform read back from the IR is the one written.")
    head = _head(case, doc)
    child = '''import json

try:
    import jax
    from jax._src.lib.mlir import ir
    from jax.experimental.mosaic import gpu as mgpu
    from jax.experimental.mosaic.gpu import launch_context as lc
    from jax.experimental.mosaic.gpu import layouts
    transform = TRANSFORM
except (ImportError, AttributeError, TypeError) as exc:  # this JAX lacks the class or argument
    print("ANSWER", json.dumps({"unavailable": f"{type(exc).__name__}: {exc}"}))
    raise SystemExit(0)
with ir.Context() as ctx, ir.Location.unknown():
    mgpu.dialect.register_dialect(ctx)
    try:
        attribute = layouts.to_transform_attr(transform)
        back = layouts.from_transform_attr(attribute)
    except Exception as exc:
        print("ANSWER", json.dumps({"jax": jax.__version__, "raised": f"{type(exc).__name__}: {exc}"[:300]}))
    else:
        print("ANSWER", json.dumps({"jax": jax.__version__, "same": back == transform, "transform": repr(transform),
                                    "attribute": str(attribute), "back": repr(back)}))
'''.replace("TRANSFORM", transform)
    return head + PARENT_IMPORTS + f'''
EXPECTED = {_words(words)}
# the transform is built, written as an attribute and read back in a child process (MLIR's C++ can abort it)
CHILD = r"""{child}"""
{RUN_CHILD}

answer = run_child(CHILD, EXPECTED)
print("jax", answer.get("jax"))
print("expected:", EXPECTED)
if "raised" in answer:
    print("observed: raised", answer["raised"])
    sys.exit(1)
print("observed:", answer["back"], "read back from", answer["attribute"], "" if answer["same"] else "(not equal)")
sys.exit(0 if answer["same"] else 1)
'''


def _nested_strides(case: Case) -> str:
    p = case.params
    constants = _constants({"SHAPE": p["shape"], "NESTED_SHAPE": p["nested_shape"],
                            "NESTED_STRIDES": p["nested_strides"], "TILES": p["tiles"]})
    words = ("the tiled array's nested shape and strides, addressing each element where NESTED_SHAPE and "
             "NESTED_STRIDES address it (a refusal only where the tiling does not apply to SHAPE or none exist)")
    doc = ("Mosaic GPU's Tiling.tile_nested_shape_strides ('a fused version of tile_shape and tile_strides for "
           "nested shapes'): the SHAPE array stored at NESTED_SHAPE / NESTED_STRIDES (each logical dim made of "
           "sub-dims, major first) and tiled by TILES must come back as nested shape and strides that address every "
           "element of the tiled array where the untiled ones address it; refusing is right only where the tiling "
           "does not apply to SHAPE or no nested shape and strides address the tiled array (checked element by "
           "element below).")
    body = f'''
{constants}{NESTED_DEFS}

try:
    tiling = fa.Tiling(TILES)
except (AttributeError, TypeError) as exc:
    unexpressible(exc)
want = brute_force_tiling(SHAPE, NESTED_SHAPE, NESTED_STRIDES, TILES)
print("expected:", EXPECTED + ":",
      "a refusal" if want is None else f"e.g. nested shape {{want[0]}} strides {{want[1]}}")
try:
    answer = tiling.tile_nested_shape_strides(NESTED_SHAPE, NESTED_STRIDES)
except Exception as exc:
    documented = isinstance(exc, ValueError) and want is None
    print("observed: raised", f"{{type(exc).__name__}}: {{exc}}"[:300], "" if documented else "(spurious refusal)")
    sys.exit(0 if documented else 1)
why = misplaced(SHAPE, NESTED_SHAPE, NESTED_STRIDES, TILES, answer)
print("observed: nested shape", answer[0], "strides", answer[1], "" if why is None else f"({{why}})")
sys.exit(0 if why is None else 1)
'''
    return _script(case, doc, words, body)


_SMEM = '''

def smem(tiling):
    """The SMEM transforms of a ref tiled by ``tiling`` (None: untiled), unswizzled (a JAX whose SMEMTransforms holds
    a swizzle beside the tiling gets None for it)."""
    transform = None if tiling is None else lc.TileTransform(tuple(tiling))
    if "swizzle" in {f.name for f in dataclasses.fields(cs.SMEMTransforms)}:
        return cs.SMEMTransforms(transform, None)
    return cs.SMEMTransforms(transform)
'''

def _oracle_source(*functions: Any) -> str:
    """The oracle's own functions as script text (``oracles.mosaic_transfers``: plain NumPy and ``math.prod``; the
    script's ``from __future__ import annotations`` leaves their type hints unevaluated)."""
    return "".join("\n\n" + inspect.getsource(f) for f in functions)


# script text: a reduced expression read back, and whether a tiling applies to a shape
_READ = '''

def read(expr):
    """A reduced expression: "unsatisfiable", {"tiling": list or None}, or "unreduced ..."."""
    if isinstance(expr, cs.Unsatisfiable):
        return "unsatisfiable"
    if isinstance(expr, cs.SMEMTransforms):
        return {"tiling": None if expr.tiling is None else list(expr.tiling.tiling)}
    return f"unreduced {type(expr).__name__}"

'''
_READ += _oracle_source(oracle.applies)

# script text: the judges of the transposed and the collapsed tilings, the oracle's, under the names the body calls
_TRANSPOSE_DEFS = _oracle_source(oracle.tile_ids, oracle.transpose_documented_reject, oracle.judge_transpose) + (
    "\n\njudge = judge_transpose\n")
_COLLAPSE_DEFS = _oracle_source(oracle.tiled_offsets, oracle.collapse_documented_reject, oracle.collapsed_shape,
                                oracle.judge_collapse) + "\n\njudge = judge_collapse\n"

_REDUCED_BODY = '''

try:
    expr = EXPRESSION
    reduce_expression = REDUCER
except (AttributeError, TypeError) as exc:
    unexpressible(exc)
print("expected:", EXPECTED)
try:
    answer = read(reduce_expression(expr, {}))
except Exception as exc:
    print("observed: raised", f"{type(exc).__name__}: {exc}"[:300], "(spurious refusal)")
    sys.exit(1)
if isinstance(answer, str) and answer.startswith("unreduced"):
    print("observed:", answer, "(a constant expression left unreduced)")
    sys.exit(1)
why = judge(JUDGE_ARGS, answer)
print("observed:", answer, "" if why is None else f"({why})")
sys.exit(0 if why is None else 1)
'''


def _transpose(case: Case) -> str:
    p = case.params
    constants = _constants({"SHAPE": p["shape"], "TILING": p["tiling"], "PERMUTATION": p["permutation"]})
    words = ("the tiling of the transposed ref whose tiles are the source's tiles (or unsatisfiable where its comment "
             "documents it, or where no tiling keeps every tile)")
    doc = ("Mosaic GPU's constraints.reduce_transpose_expression: a SMEM ref of shape SHAPE tiled TILING, "
           "transposed by PERMUTATION, is tiled by the reduced expression iff that tiling applies to the transposed "
           "shape and its tiles are the source's tiles (the same partition of the elements); the comment's "
           "documented rejection is a swap between tiled and untiled dims.")
    body = (f"\n{constants}{_SMEM}{_READ}{_TRANSPOSE_DEFS}" + _REDUCED_BODY
            .replace("EXPRESSION", "cs.Transpose(smem(TILING), PERMUTATION)")
            .replace("REDUCER", "cs.reduce_transpose_expression").replace("JUDGE_ARGS", "SHAPE, TILING, PERMUTATION"))
    return _script(case, doc, words, body)


def _collapse_shape(case: Case) -> str:
    p = case.params
    constants = _constants({"SHAPE": p["shape"], "TILING": p["tiling"], "GROUPS": p["groups"]})
    words = ("the tiling of the collapsed ref that puts every element at the source's tiled address (or unsatisfiable "
             "where documented, or where no tiling does)")
    doc = ("Mosaic GPU's constraints.reduce_collapse_shape_expression: a contiguous SMEM ref of shape SHAPE tiled "
           "TILING, its dims collapsed in GROUPS (the CollapseShape docstring: contiguous dims collapsed row-major), "
           "must be tiled by the reduced expression so that every element keeps its address; the documented "
           "rejections are a tiling that does not apply and a group mixing tiled and untiled dims.")
    body = (f"\n{constants}{_SMEM}{_READ}{_COLLAPSE_DEFS}" + _REDUCED_BODY
            .replace("EXPRESSION", "cs.CollapseShape(smem(TILING), SHAPE, GROUPS)")
            .replace("REDUCER", "cs.reduce_collapse_shape_expression").replace("JUDGE_ARGS", "SHAPE, TILING, GROUPS"))
    return _script(case, doc, words, body)


_HOLDS_BODY = '''

try:
    constraint = CONSTRAINT
except (AttributeError, TypeError) as exc:
    unexpressible(exc)
want = DEFINITION
print("expected:", want, f"({EXPECTED})")
try:
    answer = constraint.holds()
except Exception as exc:
    print("observed: raised", f"{type(exc).__name__}: {exc}"[:300], "(spurious refusal)")
    sys.exit(1)
print("observed:", answer)
sys.exit(0 if answer is want or answer == want else 1)
'''


def _mma_tiling(case: Case) -> str:
    p = case.params
    constants = _constants({"TILING": p["tiling"], "BITWIDTH": p["bits"], "ALLOW_UNSWIZZLED": p["allow_unswizzled"]})
    words = ("the docstring: a tiling (8, s * 8 // BITWIDTH) for s in 32, 64, 128 (and 16 where unswizzled tilings are "
             "allowed)")
    doc = ("Mosaic GPU's constraints.IsValidMmaTiling on the SMEM tiling TILING: its docstring says the tiling is "
           "valid iff it is (8, swizzle_elems), swizzle_elems in {s * 8 // bitwidth for s in [32, 64, 128]}, and with "
           "allow_unswizzled also (8, 16 * 8 // bitwidth).")
    definition = ("TILING is not None and tuple(TILING) in [\n    (8, s * 8 // BITWIDTH) for s in "
                  "((16, 32, 64, 128) if ALLOW_UNSWIZZLED else (32, 64, 128))]")
    body = (f"\n{constants}{_SMEM}" + _HOLDS_BODY
            .replace("CONSTRAINT", "cs.IsValidMmaTiling(smem(TILING), BITWIDTH, ALLOW_UNSWIZZLED)")
            .replace("DEFINITION", definition))
    return _script(case, doc, words, body)


def _minor_divisible(case: Case) -> str:
    p = case.params
    constants = _constants({"TILING": p["tiling"], "DIVISOR": p["divisor"]})
    words = "the docstring: the tiling's minor dim divisible by DIVISOR; true where the last dim is untiled"
    doc = ("Mosaic GPU's constraints.MinorDimDivisibleBy on the SMEM tiling TILING: its docstring says the minor "
           "dim of the tiling is divisible by the divisor, and true where the last dimension is untiled.")
    body = (f"\n{constants}{_SMEM}" + _HOLDS_BODY
            .replace("CONSTRAINT", "cs.MinorDimDivisibleBy(smem(TILING), DIVISOR)")
            .replace("DEFINITION", "not TILING or TILING[-1] % DIVISOR == 0"))
    return _script(case, doc, words, body)


SCRIPTS = {"transform_attr": _transform_attr, "nested_strides": _nested_strides, "transpose": _transpose,
           "collapse_shape": _collapse_shape, "mma_tiling": _mma_tiling, "minor_divisible": _minor_divisible}
