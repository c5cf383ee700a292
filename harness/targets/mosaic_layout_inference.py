"""Target ``mosaic.layout_inference``: JAX Mosaic GPU's layout inference (``layout_inference.infer_layout``) on small
generated programs (``generators.mosaic_programs``), run on the CPU on an MLIR module built as jax's own
``tests/mosaic/gpu_layout_inference_test.py`` builds it (``llvm.mlir_undef`` operands with the test's undef rule).

Judgement (``oracles.mosaic_inference``): where inference succeeds, every op's inferred in and out layouts must
satisfy the op's defining property (a violation is bucketed by op and property); where it refuses with a Python error,
the refusal is spurious if a consistent assignment exists: the worker searches one (each op's candidates: the operand's
layout, the named layouts, splat and strided ones, and Mosaic's own reduced or reshaped layout as a proposal) and the
oracle alone verifies it. A refusal without a verified witness passes. An abort is a crash (the worker isolates it).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.mosaic_programs import ALL_NAMED, CHAIN_OPS, named, program
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.targets.mosaic_base import MosaicTarget
from layoutfuzz.oracles import mosaic_inference as inf
from layoutfuzz.oracles.linear_layout import LayoutError

SEARCH_BUDGET = 400  # candidate assignments the witness search checks at most


class MosaicLayoutInference(MosaicTarget):
    name = "mosaic.layout_inference"
    layer = "JAX Mosaic GPU (layout_inference, constraints)"
    description = "JAX Mosaic GPU's layout inference on generated programs, each op's inferred layouts judged"
    module = "layout_inference"

    def generate(self, source: Source) -> dict[str, Any]:
        return program(source)

    def validate(self, case: Case) -> None:
        ops = case.params.get("ops")
        if not isinstance(ops, list) or not ops:
            raise ValueError("ops is a non-empty list")
        for i, op in enumerate(ops):
            if op.get("op") not in inf.OPERANDS or any(not 0 <= a < i for a in inf.operands(op)):
                raise ValueError("each op reads earlier values")
        try:
            shapes = inf.value_shapes(ops)
        except (KeyError, IndexError, TypeError) as exc:
            raise ValueError(f"malformed op: {exc}") from exc
        for i, op in enumerate(ops):
            _validate_op(op, shapes, i)

    def family(self, case: Case) -> str:
        return "+".join(sorted(set(case.params["chain"]))) or "cast"

    def parameter_space(self) -> Space:
        api = "Mosaic GPU layout_inference.py (jax 0.10.2)"
        return Space((
            Parameter("chain op", CHAIN_OPS, api, lambda p: p["chain"][0] if p["chain"] else None),
            Parameter("chain length", (1, 2, 3, 4), "2-4 ops, and single ones", lambda p: len(p["chain"])),
            Parameter("root rank", (1, 2, 3, 4), "Mosaic: any rank", lambda p: len(p["ops"][0]["shape"])),
            Parameter("region", ("edge", "inside"), "dims 1, primes, below the tile",
                      lambda p: "edge" if p["edge"] else "inside"),
        ), lambda a, x, b, y: False)

    def expected(self, case: Case) -> Any:
        return {"property": "each op's inferred layouts satisfy its definition; a refusal only where none exists"}

    def observed(self, case: Case) -> Any:
        """{"layouts": per op {"in", "out"}} where inference succeeded; else {"raised", "decisive" (the first op whose
        prefix of the program Mosaic refuses), "witness" (a consistent assignment, or None)}."""
        ops = case.params["ops"]
        out = infer(ops)
        if "raised" not in out:
            return out
        found = witness(ops)
        at = decisive_op(ops) if found is not None else None
        why = diagnose(ops, at, found) if found is not None and at is not None else None
        return {**out, "decisive": at, "witness": found, "diagnosis": why}

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        ops = case.params["ops"]
        if "raised" in observed:
            return _judge_refusal(ops, observed)
        try:
            found = inf.check(ops, observed["layouts"])
        except LayoutError as exc:
            return Comparison(False, 1, (str(exc),), "inferred layout: not a layout", str(exc))
        if not found:
            return Comparison(True)
        first = found[0]
        lines = tuple(f"op {v.op} ({inf.MLIR_NAME[v.kind]}): {v.prop}: {v.detail}" for v in found)
        return Comparison(False, len(found), lines[:8], first.signature, lines[0])


    def reproducer_script(self, case: Case) -> str | None:
        """A script that needs only JAX (``layoutfuzz export``); None where the case's finding is a property the
        script does not check (the placements of reductions, reshapes and broadcasts)."""
        observed = self.observed(case)
        verdict = self.compare(case, self.expected(case), observed)
        if not verdict.ok and not verdict.signature.startswith("spurious refusal") and \
                not verdict.signature.endswith(SCRIPT_PROPERTIES):
            return None
        return reproducer(case, observed.get("witness"))


def _validate_op(op: Mapping[str, Any], shapes: Sequence[tuple[int, ...]], i: int) -> None:
    if any(n < 1 for n in shapes[i]) or not 1 <= len(shapes[i]) <= 4:
        raise ValueError("values have rank 1-4 and positive dims")
    kind = op["op"]
    if kind == "reduce" and (not op["axes"] or sorted(set(op["axes"])) != op["axes"]
                             or op["axes"][-1] >= len(shapes[op["src"]]) or shapes[op["acc"]] != shapes[i]):
        raise ValueError("a reduction takes sorted axes of its operand and an accumulator of its result's shape")
    if kind == "add" and shapes[op["a"]] != shapes[op["b"]]:
        raise ValueError("an add takes operands of one shape")
    if kind == "shape_cast" and _size(shapes[op["src"]]) != _size(shapes[i]):
        raise ValueError("a shape_cast keeps the number of elements")
    if kind == "broadcast":
        src, dst, dims = shapes[op["src"]], op["shape"], op["dims"]
        if len(dims) != len(src) or sorted(set(dims)) != dims or any(
                not 0 <= d < len(dst) or src[k] not in (1, dst[d]) for k, d in enumerate(dims)):
            raise ValueError("a broadcast maps each source dim, in order, to a result dim of its size or from 1")


def _size(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _judge_refusal(ops: Sequence[Mapping[str, Any]], observed: Mapping[str, Any]) -> Comparison:
    assignment = observed.get("witness")
    if assignment is None or inf.check(ops, assignment):
        return Comparison(True)  # no consistent assignment found: a right refusal, as far as the oracle knows
    at = observed.get("decisive")
    where = "the whole program" if at is None else inf.MLIR_NAME[ops[at]["op"]]
    why = observed.get("diagnosis") or _message_kind(observed["raised"])
    if why.startswith("search"):  # one root cause whichever op met it: the search never proposes these layouts
        where = "an op whose relations all hold"
    elif why.startswith("Relayout"):  # a relayout between values, whichever op reads the value
        where = "a relayout"
    return Comparison(False, 1, (observed["raised"], f"at op {at}: {_op_name(ops, at) if at is not None else ''}"),
                      f"spurious refusal at {where}: {why}",
                      f"inference raised {observed['raised']}, though this assignment is consistent: "
                      f"{_show(ops, assignment)}")


def _op_name(ops: Sequence[Mapping[str, Any]], i: int) -> str:
    """The op's Mosaic name, with its operand's producer where that is an op of the chain (a shape_cast of a
    multi_reduction: a keepdims-like reshape)."""
    op = ops[i]
    name = inf.MLIR_NAME[op["op"]]
    producers = {ops[a]["op"] for a in inf.operands(op)} - {"undef", "cast"}
    return f"{name} of {'/'.join(inf.MLIR_NAME[p] for p in sorted(producers))}" if producers else name


def _message_kind(raised: str) -> str:
    """An error's type and its first clause, without numbers or layouts."""
    kind, _, message = raised.partition(": ")
    head = re.split(r"[.:(\[{#]", message, maxsplit=1)[0]
    return f"{kind}: {re.sub(r'[0-9]+', 'N', head).strip()[:80]}"


