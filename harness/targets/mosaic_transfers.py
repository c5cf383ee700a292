"""Target ``mosaic.transfers``: JAX Mosaic GPU's shared-memory transforms and transfer planning (transform
attributes, ``Tiling.tile_nested_shape_strides``, ``plan_tiled_transfer``, ``tiled_copy_smem_gmem_layout``, the
transposed and collapsed SMEM tilings of ``constraints``, ``IsValidMmaTiling``, ``MinorDimDivisibleBy``) over the
whole domain they accept, each answer judged by its definition (``oracles.mosaic_transfers``), never by Mosaic's code.

A refusal is judged too: against the documented precondition (a refusal where it fails passes; one where it holds
is a spurious refusal), and a transfer-planning refusal against a brute-force search of the plans Mosaic documents
(a trivial plan, or a staggered one) under the 32-bank x 4-byte model.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from math import prod
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.mosaic_transfers import BITWIDTHS, OPS, SWIZZLES, case
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Unsupported
from layoutfuzz.harness.targets.mosaic_base import MosaicTarget
from layoutfuzz.oracles import mosaic_transfers as mt
from layoutfuzz.oracles.linear_layout import LayoutError

RELATION = {"transform_attr": "transform attribute round trip", "nested_strides": "tiled nested shape and strides",
            "plan_transfer": "SMEM transfer plan", "copy_layout": "tiled copy layout",
            "transpose": "transposed SMEM tiling", "collapse_shape": "collapsed SMEM tiling",
            "mma_tiling": "IsValidMmaTiling", "minor_divisible": "MinorDimDivisibleBy"}
SEARCH = 60  # staggered plans tried before a planning refusal is judged right


class MosaicTransfers(MosaicTarget):
    name = "mosaic.transfers"
    layer = "JAX Mosaic GPU (layouts, fragmented_array, constraints: SMEM transforms and transfers)"
    description = ("JAX Mosaic GPU's SMEM transforms and transfer planning (transform attrs, nested tiling, "
                   "plan_tiled_transfer, copy layouts, transpose/collapse tilings) against their definitions")
    module = "constraints"

    def generate(self, source: Source) -> dict[str, Any]:
        return case(source)

    def validate(self, case: Case) -> None:
        p = case.params
        if p.get("op") not in OPS:
            raise ValueError(f"op must be one of {', '.join(OPS)}")
        for key in ("shape", "tiling", "tiles"):
            value = p.get(key)
            if isinstance(value, list) and any(not isinstance(n, int) or n < 1 for n in _flat(value)):
                raise ValueError(f"{key} holds positive ints")
        if p["op"] in ("transpose", "collapse_shape", "plan_transfer") and not p["shape"]:
            raise ValueError("a shape of rank 1 or more")
        if p["op"] == "transpose" and sorted(p["permutation"]) != list(range(len(p["shape"]))):
            raise ValueError("a permutation of the dims")
        if p["op"] == "collapse_shape" and (sum(p["groups"]) != len(p["shape"]) or min(p["groups"]) < 1):
            raise ValueError("groups cover the dims")
        if p["op"] in ("transpose", "collapse_shape") and p["tiling"] is not None and len(p["tiling"]) > len(p["shape"]):
            raise ValueError("a tiling of at most the shape's rank")
        if p["op"] == "nested_strides" and [prod(d) for d in p["nested_shape"]] != p["shape"]:
            raise ValueError("the nested shape multiplies to the shape")
        if p["op"] == "plan_transfer":
            try:
                mt.tiled_coordinates(p["shape"], p["layout"]["tiles"])
            except LayoutError as exc:
                raise ValueError("the layout applies to the shape") from exc
            if p["smem_tiling"] is not None and not mt.applies(p["shape"], p["smem_tiling"]):
                raise ValueError("the SMEM tiling applies to the shape")
        if p.get("bits") is not None and p["bits"] not in BITWIDTHS:
            raise ValueError("an element bitwidth Mosaic has")
        if p.get("swizzle") is not None and p["swizzle"] not in SWIZZLES:
            raise ValueError("a swizzle Mosaic has")

    def family(self, case: Case) -> str:
        return case.params["op"]

    def parameter_space(self) -> Space:
        api = "Mosaic GPU layouts.py, fragmented_array.py, constraints.py (jax 0.10.2)"
        return Space((
            Parameter("op", OPS, api, lambda p: p["op"]),
            Parameter("region", ("edge", "inside"), "the domain's edges: sizes 1, primes, extreme widths and swizzles",
                      lambda p: "edge" if p["edge"] else "inside", edges=("edge",)),
            Parameter("element bitwidth", BITWIDTHS, "Mosaic: 4- to 64-bit elements", lambda p: p.get("bits")),
            Parameter("swizzle", SWIZZLES, "SwizzlingMode: 16 (none), 32, 64, 128 bytes", lambda p: p.get("swizzle")),
        ), lambda a, x, b, y: False)

    def expected(self, case: Case) -> Any:
        p = case.params
        if p["op"] == "transform_attr":
            return {"same": True}
        if p["op"] == "mma_tiling":
            return {"answer": mt.valid_mma_tiling(p["tiling"], p["bits"], p["allow_unswizzled"])}
        if p["op"] == "minor_divisible":
            return {"answer": mt.minor_dim_divisible(p["tiling"], p["divisor"])}
        return {"property": RELATION[p["op"]]}

    def observed(self, case: Case) -> Any:
        return RUN[case.params["op"]](case.params)

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        p = case.params
        relation = RELATION[p["op"]]
        if "answer" in expected or "same" in expected:
            key = "answer" if "answer" in expected else "same"
            if "raised" in observed:
                return _fail(relation, "spurious refusal", observed["raised"], p)
            if observed[key] == expected[key]:
                return Comparison(True)
            what = ("answer differs from its definition" if key == "answer" else "does not read back equal")
            return _fail(relation, what, f"Mosaic {observed}, by definition {expected[key]}", p)
        problem, kind = JUDGE[p["op"]](p, observed)
        if problem is None:
            return Comparison(True)
        if ": " in kind:  # another relation's fault, met on the way
            relation, kind = kind.split(": ", 1)
        return _fail(relation, kind, problem, p)

    def reproducer_script(self, case: Case) -> str | None:
        """A script that needs only JAX and NumPy (``layoutfuzz export``), for every op the target draws: the case
        built with Mosaic's public API, the answer judged by the definition written in (``mosaic_transfer_scripts``, ``mosaic_plan_scripts``)."""
        from layoutfuzz.harness.targets.mosaic_plan_scripts import reproducer

        return reproducer(case)


