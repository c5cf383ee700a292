"""The convert and shared probes' TTGIR written directly, so that a Triton GPU campaign compiles each case's kernel
from its TTGIR and skips Gluon's Python frontend (a fifth to a quarter of a compile, in kernels per second).

``convert_probe_ttgir`` and ``shared_probe_ttgir`` write, for a case's shape, element type and layouts, the module that
Gluon's frontend gives ``gluon_probes.convert_probe_{1,2,3}d`` and ``shared_probe_2d`` after its own passes: the same
operations in the same order (the constants hoisted, the offsets shared where A and B are one layout). It is trusted
only where that holds: ``DirectTtgir`` compares its text with the frontend's (both parsed by this Triton and printed
without debug locations) on each process's first case of each probe and on every ``CHECK_EVERY``-th case after, and
falls back to the frontend for good where they differ. The kernels it gives differ from the frontend's only in their
line information; a process's first case of each probe (a one-case ``layoutfuzz reproduce``) and
``$LAYOUTFUZZ_TRITON_JIT`` go through Gluon.
"""

from __future__ import annotations

import tempfile
import warnings
from dataclasses import dataclass, field
from typing import Any

from layoutfuzz.oracles.linear_layout import LinearLayout

CHECK_EVERY = 64  # after its first case, one case in this many is compiled through the frontend too and compared
TID_ASM = ("{ .reg .u32 c, n, t; mov.u32 c, %cluster_ctarank; mov.u32 n, %ntid.x; mov.u32 t, %tid.x; "
           "mad.lo.u32 $0, c, n, t; }")  # gluon_probes._tid_like's PTX
INT_NAMES = {8: "i8", 16: "i16", 32: "i32", 64: "i64"}


def linear_attr(layout: LinearLayout) -> str:
    """``layout`` as TTGIR's ``#ttg.linear`` attribute (its bases per hardware dim, the out dims implied by the shape)."""
    bases = dict(layout.in_dims)

    def listed(dim: str) -> str:
        return "[" + ", ".join("[" + ", ".join(map(str, basis)) + "]" for basis in bases.get(dim, ())) + "]"

    return "#ttg.linear<{" + ", ".join(f"{dim} = {listed(dim)}" for dim in ("register", "lane", "warp", "block")) + "}>"


