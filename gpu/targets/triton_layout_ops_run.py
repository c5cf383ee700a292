"""Target ``triton.layout_ops_run``: ``triton.layout_ops``'s kernels run on the GPU, their values against NumPy.

The same cases as the CPU target (one layout-sensitive operation on an M x N or M x N x K tile in a valid distributed
layout, CGA layouts of 1 to 8 CTAs launched as one cluster; scans and reductions with a user-written combine, forward
and reversed; histograms of 1-D tensors), but only where Triton documents the operation's lowering for the layout
(``oracles.gluon_layouts.op_precondition``: scans of blocked layouts not split across CTAs along the scanned axis, a
power-of-two bin count). The tile holds small integers in float32, so every sum, scan, maximum and (value, index)
pair is exact: the expected buffer is NumPy's answer bit for bit, and a wrong value is the lowering's. A histogram
counts int32 values drawn in [0, bins) (Triton documents bins of width 1 from 0, and nothing for values outside them),
the kernel's last value masked off.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from math import prod
from typing import Any

import numpy as np

from layoutfuzz.generators import gluon_ops
from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.gpu.device_arrays import device_input, device_output
from layoutfuzz.gpu.targets.gluon_kernel import PREBUILT_NEEDS, PREBUILT_PRELOAD, GluonKernelTarget, KernelSpec
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Unsupported
from layoutfuzz.harness.targets.triton_layout_ops import _illegal as compile_illegal
from layoutfuzz.harness.targets.triton_layout_ops import atomic_problem, kernel_call
from layoutfuzz.harness.triton_compat.gluon_layouts import MISSING_OP, without_tensor_types
from layoutfuzz.oracles import gluon_layouts as oracle

RUN_OPS = gluon_ops.ALL_OPS
USER_SCANS = ("scan_max", "scan_pair")  # the scans that take ``reverse``
# ttgl.permute's order for each (rank, axis): a rank-2 tile is transposed; a rank-3 one moves AXIS (apply_op's choice)
PERMUTATIONS = {(2, 0): (1, 0), (2, 1): (1, 0), (3, 0): (1, 2, 0), (3, 1): (2, 0, 1), (3, 2): (0, 2, 1)}
FALLBACK_HISTOGRAM = {"op": "histogram", "axis": 0, "shape": [256], "bins": 32, "num_warps": 4, "edge": False,
                      "layout": {"kind": "blocked", "size_per_thread": [1], "threads_per_warp": [32],
                                 "warps_per_cta": [4], "order": [0], "cga_layout": []}}
FALLBACK_HISTOGRAM["dst_layout"] = FALLBACK_HISTOGRAM["layout"]


def valid(layout: Mapping[str, Any], shape: list[int]) -> bool:
    """A layout the operations may be given: every documented precondition of its linear layout holds."""
    return oracle.precondition(dict(layout), shape) is None


def runnable(layout: Mapping[str, Any], shape: list[int], op: str = "", axis: int = 0, bins: int | None = None) -> bool:
    """A valid layout whose operation Triton documents a lowering for."""
    return valid(layout, shape) and oracle.op_precondition(op, axis, dict(layout), bins) is None


def why_not(p: Mapping[str, Any]) -> str | None:
    """Why ``p`` is not a case of this target (the validator's answer), or None."""
    op, shape = p.get("op"), p.get("shape")
    if op not in RUN_OPS:
        return f"params need 'op', one of {list(RUN_OPS)}"
    ranks = (1,) if op == "histogram" else (2, 3)
    if not isinstance(shape, list) or len(shape) not in ranks or not all(isinstance(d, int) and d > 0 for d in shape):
        return "params need 'shape': [M] for a histogram, [M, N] or [M, N, K] for any other op"
    if p.get("axis") not in range(len(shape)) or isinstance(p.get("axis"), bool):
        return "params need 'axis', a dim of the shape"
    if ("reverse" in p) != (op in USER_SCANS) or p.get("reverse") not in (None, False, True):
        return "a scan with a user-written combine, and it alone, takes 'reverse' (a bool)"
    if atomic_problem(p):
        return atomic_problem(p)
    layout = p.get("layout")
    if not isinstance(layout, Mapping) or layout.get("kind") not in gluon_ops.KINDS:
        return f"params need 'layout', a distributed Gluon layout of a kind in {list(gluon_ops.KINDS)}"
    bins = p.get("bins")
    if op == "histogram":
        if bins not in gluon_ops.BINS or isinstance(bins, bool):
            return f"a histogram needs 'bins', one of {list(gluon_ops.BINS)} (a count not a power of two is refused)"
        dst = p.get("dst_layout")
        if not isinstance(dst, Mapping) or dst.get("kind") not in gluon_ops.KINDS_1D:
            return f"a histogram needs 'dst_layout', a 1-D layout of a kind in {list(gluon_ops.KINDS_1D)}"
        if not valid(dst, [bins]) or len(oracle.cga_bases(dict(dst))) != len(oracle.cga_bases(dict(layout))):
            return "the histogram's layout breaks a precondition or spans other CTAs than the input's"
    elif "bins" in p or "dst_layout" in p:
        return "only a histogram takes 'bins' and 'dst_layout'"
    if not runnable(layout, shape, op, p["axis"], bins):
        return "the layout must be valid for the shape and the operation lowered for it"
    if p.get("num_ctas") != 1 << len(oracle.cga_bases(dict(layout))):
        return "num_ctas must be the layout's CTAs"
    return None


def tile(index: int, shape: list[int]) -> np.ndarray:
    """The case's input: integers from -4 to 4 in float32 (sums of up to 2^13 of them are exact)."""
    return np.random.default_rng(index).integers(-4, 5, prod(shape)).astype(np.float32).reshape(shape)


def histogram_values(index: int, size: int, bins: int) -> np.ndarray:
    """A histogram case's input: ``size`` int32 values in [0, bins), the documented bins (width 1, from 0)."""
    return np.random.default_rng(index).integers(0, bins, size).astype(np.int32)


def case_input(index: int, p: Mapping[str, Any]) -> np.ndarray:
    """What the kernel loads: a histogram's values, else the tile."""
    if p["op"] == "histogram":
        return histogram_values(index, p["shape"][0], p["bins"])
    return tile(index, p["shape"])


# an element type (Triton's pointer name, gluon_ops.ELEMENT_TYPES) -> its name in NumPy (ml_dtypes for bfloat16) and torch
TYPE_NAMES = dict(zip(gluon_ops.ELEMENT_TYPES, ("float32", "float16", "bfloat16", "float64", "int32")))


def element_type(p: Mapping[str, Any]) -> np.dtype:
    """The NumPy type of a case's buffers: a histogram's int32, an atomic's element type (bfloat16 from
    ``ml_dtypes``), else float32 (small integers, exact in each)."""
    name = TYPE_NAMES["i32" if p["op"] == "histogram" else p.get("dtype", "fp32")]
    if name == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise Unsupported("a bfloat16 atomic needs ml_dtypes (NumPy has no bfloat16)") from None
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def argmax_combine(value_a: np.ndarray, index_a: np.ndarray, value_b: np.ndarray, index_b: np.ndarray):
    """``gluon_op_kernels.argmax_combine`` in NumPy: the larger value, the smaller index between equal values."""
    pick_a = (value_a > value_b) | ((value_a == value_b) & (index_a < index_b))
    return np.where(pick_a, value_a, value_b), np.where(pick_a, index_a, index_b)


def pair_scan(x: np.ndarray, axis: int, reverse: bool) -> tuple[np.ndarray, np.ndarray]:
    """``associative_scan((x, offs), axis, argmax_combine, reverse)``: each element's running (value, index) pair,
    the pairs before it (after it, reversed) and itself folded by the combine; ``offs`` the row-major offsets."""
    values = np.moveaxis(x, axis, 0)
    index = np.moveaxis(np.arange(x.size, dtype=np.int64).reshape(x.shape), axis, 0)
    out_v, out_i = np.empty_like(values), np.empty_like(index)
    steps = range(values.shape[0] - 1, -1, -1) if reverse else range(values.shape[0])
    acc = None
    for k in steps:
        acc = (values[k], index[k]) if acc is None else (
            argmax_combine(values[k], index[k], *acc) if reverse else argmax_combine(*acc, values[k], index[k]))
        out_v[k], out_i[k] = acc
    return np.moveaxis(out_v, 0, axis), np.moveaxis(out_i, 0, axis)


def pair_reduce(x: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """``reduce((x, offs), axis, argmax_combine)``: the pairs along ``axis`` folded by the combine."""
    values, index = pair_scan(x, axis, False)
    return np.take(values, -1, axis), np.take(index, -1, axis)


def expected_output(op: str, axis: int, x: np.ndarray, reverse: bool = False, bins: int = 0) -> np.ndarray:
    """What the kernel leaves in its output buffer, by NumPy: for a tile (rank 2 or 3), ``x.size`` float32 (zeros
    where it writes nothing; a reduction's result first, row-major); for a histogram, ``bins`` int32 counts of every
    value of ``x`` but the last (the kernel's mask)."""
    if op == "histogram":
        return np.bincount(x[: x.size - 1].astype(np.int64), minlength=bins).astype(np.int32)
    out = np.zeros(x.size, np.float32)
    if op in ("sum", "max", "reduce_pair"):
        if op == "reduce_pair":
            value, index = pair_reduce(x, axis)
            y = value + index.astype(np.float32)
        else:
            y = x.sum(axis) if op == "sum" else x.max(axis)
        out[: y.size] = y.ravel()
    elif op == "cumsum":
        out[:] = np.cumsum(x, axis).ravel()
    elif op == "scan_max":
        flipped = np.flip(x, axis) if reverse else x
        y = np.maximum.accumulate(flipped, axis)
        out[:] = (np.flip(y, axis) if reverse else y).ravel()
    elif op == "scan_pair":
        value, index = pair_scan(x, axis, reverse)
        out[:] = (value + index.astype(np.float32)).ravel()
    elif op == "permute":
        out[:] = np.transpose(x, PERMUTATIONS[x.ndim, axis]).ravel()
    elif op == "reshape":
        out[:] = x.ravel()
    elif op == "join_split":
        out[:] = (2 * x + 1).ravel()
    elif op in ("atomic_add", "atomic_max", "atomic_xchg"):  # into zeros, every offset but those = 1 (mod 3)
        keep = np.arange(x.size) % 3 != 1
        done = {"atomic_add": x.ravel(), "atomic_max": np.maximum(x.ravel(), 0), "atomic_xchg": x.ravel() + 8}[op]
        out[:] = np.where(keep, done, 0)  # an exchange's old values (zeros) added back change nothing
    elif op == "atomic_cas":  # every zero swapped for x + 8 (unmasked); the old values (zeros) added back
        out[:] = x.ravel() + 8
    elif op == "gather":
        offs = np.arange(x.size).reshape(x.shape)
        index = (offs * 7) % x.shape[axis]
        out[:] = (np.take_along_axis(x, index, axis)).ravel()
    else:  # broadcast
        out[:] = (x - x.max(axis, keepdims=True)).ravel()
    return out


def _illegal(a: str, x: Any, b: str, y: Any) -> bool:
    """Pairs no case can hold: ``triton.layout_ops``' (a histogram is rank 1 with bins and an output layout; only a
    user-written scan is reversed; NVMMA layouts are rank 2...), and a scan of a layout other than blocked (the
    lowering Triton documents, all this target runs)."""
    v = {a: x, b: y}
    if v.get("op") in gluon_ops.SCANS and v.get("layout", "blocked") != "blocked":
        return True
    if "reverse" in v and v.get("layout", "blocked") != "blocked":
        return True
    return compile_illegal(a, x, b, y)


class TritonLayoutOpsRun(GluonKernelTarget):
    name = "triton.layout_ops_run"
    layer = "Triton's lowering (layout-sensitive operations)"
    description = ("reductions, scans (custom combines, (value, index) pairs, reversed), permute, reshape, join/split, "
                   "gather, broadcasts and histograms over every valid rank-1 to rank-3 Gluon distributed layout "
                   "(clusters of 1-8 CTAs) run on the GPU against NumPy")
    requires = ("cuda device sm_90", "triton")
    needs = PREBUILT_NEEDS
    preload = PREBUILT_PRELOAD
    prebuilt = True

    def generate(self, source: Source) -> dict[str, Any]:
        """``triton.layout_ops``' cases (``generators.gluon_ops``): an operation of ``RUN_OPS``, a histogram 1-D, any
        other on a rank-3 tile in a third of the cases; the layout redrawn (not the operation) until Triton documents
        the operation's lowering for it (a scan: blocked; a histogram: a power-of-two bin count)."""
        op = source.choice(RUN_OPS)
        rank3 = op != "histogram" and source.integer(0, 2) == 0
        for _ in range(32):
            if op == "histogram":
                case = gluon_ops.histogram_case(source, valid)
            else:
                case = gluon_ops.rank3_case(source, valid, op) if rank3 else gluon_ops.case(source, valid, op)
            options = gluon_ops.op_options(source, op)
            case = {**case, **options, "num_ctas": 1 << len(oracle.cga_bases(case["layout"]))}
            if why_not(case) is None:
                return case
        if op == "histogram":
            return {**FALLBACK_HISTOGRAM, "num_ctas": 1}
        case = {k: v for k, v in case.items() if k not in options}  # a sum takes none of the operation's options
        return {**case, "op": "sum"}

    def validate(self, case: Case) -> None:
        why = why_not(case.params)
        if why:
            raise ValueError(why)

    def family(self, case: Case) -> str:
        p = case.params
        return f"{p['op']}:{p['layout']['kind']}:{p['num_ctas']} CTAs" + (":rank3" if len(p["shape"]) == 3 else "")

    def parameter_space(self) -> Space:
        api = "Gluon's layout-sensitive operations"
        return Space((
            Parameter("op", RUN_OPS, api, lambda p: p["op"]),
            Parameter("rank", (1, 2, 3), "Gluon: histogram takes 1-D input only, rank 2 or 3 for the rest",
                      lambda p: len(p["shape"])),
            Parameter("reverse", (False, True), "associative_scan(input, axis, combine_fn, reverse)",
                      lambda p: p.get("reverse")),
            Parameter("atomic type", gluon_ops.ELEMENT_TYPES, "Gluon's atomics: the pointer's element type",
                      lambda p: p.get("dtype")),
            Parameter("sem", gluon_ops.SEMS, "Gluon's atomics: sem", lambda p: p.get("sem")),
            Parameter("scope", gluon_ops.SCOPES, "Gluon's atomics: scope", lambda p: p.get("scope")),
            Parameter("bins", gluon_ops.BINS, "histogram(input, num_bins, mask, layout): a power of two",
                      lambda p: p.get("bins")),
            Parameter("histogram layout", gluon_ops.KINDS_1D, "Gluon: histogram's destination layout",
                      lambda p: p["dst_layout"]["kind"] if "dst_layout" in p else None),
            Parameter("layout", gluon_ops.KINDS, "Gluon's distributed layouts", lambda p: p["layout"]["kind"]),
            Parameter("CTAs", (1, 2, 4, 8), "a cluster of the layout's CTAs", lambda p: p["num_ctas"]),
        ), _illegal)

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """A halved bin count, then a halved dim, each only where the case stays runnable."""
        p = case.params
        smaller: list[dict[str, Any]] = []
        if p.get("bins", 1) > 1 and p["dst_layout"]["kind"] != "distributed_linear":
            smaller.append({**p, "bins": p["bins"] // 2})
        for d, size in enumerate(p["shape"]):
            if size > 1 and p["layout"]["kind"] != "distributed_linear":
                smaller.append({**p, "shape": [s // 2 if i == d else s for i, s in enumerate(p["shape"])]})
        yield from (q for q in smaller if why_not(q) is None)

    def kernel_spec(self, case: Case) -> KernelSpec:
        """``triton.layout_ops``' kernel of the case (``kernel_call``): ``layout_op_kernel`` for the original
        operations on a rank-2 tile, ``rank2_op_kernel``/``rank3_op_kernel`` for the user-written combines and
        rank-3 tiles, ``histogram_kernel`` (int32 pointers) for a histogram."""
        from layoutfuzz.harness.triton_compat import gluon_op_kernels
        from layoutfuzz.harness.triton_compat.gluon_layouts import from_spec

        p = case.params
        name, constexprs, dtype = kernel_call(p)
        layouts = {"A": from_spec(dict(p["layout"]))}
        if "dst_layout" in p:
            layouts["H"] = from_spec(dict(p["dst_layout"]))
        constexprs = {k: layouts.get(k, v) for k, v in constexprs.items()}
        return KernelSpec(getattr(gluon_op_kernels, name), {"src": dtype, "dst": dtype}, constexprs,
                          p["num_warps"], p["num_ctas"])

    def expected(self, case: Case) -> Any:
        p = case.params
        x = case_input(case.index, p)
        return {"output": expected_output(p["op"], p["axis"], x, bool(p.get("reverse")), p.get("bins", 0)).tolist()}

    def run(self, case: Case) -> Any:
        from layoutfuzz.gpu.targets.gluon_kernel import cubin_launcher

        p = case.params
        kernel = self.kernel_for(case)
        stream = cubin_launcher().stream
        x = case_input(case.index, p)
        kind = element_type(p)
        out = np.zeros(p["bins"] if p["op"] == "histogram" else x.size, kind)
        src = device_input(x.ravel().astype(kind), "src", stream)
        dst = device_output(out, "dst", stream)
        self.execute(case, src, dst, kernel=kernel)
        return {"output": dst.read(stream).astype(np.float64).tolist()}

    def observed(self, case: Case) -> Any:
        answer = super().observed(case)
        if isinstance(answer, dict) and MISSING_OP.search(answer.get("rejected", "")):
            raise Unsupported(f"this Triton's Gluon lacks the operation: {answer['rejected']}")
        if isinstance(answer, dict) and "rejected" in answer:
            return {"rejected": without_tensor_types(answer["rejected"])}
        return answer

    def crash_cause(self, case: Case, detail: str) -> str:
        """A device fault's operation (a fault in an atomic's kernel and one in a gather's are two root causes); a
        compiler's abort names its own cause."""
        return str(case.params.get("op", "")) if "device fault" in detail else ""

    def reproducer_script(self, case: Case) -> str | None:
        """``triton.layout_ops``' kernel written out (``layout_op_kernel``; for the added operations and rank-3 tiles
        the kernel and the functions it calls), the layout as its Gluon constructor, launched through Triton's JIT on
        torch tensors as one cluster of the layout's CTAs; expected: the operation's definition in NumPy
        (``torch.gather``'s ``take_along_axis``, a sum, a max, the combine folded, ``bincount``...) on small integers,
        exact. Needs a GPU (``gpu.script_parts``)."""
        return layout_ops_script(case)

    def compare_results(self, case: Case, expected: Any, observed: Any) -> Comparison:
        want, got = np.asarray(expected["output"]), np.asarray(observed["output"])
        wrong = np.flatnonzero(want != got)
        if not wrong.size:
            return Comparison(True)
        shown = tuple(f"[{i}] {want[i]:g} != {got[i]:g}" for i in wrong[:8])
        return Comparison(False, int(wrong.size), shown, self.wrong_values(case.params),
                          f"{wrong.size} of {want.size} output elements differ from NumPy")

    def wrong_values(self, p: Mapping[str, Any]) -> str:
        """The signature of wrong output values: the operation's (one bug, one bucket)."""
        return f"{p['op']}: wrong values"


# the NumPy lines of each operation's definition, from x [M, N] into out (M * N zeros), as expected_output computes it
DEFINITIONS = {
    "sum": ["y = x.sum(AXIS)", "out[:y.size] = y  # the kernel stores the reduced row or column first"],
    "max": ["y = x.max(AXIS)", "out[:y.size] = y  # the kernel stores the reduced row or column first"],
    "cumsum": ["out[:] = np.cumsum(x, AXIS).ravel()"],
    "permute": ["out[:] = x.T.ravel()"],
    "reshape": ["out[:] = x.ravel()"],
    "join_split": ["out[:] = (2 * x + 1).ravel()  # split(join(x, x + 1)) summed"],
    "gather": ["offs = np.arange(M)[:, None] * N + np.arange(N)[None, :]",
               "index = (offs * 7) % (M if AXIS == 0 else N)  # the kernel's index tensor",
               "out[:] = np.take_along_axis(x, index, AXIS).ravel()  # torch.gather(x, AXIS, index)"],
    "broadcast": ["out[:] = (x - x.max(AXIS, keepdims=True)).ravel()"],
}


# the NumPy lines of the added operations' definitions (user-written combines, any rank), from x (SHAPE) into out
# (x.size zeros), as expected_output computes them; ``PAIRS`` folds (value, offset) pairs along AXIS by the kernel's
# argmax_combine (forwards, or backwards where REVERSE), each step's pair kept
PAIRS = ["def argmax_combine(value_a, index_a, value_b, index_b):  # the kernel's combine",
         "    pick_a = (value_a > value_b) | ((value_a == value_b) & (index_a < index_b))",
         "    return np.where(pick_a, value_a, value_b), np.where(pick_a, index_a, index_b)",
         "values = np.moveaxis(x, AXIS, 0)",
         "index = np.moveaxis(np.arange(x.size).reshape(SHAPE), AXIS, 0)  # the kernel's offs",
         "pair_v, pair_i = np.empty_like(values), np.empty_like(index)",
         "acc = None",
         "for k in (range(len(values) - 1, -1, -1) if REVERSE else range(len(values))):",
         "    if acc is None:",
         "        acc = (values[k], index[k])",
         "    else:",
         "        acc = argmax_combine(values[k], index[k], *acc) if REVERSE else argmax_combine(*acc, values[k], index[k])",
         "    pair_v[k], pair_i[k] = acc"]
GENERAL_DEFINITIONS = {
    "sum": ["y = x.sum(AXIS)", "out[:y.size] = y.ravel()  # the kernel stores the reduced tile first, row-major"],
    "max": ["y = x.max(AXIS)", "out[:y.size] = y.ravel()  # the kernel stores the reduced tile first, row-major"],
    "cumsum": ["out[:] = np.cumsum(x, AXIS).ravel()"],
    "scan_max": ["y = np.maximum.accumulate(np.flip(x, AXIS) if REVERSE else x, AXIS)",
                 "out[:] = (np.flip(y, AXIS) if REVERSE else y).ravel()"],
    "scan_pair": [*PAIRS, "y = np.moveaxis(pair_v, 0, AXIS) + np.moveaxis(pair_i, 0, AXIS).astype(np.float32)",
                  "out[:] = y.ravel()  # the running argmax's value + its offset"],
    "reduce_pair": [*PAIRS, "y = pair_v[-1] + pair_i[-1].astype(np.float32)  # the argmax's value + its offset",
                    "out[:y.size] = y.ravel()  # the kernel stores the reduced tile first, row-major"],
    "reshape": ["out[:] = x.ravel()"],
    "join_split": ["out[:] = (2 * x + 1).ravel()  # split(join(x, x + 1)) summed"],
    "gather": ["index = (np.arange(x.size).reshape(SHAPE) * 7) % SHAPE[AXIS]  # the kernel's index tensor",
               "out[:] = np.take_along_axis(x, index, AXIS).ravel()  # torch.gather(x, AXIS, index)"],
    "broadcast": ["out[:] = (x - x.max(AXIS, keepdims=True)).ravel()"],
    "atomic_add": ["offs = np.arange(x.size)",
                   "out[:] = np.where(offs % 3 != 1, x.ravel(), 0)  # each element added once into zeros, a third masked"],
    "atomic_max": ["offs = np.arange(x.size)",
                   "out[:] = np.where(offs % 3 != 1, np.maximum(x.ravel(), 0), 0)  # a max into zeros, a third masked"],
    "atomic_xchg": ["offs = np.arange(x.size)",
                    "out[:] = np.where(offs % 3 != 1, x.ravel() + 8, 0)  # x + 8 swapped in; old values (zeros) added back"],
    "atomic_cas": ["out[:] = x.ravel() + 8  # every zero swapped for x + 8; the old values (zeros) added back"],
}


def layout_ops_script(case: Case) -> str:
    """``TritonLayoutOpsRun.reproducer_script``: the original operations on a rank-2 tile launch ``layout_op_kernel``;
    the others (``added_ops_script``) the kernel ``kernel_call`` names."""
    from layoutfuzz.gpu.script_parts import gpu_script, source_of
    from layoutfuzz.harness.targets.triton_gluon_layouts import gluon_source
    from layoutfuzz.harness.triton_compat import gluon_op_kernels

    p = case.params
    if kernel_call(p)[0] != "layout_op_kernel":
        return added_ops_script(case)
    m, n = p["shape"]
    ctas = p["num_ctas"]
    clusters = f", num_ctas={ctas}" if ctas > 1 else ""
    op, axis = p["op"], p["axis"]
    return gpu_script(
        doc=(f"Gluon's {op} over axis {axis} of a {m} x {n} float32 tile held in a valid distributed layout "
             f"({p['layout']['kind']}, {p['num_warps']} warps{f', split over a cluster of {ctas} CTAs' if ctas > 1 else ''}). "
             "The tile holds small integers, so every result is exact: the output must equal NumPy's "
             f"{op} bit for bit."),
        kernel=source_of(gluon_op_kernels.layout_op_kernel),
        layouts=[f"A = {gluon_source(p['layout'])}"],
        launch=['src = on_gpu(inputs["src"])', "dst = torch.zeros_like(src)",
                f'launch(layout_op_kernel, src, dst, M={m}, N={n}, A=A, OP={op!r}, AXIS={axis}, '
                f'num_warps={p["num_warps"]}{clusters})',
                'outputs = {"dst": dst.cpu().numpy()}'],
        inputs=[f"src = np.random.default_rng({case.index}).integers(-4, 5, {m * n}).astype(np.float32)",
                'return {"src": src}  # the tile, row-major'],
        expected=[f"M, N, AXIS = {m}, {n}, {axis}", 'x = inputs["src"].reshape(M, N)',
                  "out = np.zeros(M * N, np.float32)  # what the kernel does not write stays zero",
                  *DEFINITIONS[op], 'return {"dst": out}'],
        expected_text=f"dst = NumPy's {op} over axis {axis} of the tile, exactly")


def added_ops_script(case: Case) -> str:
    """``layout_ops_script`` of a case of ``rank2_op_kernel``, ``rank3_op_kernel`` or ``histogram_kernel``."""
    from layoutfuzz.gpu.script_parts import gpu_script, source_of
    from layoutfuzz.harness.targets.triton_gluon_layouts import gluon_source
    from layoutfuzz.harness.triton_compat import gluon_op_kernels

    p = case.params
    name, constexprs, dtype = kernel_call(p)
    ctas = p["num_ctas"]
    clusters = f", num_ctas={ctas}" if ctas > 1 else ""
    where = f"{p['num_warps']} warps{f', split over a cluster of {ctas} CTAs' if ctas > 1 else ''}"
    arguments = ", ".join(f"{k}={k if k in ('A', 'H') else repr(v)}" for k, v in constexprs.items())
    launch = f"launch({name}, src, dst, {arguments}, num_warps={p['num_warps']}{clusters})"
    op, axis, size = p["op"], p["axis"], prod(p["shape"])
    if op == "histogram":
        bins = p["bins"]
        return gpu_script(
            doc=(f"Gluon's histogram of {size} int32 values in [0, {bins}) held in a valid 1-D distributed layout "
                 f"({p['layout']['kind']}, {where}) into {bins} bins in a {p['dst_layout']['kind']} layout, the last "
                 "value masked off: the counts must equal NumPy's bincount of the others."),
            kernel=source_of(gluon_op_kernels.histogram_kernel),
            layouts=[f"A = {gluon_source(p['layout'])}", f"H = {gluon_source(p['dst_layout'])}"],
            launch=['src = on_gpu(inputs["src"])', f'dst = torch.zeros({bins}, dtype=torch.int32, device="cuda")',
                    launch, 'outputs = {"dst": dst.cpu().numpy()}'],
            inputs=[f"src = np.random.default_rng({case.index}).integers(0, {bins}, {size}).astype(np.int32)",
                    'return {"src": src}'],
            expected=['x = inputs["src"]', f"out = np.bincount(x[: x.size - 1], minlength={bins}).astype(np.int32)"
                      "  # the last value masked off", 'return {"dst": out}'],
            expected_text=f"dst = NumPy's bincount of the values but the last, {bins} bins, exactly")
    reverse = bool(p.get("reverse"))
    tile_text = " x ".join(str(d) for d in p["shape"])
    what = (f"{op} ({p['sem']}, scope {p['scope']})" if "sem" in p else
            f"{op} over axis {axis}{' reversed' if reverse else ''}")
    functions = ((gluon_op_kernels.apply_atomic,) if "atomic" in name else
                 (gluon_op_kernels.max_combine, gluon_op_kernels.argmax_combine, gluon_op_kernels.store_tile,
                  gluon_op_kernels.apply_op)) + (getattr(gluon_op_kernels, name),)
    permute = [f"out[:] = np.transpose(x, {PERMUTATIONS[len(p['shape']), axis]}).ravel()  # the kernel's permute order"]
    typed = f', torch.{TYPE_NAMES[p["dtype"]]}' if "dtype" in p else ""  # an atomic's element type
    buffers = [f'src = on_gpu(inputs["src"]{typed})', "dst = torch.zeros_like(src)"]
    return gpu_script(
        doc=(f"Gluon's {what} of a {tile_text} {TYPE_NAMES[p.get('dtype', 'fp32')]} tile held in a valid distributed layout "
             f"({p['layout']['kind']}, {where}). The tile holds small integers, so every result is exact: the output "
             f"must equal NumPy's {op} bit for bit."),
        kernel=source_of(*functions),
        layouts=[f"A = {gluon_source(p['layout'])}"],
        launch=[*buffers, launch, f'outputs = {{"dst": dst{".to(torch.float64)" if "dtype" in p else ""}.cpu().numpy()}}'],
        inputs=[f"src = np.random.default_rng({case.index}).integers(-4, 5, {size}).astype(np.float32)",
                'return {"src": src}  # the tile, row-major'],
        expected=[f"SHAPE, AXIS, REVERSE = {tuple(p['shape'])}, {axis}, {reverse}", 'x = inputs["src"].reshape(SHAPE)',
                  "out = np.zeros(x.size, np.float32)  # what the kernel does not write stays zero",
                  *(permute if op == "permute" else GENERAL_DEFINITIONS[op]), 'return {"dst": out}'],
        expected_text=f"dst = NumPy's {what} of the tile, exactly")