def _fail(relation: str, kind: str, detail: str, p: Mapping[str, Any]) -> Comparison:
    return Comparison(False, 1, (detail,), f"{relation}: {kind}", f"{p['op']}: {detail}")


def _flat(value: Any) -> Iterator[Any]:
    for v in value:
        if isinstance(v, list):
            yield from _flat(v)
        else:
            yield v


# ---- the system under test -------------------------------------------------------------------------------------------

@contextlib.contextmanager
def _mlir() -> Iterator[None]:
    from jax._src.lib import mosaic_gpu_dialect as mgpu
    from jaxlib.mlir import ir

    with ir.Context() as ctx, ir.Location.unknown():
        mgpu.register_dialect(ctx)
        yield


def _call(fn: Any) -> dict[str, Any]:
    try:
        return {"answer": fn()}
    except Exception as exc:
        return {"raised": f"{type(exc).__name__}: {str(exc)[:300]}"}


def _smem(tiling: list[int] | None) -> Any:
    from jax.experimental.mosaic.gpu import constraints as cs
    from jax.experimental.mosaic.gpu import launch_context as lc

    transform = None if tiling is None else lc.TileTransform(tuple(tiling))
    if "swizzle" in getattr(cs.SMEMTransforms, "__dataclass_fields__", {}):  # jax 0.12: a swizzle beside the tiling
        return cs.SMEMTransforms(transform, None)
    return cs.SMEMTransforms(transform)


def _transform_attr(p: Mapping[str, Any]) -> dict[str, Any]:
    from jax._src.lib import mosaic_gpu_dialect as mgpu
    from jax.experimental.mosaic.gpu import launch_context as lc
    from jax.experimental.mosaic.gpu import layouts

    if "swizzle" in p:
        transform = mgpu.SwizzlingMode(p["swizzle"])
    else:
        rounding = None if p["rounding"] is None else lc.Rounding[p["rounding"]]
        transform = lc.TileTransform(tuple(p["tiling"]), rounding)
    with _mlir():
        out = _call(lambda: layouts.from_transform_attr(layouts.to_transform_attr(transform)))
    return out if "raised" in out else {"same": out["answer"] == transform, "back": repr(out["answer"])}