def _show(ops: Sequence[Mapping[str, Any]], assignment: Sequence[Mapping[str, Any]]) -> str:
    return "; ".join(f"{i} {inf.MLIR_NAME[op['op']]}: {_short(a['out'][0])}" for i, (op, a) in enumerate(zip(ops, assignment)))


def _short(layout: Mapping[str, Any]) -> str:
    if layout["kind"] != "tiled":
        return layout["kind"]
    return layout.get("name") or _name_of(layout) or f"tiled {layout['tiles']}"


def _name_of(layout: Mapping[str, Any]) -> str | None:
    return next((n for n, d in ALL_NAMED.items() if all(layout.get(k) == v for k, v in d.items())), None)


# ---- the system under test: the module, inference, and the inferred layouts as data ---------------------------------

_RULE: list[bool] = []


def _register_undef_rule() -> None:
    """The undef rule of jax's gpu_layout_inference_test.py: an undef's result is a variable of its own."""
    if _RULE:
        return
    from jax._src.lib.mlir.dialects import llvm
    from jax.experimental.mosaic.gpu import constraints as cs
    from jax.experimental.mosaic.gpu import layout_inference

    def undef_rule(ctx: Any, op: Any) -> Any:
        result = layout_inference.ValueSite(op, layout_inference.VariableType.RESULT, 0)
        return cs.ConstraintSystem(), {cs.Variable(result): [result]}

    layout_inference._add_constraint_system_derivation_rule(llvm.UndefOp)(undef_rule)
    _RULE.append(True)


