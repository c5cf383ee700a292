"""Mosaic GPU's layout inference on a small program (mosaic.layout_inference/41/23, found by layoutfuzz), built as jax's own
tests/mosaic/gpu_layout_inference_test.py builds one (f32 vectors, undef operands under that test's undef rule):
0 llvm.mlir_undef; 1 llvm.mlir_undef; 2 vector.multi_reduction. Inference must give every value a layout
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
SHAPES = [(1, 128, 1, 5), (1, 128, 5), (1, 128, 5)]
OPERANDS = [[], [], [0, 1]]
BROADCASTS = []
# each value's layout in a consistent assignment layoutfuzz found (its oracle checked every op's property), or None
WITNESS = ['splat', 'splat', 'splat']


def undef_rule(ctx, op):  # the undef rule of jax's gpu_layout_inference_test.py: an undef's result is its own variable
    result = layout_inference.ValueSite(op, layout_inference.VariableType.RESULT, 0)
    return cs.ConstraintSystem(), {cs.Variable(result): [result]}


layout_inference._add_constraint_system_derivation_rule(llvm.UndefOp)(undef_rule)


def applies(tiles, shape):
    """The Tiling docstring: each tile in turn tiles the trailing dims of the (tiled) shape, no more dims than it
    has, each dividing the dim it tiles (a dim n under a tile t becomes n / t, the tile's dims go to the end)."""
    dims = list(shape)
    for tile in tiles:
        if not tile or len(tile) > len(dims) or any(n % t for n, t in zip(dims[len(dims) - len(tile):], tile)):
            return False
        dims = dims[:len(dims) - len(tile)] + [n // t for n, t in zip(dims[len(dims) - len(tile):], tile)] + list(tile)
    return True


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


print("jax", jax.__version__)
ctx = ir.Context()
ctx.append_dialect_registry(mlir_interpreter.upstream_dialects)
ctx.load_all_available_dialects()
mgpu.dialect.register_dialect(ctx)
with ctx, ir.Location.unknown():
    module = ir.Module.create()
    with ir.InsertionPoint(module.body):
        vec = lambda shape: ir.VectorType.get(shape, ir.F32Type.get())  # noqa: E731
        v0 = llvm.mlir_undef(vec([1, 128, 1, 5]))
        v1 = llvm.mlir_undef(vec([1, 128, 5]))
        v2 = vector.MultiDimReductionOp(vector.CombiningKind.ADD, v0, v1, [2]).result
    values = [v0, v1, v2]
    CASTS = {}
    try:
        mgpu.infer_layout(module)
    except Exception as exc:
        print("expected:", f"layouts (consistent: {'; '.join(WITNESS)})" if WITNESS else "layouts, or a refusal")
        print("observed: raised", f"{type(exc).__name__}: {exc}"[:300])
        sys.exit(1 if WITNESS else 0)
    found = problems()
    print("expected: every inferred layout applies to its value, casts keep their layout, broadcasts lower")
    print("observed:", "; ".join(found)[:600] if found else "every layout as expected")
    sys.exit(1 if found else 0)