def _nested_strides(p: Mapping[str, Any]) -> dict[str, Any]:
    from jax.experimental.mosaic.gpu import fragmented_array as fa

    tiling = fa.Tiling(tuple(tuple(t) for t in p["tiles"]))
    out = _call(lambda: tiling.tile_nested_shape_strides(tuple(map(tuple, p["nested_shape"])),
                                                          tuple(map(tuple, p["nested_strides"]))))
    if "raised" in out:
        return out
    shape, strides = out["answer"]
    return {"answer": {"shape": [list(s) for s in shape], "strides": [list(s) for s in strides]}}


def _layout(data: Mapping[str, Any]) -> Any:
    from jax.experimental.mosaic.gpu import fragmented_array as fa

    def mdims(ds: list[Any]) -> tuple[Any, ...]:
        return tuple(fa.Replicated(d["replicated"]) if isinstance(d, dict) else d for d in ds)
    drawn = fa.TiledLayout(fa.Tiling(tuple(tuple(t) for t in data["tiles"])), mdims(data["warp_dims"]),
                           mdims(data["lane_dims"]), data["vector_dim"], _check_canonical=False)
    try:
        return drawn.canonicalize()
    except ValueError as exc:  # mosaic.layouts' known finding (a size-1 vector dim)
        raise Unsupported(f"canonicalize() of the drawn layout raised: {exc}") from exc


def _layout_data(layout: Any) -> dict[str, Any]:
    from jax.experimental.mosaic.gpu import fragmented_array as fa

    def ddims(ds: Any) -> list[Any]:
        return [{"replicated": d.times} if isinstance(d, fa.Replicated) else d for d in ds]
    return {"tiles": [list(t) for t in layout.tiling.tiles], "warp_dims": ddims(layout.warp_dims),
            "lane_dims": ddims(layout.lane_dims), "vector_dim": layout.vector_dim}


def _plan(plan: Any) -> dict[str, Any]:
    from jax.experimental.mosaic.gpu import fragmented_array as fa

    if isinstance(plan, fa.StaggeredTransferPlan):
        return {"kind": "staggered", "stagger": plan.stagger, "dim": plan.dim, "size": plan.size,
                "group_stride": plan.group_stride}
    if isinstance(plan, fa.TrivialTransferPlan):
        return {"kind": "trivial"}
    return {"kind": type(plan).__name__}


def _plan_transfer(p: Mapping[str, Any]) -> dict[str, Any]:
    from jax.experimental.mosaic.gpu import fragmented_array as fa

    layout = _layout(p["layout"])
    nshape, nstrides = mt.tiled_memref_nested(p["shape"], p["smem_tiling"])
    out = _call(lambda: _plan(fa.plan_tiled_transfer(nshape, nstrides, layout, p["bits"], p["swizzle"])))
    tiled = _call(lambda: layout.tiling.tile_nested_shape_strides(tuple(map(tuple, nshape)), tuple(map(tuple, nstrides))))
    if "raised" in tiled:  # the register tiling does not nest in the SMEM ref's: judged as that relation's refusal
        return {**out, "given": _layout_data(layout), "nested_raised": tiled["raised"]}
    return {**out, "given": _layout_data(layout), "tiled_nested_shape": [list(s) for s in tiled["answer"][0]]}


def _copy_layout(p: Mapping[str, Any]) -> dict[str, Any]:
    from jax.experimental.mosaic.gpu import fragmented_array as fa

    out = _call(lambda: _layout_data(fa.tiled_copy_smem_gmem_layout(p["row_tiles"], p["col_tiles"], p["swizzle"],
                                                                     p["bits"])))
    return out


def _reduced_smem(expr: Any) -> Any:
    from jax.experimental.mosaic.gpu import constraints as cs

    if isinstance(expr, cs.Unsatisfiable):
        return "unsatisfiable"
    if isinstance(expr, cs.SMEMTransforms):
        return {"tiling": None if expr.tiling is None else list(expr.tiling.tiling)}
    return f"unreduced {type(expr).__name__}"


def _transpose(p: Mapping[str, Any]) -> dict[str, Any]:
    from jax.experimental.mosaic.gpu import constraints as cs

    expr = cs.Transpose(_smem(p["tiling"]), tuple(p["permutation"]))
    out = _call(lambda: _reduced_smem(cs.reduce_transpose_expression(expr, {})))
    return out