def infer(ops: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Mosaic's inferred layouts of a program, or its refusal as text."""
    import jax.experimental.mosaic.gpu as mgpu
    from jax._src.interpreters import mlir as mlir_interpreter
    from jax._src.lib.mlir import ir

    _register_undef_rule()
    ctx = ir.Context()
    ctx.append_dialect_registry(mlir_interpreter.upstream_dialects)
    ctx.load_all_available_dialects()
    mgpu.dialect.register_dialect(ctx)
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            built = _build(ops)
        try:
            mgpu.infer_layout(module)
        except Exception as exc:
            return {"raised": f"{type(exc).__name__}: {str(exc)[:300]}"}
        return {"layouts": [_layouts_of(op) for op in built]}


def _build(ops: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The program's MLIR ops (f32 vectors), in order."""
    from jax._src.lib.mlir import ir
    from jax._src.lib.mlir.dialects import arith, llvm, vector
    from jax.experimental.mosaic import gpu as mgpu
    from jax.experimental.mosaic.gpu import layouts

    from layoutfuzz.harness.targets.mosaic_layout_relations import _mosaic

    f32 = ir.F32Type.get()
    values: list[Any] = []
    for op, shape in zip(ops, inf.value_shapes(ops)):
        ty = ir.VectorType.get(list(shape), f32)
        kind = op["op"]
        if kind == "undef":
            v = llvm.mlir_undef(ty)
        elif kind == "cast":
            v = mgpu.dialect.layout_cast(values[op["src"]], layouts.to_layout_attr(_mosaic(op["layout"])))
        elif kind == "reduce":
            v = vector.MultiDimReductionOp(vector.CombiningKind.ADD, values[op["src"]], values[op["acc"]],
                                           op["axes"]).result
        elif kind == "broadcast":
            v = mgpu.dialect.broadcast_in_dim(ty, values[op["src"]], op["dims"])
        elif kind == "add":
            v = arith.addf(values[op["a"]], values[op["b"]])
        else:
            v = vector.shape_cast(ty, values[op["src"]])
        values.append(v)
    return [v.owner for v in values]


def _layouts_of(op: Any) -> dict[str, list[Any]]:
    from jax.experimental.mosaic.gpu import layouts

    from layoutfuzz.harness.targets.mosaic_layout_relations import _data

    def read(name: str) -> list[Any]:
        return [_data(layouts.from_layout_attr(a)) for a in op.attributes[name]] if name in op.attributes else []
    return {"in": read("in_layouts"), "out": read("out_layouts")}


def decisive_op(ops: Sequence[Mapping[str, Any]]) -> int | None:
    """The first op whose program prefix (ops up to it) Mosaic refuses; None if only the whole program is."""
    for k, op in enumerate(ops):
        if op["op"] != "undef" and "raised" in infer(ops[:k + 1]):
            return k
    return None


# ---- the witness: a consistent assignment, searched with candidates, verified by the oracle ---------------------------

def witness(ops: Sequence[Mapping[str, Any]]) -> list[dict[str, list[Any]]] | None:
    """A consistent assignment of the program (per op {"in", "out"}) if the search finds one, else None."""
    shapes = inf.value_shapes(ops)
    layouts: list[dict[str, list[Any]] | None] = [None] * len(ops)
    budget = [SEARCH_BUDGET]
    if not _search(ops, shapes, layouts, 0, budget):
        return None
    return [a if a is not None else {"in": [], "out": [{"kind": "splat", "shape": list(s)}]}
            for a, s in zip(layouts, shapes)]


def _search(ops: Sequence[Mapping[str, Any]], shapes: Sequence[tuple[int, ...]], layouts: list[Any], i: int,
            budget: list[int]) -> bool:
    while i < len(ops) and ops[i]["op"] == "undef":
        i += 1
    if i == len(ops):
        return True
    args = inf.operands(ops[i])
    for ins, out in _candidates(ops, shapes, layouts, i):
        if budget[0] <= 0:
            return False
        budget[0] -= 1
        saved = [layouts[a] for a in args]
        for a, layout in zip(args, ins):  # an undef takes what its consumer reads
            if ops[a]["op"] == "undef":
                layouts[a] = {"in": [], "out": [layout]}
        layouts[i] = {"in": list(ins), "out": [out]}
        try:
            ok = not any(inf.check_op(j, ops[j], layouts, shapes) for j in (*args, i))
        except LayoutError:
            ok = False
        if ok and _search(ops, shapes, layouts, i + 1, budget):
            return True
        for a, layout in zip(args, saved):
            layouts[a] = layout
        layouts[i] = None
    return False


def _candidates(ops: Sequence[Mapping[str, Any]], shapes: Sequence[tuple[int, ...]], layouts: list[Any],
                i: int) -> Iterator[tuple[list[Any], Any]]:
    """(operand layouts, result layout) to try for op i, given the layouts of the ops before it."""
    op, shape = ops[i], shapes[i]
    known = [layouts[a]["out"][0] if layouts[a] is not None else None for a in inf.operands(op)]
    splat = {"kind": "splat", "shape": list(shape)}
    kind = op["op"]
    if kind == "cast":
        yield [known[0] or op["layout"]], op["layout"]
        return
    if kind == "add":
        a, b = known
        if a is None and b is None:
            yield [splat, splat], splat
        for x in (a, b):
            if x is not None:
                yield [x, x], x
        return
    src = known[0] or {"kind": "splat", "shape": list(shapes[op["src"]])}
    for out in _results(op, src, shapes[op["src"]], shape):
        yield ([src, out] if kind == "reduce" else [src]), out


def _results(op: Mapping[str, Any], src: Mapping[str, Any], src_shape: tuple[int, ...],
             shape: tuple[int, ...]) -> Iterator[Any]:
    """Result layouts to try: a splat from a splat, a strided one from a strided one, else the operand's layout, the
    named layouts and Mosaic's proposal, in that order (the oracle judges each)."""
    if src["kind"] == "splat":
        yield {"kind": "splat", "shape": list(shape)}
        return
    if src["kind"] == "strided":
        if op["op"] != "reduce":
            yield {"kind": "strided", "shape": list(shape), "vec_size": src["vec_size"]}
        return
    seen: list[Any] = []
    for layout in (src, *(named(n) for n in ALL_NAMED), _proposal(op, src, src_shape, shape)):
        if layout is not None and inf.applies(layout, shape) and not any(inf.same(layout, s, shape) for s in seen):
            seen.append(layout)
            yield layout


def _proposal(op: Mapping[str, Any], src: Mapping[str, Any], src_shape: tuple[int, ...],
              shape: tuple[int, ...]) -> Any:
    """Mosaic's own reduced (``TiledLayout.reduce``) or reshaped (``reduce_reshape_expression``) layout, or None."""
    from jax.experimental.mosaic.gpu import constraints as cs

    from layoutfuzz.harness.targets.mosaic_layout_relations import _data, _mosaic

    try:
        layout = _mosaic(src)
        if op["op"] == "reduce":
            untiled = len(src_shape) - len(layout.base_tile_shape)
            axes = [a - untiled for a in op["axes"] if a >= untiled]
            return _data(layout.reduce(axes)) if axes else None
        if op["op"] == "shape_cast":
            out = cs.reduce_reshape_expression(cs.Reshape(cs.RegisterLayout(layout), src_shape, shape), {})
            return _data(out.value) if isinstance(out, cs.RegisterLayout) else None
    except Exception:
        return None
    return None


# ---- the second route: which of Mosaic's relations refuses the witness at the decisive op ------------------------------

def diagnose(ops: Sequence[Mapping[str, Any]], i: int, found: Sequence[Mapping[str, Any]]) -> str:
    """The relation of ``constraints`` that rejects the witness's layouts at op i, in words; where every one holds,
    the search never proposed the witness's layouts."""
    from jax.experimental.mosaic.gpu import constraints as cs

    from layoutfuzz.harness.targets.mosaic_layout_relations import _mosaic

    op, shapes = ops[i], inf.value_shapes(ops)
    ins, out = found[i]["in"], found[i]["out"][0]
    reg = lambda layout: cs.RegisterLayout(_mosaic(layout))  # noqa: E731
    for a, x in zip(inf.operands(op), ins):
        p = found[a]["out"][0]
        if not inf.same(p, x, shapes[a]) and not cs.Relayout(reg(p), reg(x), 32, strict=True).holds():
            return f"Relayout {p['kind']} -> {x['kind']} refused"
    if op["op"] == "cast" and not inf.same(ins[0], out, shapes[i]):
        if not cs.Relayout(reg(ins[0]), reg(out), 32).holds():
            return f"Relayout {ins[0]['kind']} -> {out['kind']} refused"
    if op["op"] == "reduce":
        got = cs.reduce_reduce_expression(cs.Reduce(reg(ins[0]), tuple(op["axes"]), len(shapes[op["src"]])), {})
        return _verdict("Reduce", got, reg(out))
    if op["op"] == "shape_cast":
        got = cs.reduce_reshape_expression(cs.Reshape(reg(ins[0]), shapes[op["src"]], shapes[i]), {})
        verdict = _verdict("Reshape", got, reg(out))
        if "unreduced" in verdict and ins[0]["kind"] == "tiled":
            handled = reshape_within_rule(ins[0]["tiles"][0], shapes[op["src"]], shapes[i])
            verdict += " inside its own rule's cases" if handled else " (a case its rule says it does not handle)"
        return verdict
    if op["op"] == "broadcast":
        if not cs.IsSupportedBroadcast(reg(ins[0]), reg(out), tuple(op["dims"])).holds():
            return "IsSupportedBroadcast refused"
        got = cs.reduce_expression(_broadcast_reduce(cs, reg(out), shapes[op["src"]], op["shape"], op["dims"]), {})
        keep = any(shapes[op["src"]][k] == 1 and op["shape"][d] > 1 for k, d in enumerate(op["dims"]))
        return _verdict("Reduce" + (" with keep_dims" if keep else ""), got, reg(ins[0]))
    return "search: the consistent layouts are never proposed"


def _verdict(relation: str, got: Any, want: Any) -> str:
    from jax.experimental.mosaic.gpu import constraints as cs

    if not isinstance(got, cs.RegisterLayout):
        return f"{relation} of the {want.value.__class__.__name__} left unreduced"
    if got != want:
        return f"{relation} gives another layout than the consistent one"
    return "search: the consistent layouts are never proposed"


def reshape_within_rule(tile: Sequence[int], src: Sequence[int], dst: Sequence[int]) -> bool:
    """Whether ``constraints.reduce_reshape_expression``'s comments say it handles this reshape of a tiled layout: the
    target has the tile's rank, the source is tileable, the minor tiled dims (all but the tile's first) are unchanged
    and the major tiled dim of the target is a multiple of the tile's."""
    r = len(tile)
    if len(dst) < r or any(s % t for t, s in zip(tile, src[len(src) - r:])):
        return False
    minor = r - 1
    return list(src[len(src) - minor:]) == list(dst[len(dst) - minor:]) and dst[len(dst) - r] % tile[0] == 0


def _broadcast_reduce(cs: Any, dst: Any, src_shape: Sequence[int], dst_shape: Sequence[int], dims: Sequence[int]) -> Any:
    """The ``src = Reduce(dst)`` expression of ``layout_inference._broadcast_in_dim_constraint_system``."""
    kept = [d for k, d in enumerate(dims) if src_shape[k] == 1 and dst_shape[d] > 1]
    new = [d for d in range(len(dst_shape)) if d not in dims]
    expr = dst
    if kept:
        expr = cs.Reduce(expr, tuple(kept), len(dst_shape), keep_dims=True)
    if new:
        expr = cs.Reduce(expr, tuple(new), len(dst_shape), keep_dims=False)
    return expr


# ---- the reproducer: the program built and inferred as jax's own test does, the layouts' properties inline ------------

# the properties (oracle signatures' endings) a reproducer checks inline; it checks refusals against a witness too
SCRIPT_PROPERTIES = ("layout does not apply to its value", "result is not the cast layout",
                     "tiled result whose tiling rank is not the result's rank")

_MLIR_LINES = {
    "undef": "llvm.mlir_undef(vec({shape}))",
    "cast": "mgpu.dialect.layout_cast(v{src}, layouts.to_layout_attr({layout}))",
    "reduce": "vector.MultiDimReductionOp(vector.CombiningKind.ADD, v{src}, v{acc}, {axes}).result",
    "broadcast": "mgpu.dialect.broadcast_in_dim(vec({shape}), v{src}, {dims})",
    "add": "arith.addf(v{a}, v{b})",
    "shape_cast": "vector.shape_cast(vec({shape}), v{src})",
}

_CHECKS = '''

def problems():
    """Each value's inferred layouts that break a property: a layout that does not apply to its value, a cast whose
    result is not the cast layout, a broadcast whose tiled result's tiling rank is not the result's (its lowering,
    FragmentedArray.broadcast_in_dim, refuses that: 'Tiling rank different than broadcast result rank')."""
    found = []
    for i, value in enumerate(values):
        op = value.owner
        for name, shapes in (("in_layouts", [SHAPES[a] for a in OPERANDS[i]]), ("out_layouts", [SHAPES[i]])):
            got = [layouts.from_layout_attr(a) for a in op.attributes[name]] if name in op.attributes else []
            for layout, shape in zip(got, shapes):
                tiles = layout.tiling.tiles if isinstance(layout, fa.TiledLayout) else None
                if not (applies(tiles, shape) if tiles else tuple(layout.shape) == shape):
                    found.append(f"value {i}: {name[:-8]} layout {layout} does not apply to {shape}")
        out = layouts.from_layout_attr(op.attributes["out_layouts"][0]) if "out_layouts" in op.attributes else None
        if i in CASTS and out != CASTS[i]:
            found.append(f"value {i}: cast to {CASTS[i]}, inferred {out}")
        if i in BROADCASTS and isinstance(out, fa.TiledLayout) and len(out.tiling.tiles[0]) != len(SHAPES[i]):
            found.append(f"value {i}: broadcast_in_dim to {SHAPES[i]} in {out}, tiling rank {len(out.tiling.tiles[0])}")
    return found
'''


def reproducer(case: Case, found: Sequence[Mapping[str, Any]] | None) -> str:
    """A script that needs only JAX: the case's program as an MLIR module built as jax's
    tests/mosaic/gpu_layout_inference_test.py builds one, ``mgpu.infer_layout`` on it, then the inferred layouts'
    properties checked inline; a refusal is the problem where layoutfuzz found a consistent assignment
    (``found``, verified by its oracle, written in)."""
    from layoutfuzz.harness.targets.mosaic_layout_relations import TILING_APPLIES, _layout_source

    ops = case.params["ops"]
    shapes = inf.value_shapes(ops)
    lines = []
    for i, (op, shape) in enumerate(zip(ops, shapes)):
        args = {**op, "shape": list(shape), "layout": _layout_source(op["layout"]) if "layout" in op else None}
        lines.append(f"        v{i} = " + _MLIR_LINES[op["op"]].format(**args))
    witness = None if found is None else [_short(a["out"][0]) for a in found]
    casts = {i: _layout_source(op["layout"]) for i, op in enumerate(ops) if op["op"] == "cast"}
    return f'''"""Mosaic GPU's layout inference on a small program ({case.case_id}, found by layoutfuzz), built as jax's own
tests/mosaic/gpu_layout_inference_test.py builds one (f32 vectors, undef operands under that test's undef rule):
{"; ".join(f"{i} {inf.MLIR_NAME[op['op']]}" for i, op in enumerate(ops))}. Inference must give every value a layout
that applies to it and that its op lowers with, and may refuse only where no consistent assignment exists.
Needs only JAX; runs on a CPU. Exit 1 while the problem shows, 0 once it is gone, 2 where this JAX lacks the API."""
import sys

try:
    import jax
    import jax.experimental.mosaic.gpu as mgpu
    from jax._src.interpreters import mlir as mlir_interpreter
    from jax._src.lib.mlir import ir
    from jax._src.lib.mlir.dialects import arith, llvm, vector
    from jax.experimental.mosaic.gpu import constraints as cs
    from jax.experimental.mosaic.gpu import fragmented_array as fa
    from jax.experimental.mosaic.gpu import layout_inference, layouts
except ImportError as exc:
    print("unavailable:", exc)
    sys.exit(2)

REPLICATED = fa.Replicated
SHAPES = {[tuple(s) for s in shapes]!r}
OPERANDS = {[list(inf.operands(op)) for op in ops]!r}
BROADCASTS = {[i for i, op in enumerate(ops) if op["op"] == "broadcast"]!r}
# each value's layout in a consistent assignment layoutfuzz found (its oracle checked every op's property), or None
WITNESS = {witness!r}


def undef_rule(ctx, op):  # the undef rule of jax's gpu_layout_inference_test.py: an undef's result is its own variable
    result = layout_inference.ValueSite(op, layout_inference.VariableType.RESULT, 0)
    return cs.ConstraintSystem(), {{cs.Variable(result): [result]}}


layout_inference._add_constraint_system_derivation_rule(llvm.UndefOp)(undef_rule)
{TILING_APPLIES}{_CHECKS}

print("jax", jax.__version__)
ctx = ir.Context()
ctx.append_dialect_registry(mlir_interpreter.upstream_dialects)
ctx.load_all_available_dialects()
mgpu.dialect.register_dialect(ctx)
with ctx, ir.Location.unknown():
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):
        vec = lambda shape: ir.VectorType.get(shape, ir.F32Type.get())  # noqa: E731
{chr(10).join(lines)}
    values = [{", ".join(f"v{i}" for i in range(len(ops)))}]
    CASTS = {{{", ".join(f"{i}: {s}" for i, s in casts.items())}}}
    try:
        mgpu.infer_layout(module)
    except Exception as exc:
        print("expected:", f"layouts (consistent: {{'; '.join(WITNESS)}})" if WITNESS else "layouts, or a refusal")
        print("observed: raised", f"{{type(exc).__name__}}: {{exc}}"[:300])
        sys.exit(1 if WITNESS else 0)
    found = problems()
    print("expected: every inferred layout applies to its value, casts keep their layout, broadcasts lower")
    print("observed:", "; ".join(found)[:600] if found else "every layout as expected")
    sys.exit(1 if found else 0)
'''