def _tensor(shape: list[int], element: str, layout: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{element}, {layout}>"


def _slice(layout: str, *dims: int) -> str:
    """``layout`` sliced along ``dims`` in turn (innermost first), as Gluon's nested ``SliceLayout``s print."""
    for dim in dims:
        layout = f"#ttg.slice<{{dim = {dim}, parent = {layout}}}>"
    return layout


class _Body:
    """SSA lines in order, with fresh value names."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.count = 0

    def op(self, text: str) -> str:
        name = f"%v{self.count}"
        self.count += 1
        self.lines.append(f"    {name} = {text}")
        return name


def _range(body: _Body, size: int, layout: str) -> str:
    """``ttgl.arange(0, size, layout)``."""
    return body.op(f"tt.make_range {{end = {size} : i32, start = 0 : i32}} : {_tensor([size], 'i32', layout)}")


def _expand(body: _Body, value: str, axis: int, before: list[int], before_layout: str, after: list[int], after_layout: str) -> str:
    """``ttgl.expand_dims(value, axis)``."""
    return body.op(f"tt.expand_dims {value} {{axis = {axis} : i32}} : {_tensor(before, 'i32', before_layout)} -> "
                   f"{_tensor(after, 'i32', after_layout)}")


def _broadcast_add(body: _Body, x: str, x_shape: list[int], y: str, y_shape: list[int], shape: list[int], layout: str) -> str:
    """``x + y`` of two shapes that broadcast to ``shape``: both broadcast, then added."""
    a = body.op(f"tt.broadcast {x} : {_tensor(x_shape, 'i32', layout)} -> {_tensor(shape, 'i32', layout)}")
    b = body.op(f"tt.broadcast {y} : {_tensor(y_shape, 'i32', layout)} -> {_tensor(shape, 'i32', layout)}")
    return body.op(f"arith.addi {a}, {b} : {_tensor(shape, 'i32', layout)}")


def _offsets(body: _Body, shape: list[int], layout: str, strides: list[str]) -> str:
    """``gluon_probes._offsets_{1,2,3}d`` in ``layout``: each element's row-major index (``strides``: the constants of
    the leading dims' strides, already hoisted), in the frontend's order of operations."""
    if len(shape) == 1:
        return _range(body, shape[0], layout)
    if len(shape) == 2:
        s0, s1 = shape
        i, j = _range(body, s0, _slice(layout, 1)), _range(body, s1, _slice(layout, 0))
        ii = _expand(body, i, 1, [s0], _slice(layout, 1), [s0, 1], layout)
        rows = body.op(f"arith.muli {ii}, {strides[0]} : {_tensor([s0, 1], 'i32', layout)}")
        jj = _expand(body, j, 0, [s1], _slice(layout, 0), [1, s1], layout)
        return _broadcast_add(body, rows, [s0, 1], jj, [1, s1], shape, layout)
    s0, s1, s2 = shape
    ranges = [_range(body, size, _slice(layout, *dims)) for size, dims in ((s0, (2, 1)), (s1, (2, 0)), (s2, (1, 0)))]
    expanded = []
    for value, size, (outer, inner), (first, second), halfway, full in (
            (ranges[0], s0, (2, 1), (1, 2), [s0, 1], [s0, 1, 1]),
            (ranges[1], s1, (2, 0), (0, 2), [1, s1], [1, s1, 1]),
            (ranges[2], s2, (1, 0), (0, 1), [1, s2], [1, 1, s2])):
        once = _expand(body, value, first, [size], _slice(layout, outer, inner), halfway, _slice(layout, outer))
        expanded.append(_expand(body, once, second, halfway, _slice(layout, outer), full, layout))
    ii, jj, kk = expanded
    rows = body.op(f"arith.muli {ii}, {strides[0]} : {_tensor([s0, 1, 1], 'i32', layout)}")
    cols = body.op(f"arith.muli {jj}, {strides[1]} : {_tensor([1, s1, 1], 'i32', layout)}")
    plane = _broadcast_add(body, rows, [s0, 1, 1], cols, [1, s1, 1], [s0, s1, 1], layout)
    return _broadcast_add(body, plane, [s0, s1, 1], kk, [1, 1, s2], shape, layout)


def _strides(body: _Body, shape: list[int], layout: str) -> list[str]:
    """The hoisted stride constants of ``_offsets`` in ``layout``."""
    if len(shape) == 2:
        return [body.op(f"arith.constant dense<{shape[1]}> : {_tensor([shape[0], 1], 'i32', layout)}")]
    if len(shape) == 3:
        s0, s1, s2 = shape
        return [body.op(f"arith.constant dense<{s1 * s2}> : {_tensor([s0, 1, 1], 'i32', layout)}"),
                body.op(f"arith.constant dense<{s2}> : {_tensor([1, s1, 1], 'i32', layout)}")]
    return []


def _address(body: _Body, pointer: str, element: str, shape: list[int], layout: str, offsets: str) -> tuple[str, str]:
    """``pointer + offsets`` (a splat and an addptr), and the type of the pointers."""
    pointers = _tensor(shape, f"!tt.ptr<{element}>", layout)
    splat = body.op(f"tt.splat {pointer} : !tt.ptr<{element}> -> {pointers}")
    return body.op(f"tt.addptr {splat}, {offsets} : {pointers}, {_tensor(shape, 'i32', layout)}"), pointers


def _load(body: _Body, pointer: str, element: str, shape: list[int], layout: str, offsets: str) -> str:
    """``ttgl.load(pointer + offsets)``."""
    where, pointers = _address(body, pointer, element, shape, layout, offsets)
    return body.op(f"tt.load {where} : {pointers}")


def _store(body: _Body, pointer: str, element: str, shape: list[int], layout: str, offsets: str, value: str) -> None:
    """``ttgl.store(pointer + offsets, value)``."""
    where, pointers = _address(body, pointer, element, shape, layout, offsets)
    body.lines.append(f"    tt.store {where}, {value} : {pointers}")


def _offsets_of_both(body: _Body, shape: list[int], la: str, lb: str) -> tuple[str, list[str]]:
    """The stride constants of A and B hoisted first (B's are A's where they are one layout), then A's offsets; returns
    A's offsets and B's strides."""
    strides_a = _strides(body, shape, la)
    strides_b = strides_a if la == lb else _strides(body, shape, lb)
    return _offsets(body, shape, la, strides_a), strides_b


def _store_holders(body: _Body, pointer: str, offsets: str, shape: list[int], layout: str) -> None:
    """``ttgl.store(pointer + offsets, _tid_like(offsets))``."""
    where, pointers = _address(body, pointer, "i32", shape, layout, offsets)
    holders = body.op(f'tt.elementwise_inline_asm "{TID_ASM}" {{constraints = "=r,r", packed_element = 1 : i32, pure = false}} '
                      f"{offsets} : {_tensor(shape, 'i32', layout)} -> {_tensor(shape, 'i32', layout)}")
    body.lines.append(f"    tt.store {where}, {holders} : {pointers}")


def shared_attr(shared: Any) -> str:
    """A Gluon shared layout (swizzled, NVMMA or linear, one CTA) as its TTGIR attribute; every field written out, so
    that it parses to the attribute Gluon makes (the printer leaves defaults out)."""
    from triton.experimental.gluon import language as ttgl

    def listed(values: Any) -> str:
        return "[" + ", ".join(listed(v) if isinstance(v, (list, tuple)) else str(v) for v in values) + "]"

    if isinstance(shared, ttgl.SwizzledSharedLayout):
        return (f"#ttg.swizzled_shared<{{vec = {shared.vec}, perPhase = {shared.per_phase}, maxPhase = {shared.max_phase}, "
                f"order = {listed(shared.order)}}}>")
    if isinstance(shared, ttgl.NVMMASharedLayout):
        return (f"#ttg.nvmma_shared<{{swizzlingByteWidth = {shared.swizzle_byte_width}, transposed = {str(shared.transposed).lower()}, "
                f"elementBitWidth = {shared.element_bitwidth}, fp4Padded = {str(shared.fp4_padded).lower()}}}>")
    if isinstance(shared, ttgl.SharedLinearLayout):
        return f"#ttg.shared_linear<{{offset = {listed(shared.offset_bases)}}}, alignment = {shared.alignment}>"
    raise TypeError(f"no TTGIR writer for {shared!r}")


def _module(name: str, arguments: list[tuple[str, str]], aliases: str, body: _Body, num_warps: int, num_ctas: int) -> str:
    """The module around one public kernel ``name`` of pointer ``arguments`` (name, element type), as Gluon leaves it."""
    listed = ", ".join(f"%{arg}: !tt.ptr<{kind}> {{tt.divisibility = 16 : i32}}" for arg, kind in arguments)
    from layoutfuzz.harness.triton_compat.ttgir import module_attributes

    return (aliases + f"module attributes {module_attributes(num_ctas, num_warps)} {{\n"
            + f"  tt.func public @{name}({listed}) attributes {{noinline = false}} {{\n"
            + "\n".join(body.lines) + "\n    tt.return\n  }\n}\n")


def _two_layouts(a: LinearLayout, b: LinearLayout) -> tuple[str, str, str]:
    """The aliases of A and B (one where they are the same layout) and the names to use for each."""
    if a == b:
        return "#A = " + linear_attr(a) + "\n", "#A", "#A"
    return "#A = " + linear_attr(a) + "\n#B = " + linear_attr(b) + "\n", "#A", "#B"


def convert_probe_ttgir(shape: list[int], elem_bits: int, a: LinearLayout, b: LinearLayout, num_warps: int,
                        num_ctas: int = 1) -> str:
    """The TTGIR module of ``gluon_probes.convert_probe_{rank}d`` for this case, as Gluon's frontend leaves it."""
    element = INT_NAMES[elem_bits]
    aliases, la, lb = _two_layouts(a, b)
    body = _Body()
    oa, strides_b = _offsets_of_both(body, shape, la, lb)
    x = _load(body, "%src", element, shape, la, oa)
    _store_holders(body, "%tid_a", oa, shape, la)
    y = body.op(f"ttg.convert_layout {x} : {_tensor(shape, element, la)} -> {_tensor(shape, element, lb)}")
    ob = oa if la == lb else _offsets(body, shape, lb, strides_b)
    _store(body, "%dst", element, shape, lb, ob, y)
    _store_holders(body, "%tid_b", ob, shape, lb)
    arguments = [("src", element), ("dst", element), ("tid_a", "i32"), ("tid_b", "i32")]
    return _module(f"convert_probe_{len(shape)}d", arguments, aliases, body, num_warps, num_ctas)


def shared_probe_ttgir(shape: list[int], elem_bits: int, a: LinearLayout, b: LinearLayout, shared: str, num_warps: int) -> str:
    """The TTGIR module of ``gluon_probes.shared_probe_2d`` for this case (``shared``: the attribute of its shared
    layout, ``shared_attr``), as Gluon's frontend leaves it."""
    element = INT_NAMES[elem_bits]
    aliases, la, lb = _two_layouts(a, b)
    flat = "#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [0]}>"
    aliases += (f"#S = {shared}\n#F = {flat}\n#blocked = #ttg.blocked<{{sizePerThread = [1], threadsPerWarp = [32], "
                f"warpsPerCTA = [{num_warps}], order = [0]}}>\n#smem = #ttg.shared_memory\n")
    body = _Body()
    oa, strides_b = _offsets_of_both(body, shape, la, lb)
    x = _load(body, "%src", element, shape, la, oa)
    memory = f"!ttg.memdesc<{'x'.join(map(str, shape))}x{element}, #S, #smem, mutable>"
    smem = body.op(f"ttg.local_alloc {x} : ({_tensor(shape, element, la)}) -> {memory}")
    y = body.op(f"ttg.local_load {smem} : {memory} -> {_tensor(shape, element, lb)}")
    ob = oa if la == lb else _offsets(body, shape, lb, strides_b)
    _store(body, "%dst", element, shape, lb, ob, y)
    total = shape[0] * shape[1]
    flat_memory = f"!ttg.memdesc<{total}x{element}, #F, #smem, mutable>"
    view = body.op(f"ttg.memdesc_reinterpret {smem} : {memory} -> {flat_memory}")
    offsets = body.op(f"tt.make_range {{end = {total} : i32, start = 0 : i32}} : {_tensor([total], 'i32', '#blocked')}")
    where, pointers = _address(body, "%raw", element, [total], "#blocked", offsets)
    raw = body.op(f"ttg.local_load {view} : {flat_memory} -> {_tensor([total], element, '#blocked')}")
    body.lines.append(f"    tt.store {where}, {raw} : {pointers}")
    return _module("shared_probe_2d", [("src", element), ("dst", element), ("raw", element)], aliases, body, num_warps, 1)


def canonical(text: str) -> str:
    """``text`` parsed by this Triton and printed without debug locations: two modules print the same exactly
    when they hold the same operations, types and attributes in the same order."""
    from triton._C.libtriton import ir, nvidia

    context = ir.context()
    ir.load_dialects(context)
    nvidia.load_dialects(context)
    with tempfile.NamedTemporaryFile("w", prefix="layoutfuzz-", suffix=".ttgir") as file:
        file.write(text)
        file.flush()
        return ir.parse_mlir_module(file.name, context).str_nodebug()


def compile_ttgir(text: str, name: str, num_warps: int, num_ctas: int = 1) -> Any:
    """A TTGIR module compiled for sm_90a by this process's Triton (what ``triton.compile`` gives)."""
    import triton
    from triton.backends.compiler import GPUTarget

    with tempfile.NamedTemporaryFile("w", prefix=f"layoutfuzz-{name}-", suffix=".ttgir") as file:
        file.write(text)
        file.flush()
        return triton.compile(file.name, target=GPUTarget("cuda", 90, 32), options={"num_warps": num_warps, "num_ctas": num_ctas})


@dataclass
class DirectTtgir:
    """Per process: which probes' directly written TTGIR agreed with the frontend's, and when to check again."""

    trusted: dict[str, bool] = field(default_factory=dict)
    uses: dict[str, int] = field(default_factory=dict)

    def wanted(self, probe: str) -> bool:
        """Whether the next case of ``probe`` should compile from the written TTGIR alone (no frontend)."""
        if not self.trusted.get(probe, False):
            return False
        self.uses[probe] = self.uses.get(probe, 0) + 1
        return self.uses[probe] % CHECK_EVERY != 0

    def check(self, probe: str, written: str, frontend: str) -> bool:
        """Compares the written TTGIR with the frontend's for one case; a difference ends the trust for good."""
        if self.trusted.get(probe) is False:
            return False
        try:
            agree = canonical(written) == canonical(frontend)
        except Exception:  # this Triton cannot parse what was written (another release's syntax): not the same
            agree = False
        if not agree:
            warnings.warn(f"{probe}: the written TTGIR differs from Gluon's; compiling through Gluon from now on", stacklevel=2)
        self.trusted[probe] = agree
        return agree