def _collapse_shape(p: Mapping[str, Any]) -> dict[str, Any]:
    from jax.experimental.mosaic.gpu import constraints as cs

    expr = cs.CollapseShape(_smem(p["tiling"]), tuple(p["shape"]), tuple(p["groups"]))
    return _call(lambda: _reduced_smem(cs.reduce_collapse_shape_expression(expr, {})))


def _mma_tiling(p: Mapping[str, Any]) -> dict[str, Any]:
    from jax.experimental.mosaic.gpu import constraints as cs

    if not hasattr(cs, "IsValidMmaTiling"):  # gone from constraints in jax 0.12
        raise Unsupported("this jax has no constraints.IsValidMmaTiling")
    return _call(lambda: bool(cs.IsValidMmaTiling(_smem(p["tiling"]), p["bits"], p["allow_unswizzled"]).holds()))


def _minor_divisible(p: Mapping[str, Any]) -> dict[str, Any]:
    from jax.experimental.mosaic.gpu import constraints as cs

    return _call(lambda: bool(cs.MinorDimDivisibleBy(_smem(p["tiling"]), p["divisor"]).holds()))


RUN = {"transform_attr": _transform_attr, "nested_strides": _nested_strides, "plan_transfer": _plan_transfer,
       "copy_layout": _copy_layout, "transpose": _transpose, "collapse_shape": _collapse_shape,
       "mma_tiling": _mma_tiling, "minor_divisible": _minor_divisible}


# ---- the judgements: (what is wrong or None, the kind of mismatch) ---------------------------------------------------

def _judge_nested(p: Mapping[str, Any], o: Mapping[str, Any]) -> tuple[str | None, str]:
    answer = None if "raised" in o else o["answer"]
    if "raised" in o and not o["raised"].startswith("ValueError"):
        return o["raised"], "spurious refusal"
    problem = mt.judge_nested(p["shape"], p["nested_shape"], p["nested_strides"], p["tiles"], answer)
    return problem, "spurious refusal" if answer is None else "misplaces elements"


def _transfer(p: Mapping[str, Any], layout: Mapping[str, Any]) -> mt.Transfer:
    nshape, nstrides = mt.tiled_memref_nested(p["shape"], p["smem_tiling"])
    return mt.Transfer(p["shape"], layout, nshape, nstrides, p["bits"], p["swizzle"])


def _tile_nesting(t: mt.Transfer, tiled_nested_shape: list[list[int]]) -> tuple[list[list[int]], list[tuple[int, int]]]:
    """The nested radices of the tile dims (Mosaic's flattened ``tiles_shape`` order) and, for each flattened position
    over all tiled dims, (tile dim position, digit offset) or (-1, -1) for a dim of warps, lanes or the vector."""
    nested = [tiled_nested_shape[k] for k in t.tile_dims]
    where, offset = [], 0
    for k, subs in enumerate(tiled_nested_shape):
        for _ in subs:
            if k in t.tile_dims:
                where.append((t.tile_dims.index(k), offset))
                offset += 1
            else:
                where.append((-1, -1))
    return nested, where


def _candidates(t: mt.Transfer, nested: list[list[int]]) -> Iterator[Any]:
    radices = [t.dims[k].size for k in t.tile_dims]
    yield mt.trivial
    maps = mt.nested_digits(radices, nested)
    flat = [s for subs in nested for s in subs]
    count = 0
    for dim, size in enumerate(flat):
        if size < 2:
            continue
        for group_stride in (1, 2, 4, 8, 16):
            for stagger in range(1, size):
                count += 1
                if count > SEARCH:
                    return
                yield mt.staggered(radices, maps, stagger, dim, size, group_stride)


def _judge_plan(p: Mapping[str, Any], o: Mapping[str, Any]) -> tuple[str | None, str]:
    if "nested_raised" in o:
        nshape, nstrides = mt.tiled_memref_nested(p["shape"], p["smem_tiling"])
        problem = mt.judge_nested(p["shape"], nshape, nstrides, o["given"]["tiles"], None)
        return problem, f"{RELATION['nested_strides']}: spurious refusal"
    t = _transfer(p, o["given"])
    nested_ok = all(prod(subs) == d.size for subs, d in zip(o["tiled_nested_shape"], t.dims))
    if not nested_ok or len(o["tiled_nested_shape"]) != len(t.dims):
        return f"the tiled nested shape {o['tiled_nested_shape']} does not split the tiled dims", "misplaces elements"
    nested, where = _tile_nesting(t, o["tiled_nested_shape"])
    nbytes = t.transfer_bits / 8
    if not t.contiguous():
        return None, ""  # transfer_tiled refuses a ref whose vector dim is not at stride 1: no transfer uses this plan
    if "raised" in o:
        error = o["raised"]
        if p["bits"] > 32 or nbytes > 16:
            return None, ""  # the documented "not implemented" limits
        if error.startswith("AssertionError") and t.transfer_bits % 8:
            return None, ""  # a vector of a fractional number of bytes: checked at the call site
        for plan in _candidates(t, nested):
            problem, bad = t.judge(plan, limit=0)
            if problem is None and bad == 0:
                return f"refused ({error}); a conflict-free plan exists", "spurious refusal"
        return None, ""
    plan = o["answer"]
    if plan["kind"] == "trivial":
        tile_of_lane = mt.trivial
    else:
        k, offset = where[plan["dim"]]
        if k < 0:
            return f"staggers dim {plan['dim']}, a dim of warps, lanes or the vector", "plan violates its definition"
        flat = [s for subs in nested for s in subs]
        if flat[offset] != plan["size"]:
            return f"staggers dim {plan['dim']} modulo {plan['size']}, its size is {flat[offset]}", "plan violates its definition"
        tile_of_lane = mt.staggered([t.dims[k].size for k in t.tile_dims], mt.nested_digits([], nested),
                                    plan["stagger"], offset, plan["size"], plan["group_stride"])
    problem, bad = t.judge(tile_of_lane)
    if bad < 0:
        return None, ""  # sub-byte elements not in vectors: no access the hardware makes
    if problem is not None:
        return problem, "plan violates its definition"
    if bad:
        where_ = "sub-word transfers" if nbytes < 4 else "whole words"
        return (f"{plan['kind']} plan: {bad} conflicting phases under 32 banks x 4 bytes (transfer {nbytes:g} bytes)",
                f"bank conflicts in a plan claimed conflict-free ({where_})")
    return None, ""


def _judge_copy(p: Mapping[str, Any], o: Mapping[str, Any]) -> tuple[str | None, str]:
    swizzle_elems = 8 * p["swizzle"] // p["bits"]
    if "raised" in o:
        error = o["raised"]
        if "not a multiple of 4" in error and (p["row_tiles"] * p["col_tiles"]) % 4:
            return None, ""
        if "bitwidth so large" in error:
            return None, ""  # documented: elements wider than a thread's transfer
        return f"refused ({error})", "spurious refusal"
    layout = o["answer"]
    shape = [p["row_tiles"] * 8, p["col_tiles"] * swizzle_elems]
    try:
        t = mt.Transfer(shape, layout, *mt.tiled_memref_nested(shape, [8, swizzle_elems]), p["bits"], p["swizzle"])
    except LayoutError as exc:
        return f"the layout does not apply to the {shape} array: {exc}", "layout violates its definition"
    if any(d is None for kind in ("warp", "lane") for d, _ in t.parts[kind]):
        return "the copy layout replicates elements", "layout violates its definition"
    problem, bad = t.judge(mt.trivial)
    if problem is not None:
        return problem, "layout violates its definition"
    if bad:
        return f"{bad} conflicting phases under 32 banks x 4 bytes", "bank conflicts in the copy"
    return None, ""


def _judge_transpose(p: Mapping[str, Any], o: Mapping[str, Any]) -> tuple[str | None, str]:
    if "raised" in o:
        return o["raised"], "spurious refusal"
    if isinstance(o["answer"], str) and o["answer"].startswith("unreduced"):
        return o["answer"], "left unreduced"
    problem = mt.judge_transpose(p["shape"], p["tiling"], p["permutation"], o["answer"])
    return problem, "spurious refusal" if o["answer"] == "unsatisfiable" else "violates its definition"


def _judge_collapse(p: Mapping[str, Any], o: Mapping[str, Any]) -> tuple[str | None, str]:
    if "raised" in o:
        return o["raised"], "spurious refusal"
    if isinstance(o["answer"], str) and o["answer"].startswith("unreduced"):
        return o["answer"], "left unreduced"
    problem = mt.judge_collapse(p["shape"], p["tiling"], p["groups"], o["answer"])
    return problem, "spurious refusal" if o["answer"] == "unsatisfiable" else "violates its definition"


JUDGE = {"nested_strides": _judge_nested, "plan_transfer": _judge_plan, "copy_layout": _judge_copy,
         "transpose": _judge_transpose, "collapse_shape": _judge_collapse}
