"""Target ``triton.layout_ops_run``: ``triton.layout_ops``'s kernels run on the GPU, their values against NumPy.

The same cases as the CPU target (one layout-sensitive operation on an M x N tile in a valid distributed layout,
CGA layouts of 1 to 8 CTAs launched as one cluster), but only where Triton documents the operation's lowering for
the layout (``oracles.gluon_layouts.op_precondition``). The tile holds small integers in float32, so every sum,
scan and difference is exact: the expected buffer is NumPy's answer bit for bit, and a wrong value is the lowering's.
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
from layoutfuzz.harness.triton_compat.gluon_layouts import MISSING_OP, without_tensor_types
from layoutfuzz.oracles import gluon_layouts as oracle

RUN_OPS = gluon_ops.OPS


def runnable(layout: Mapping[str, Any], shape: list[int], op: str = "", axis: int = 0) -> bool:
    """A valid layout whose operation Triton documents a lowering for."""
    return oracle.precondition(dict(layout), shape) is None and oracle.op_precondition(op, axis, dict(layout)) is None


def tile(index: int, shape: list[int]) -> np.ndarray:
    """The case's input: integers from -4 to 4 in float32 (sums of up to 2^13 of them are exact)."""
    return np.random.default_rng(index).integers(-4, 5, prod(shape)).astype(np.float32).reshape(shape)


def expected_output(op: str, axis: int, x: np.ndarray) -> np.ndarray:
    """What the kernel leaves in its M x N output buffer (zeros where it writes nothing), by NumPy."""
    m, n = x.shape
    out = np.zeros(m * n, np.float32)
    if op in ("sum", "max"):
        y = x.sum(axis) if op == "sum" else x.max(axis)
        out[: y.size] = y
    elif op == "cumsum":
        out[:] = np.cumsum(x, axis).ravel()
    elif op == "permute":
        out[:] = x.T.ravel()
    elif op == "reshape":
        out[:] = x.ravel()
    elif op == "join_split":
        out[:] = (2 * x + 1).ravel()
    elif op == "gather":
        offs = np.arange(m)[:, None] * n + np.arange(n)[None, :]
        index = (offs * 7) % (m if axis == 0 else n)
        out[:] = (np.take_along_axis(x, index, axis)).ravel()
    else:  # broadcast
        out[:] = (x - x.max(axis, keepdims=True)).ravel()
    return out


class TritonLayoutOpsRun(GluonKernelTarget):
    name = "triton.layout_ops_run"
    layer = "Triton's lowering (layout-sensitive operations)"
    description = ("reductions, scans, permute, reshape, join/split, gather and broadcasts over every valid Gluon "
                   "distributed layout (clusters of 1-8 CTAs) run on the GPU against NumPy")
    requires = ("cuda device sm_90", "triton")
    needs = PREBUILT_NEEDS
    preload = PREBUILT_PRELOAD
    prebuilt = True

    def generate(self, source: Source) -> dict[str, Any]:
        op = source.choice(RUN_OPS)
        for _ in range(32):  # a scan needs a blocked layout: redraw the layout, not the operation
            case = gluon_ops.case(source, lambda layout, shape: oracle.precondition(dict(layout), shape) is None, op)
            if runnable(case["layout"], case["shape"], case["op"], case["axis"]):
                break
        else:
            case = {**case, "op": "sum"}
        return {**case, "num_ctas": 1 << len(oracle.cga_bases(case["layout"]))}

    def validate(self, case: Case) -> None:
        p = case.params
        if p.get("op") not in RUN_OPS or p.get("axis") not in (0, 1) or not isinstance(p.get("layout"), Mapping):
            raise ValueError(f"params need 'op' (one of {list(RUN_OPS)}), 'axis' (0 or 1) and 'layout'")
        if not isinstance(p.get("shape"), list) or len(p["shape"]) != 2 or not runnable(p["layout"], p["shape"], p["op"], p["axis"]):
            raise ValueError("the layout must be valid for [M, N] and the operation lowered for it")
        if p.get("num_ctas") != 1 << len(oracle.cga_bases(dict(p["layout"]))):
            raise ValueError("num_ctas must be the layout's CTAs")

    def family(self, case: Case) -> str:
        p = case.params
        return f"{p['op']}:{p['layout']['kind']}:{p['num_ctas']} CTAs"

    def parameter_space(self) -> Space:
        api = "Gluon's layout-sensitive operations"
        return Space((
            Parameter("op", RUN_OPS, api, lambda p: p["op"]),
            Parameter("layout", gluon_ops.KINDS, "Gluon's distributed layouts", lambda p: p["layout"]["kind"]),
            Parameter("CTAs", (1, 2, 4, 8), "a cluster of the layout's CTAs", lambda p: p["num_ctas"]),
        ))

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        p = case.params
        for d, size in enumerate(p["shape"]):
            smaller = [s // 2 if i == d else s for i, s in enumerate(p["shape"])]
            if size > 1 and p["layout"]["kind"] != "distributed_linear" and runnable(p["layout"], smaller, p["op"], p["axis"]):
                yield {**p, "shape": smaller}

    def kernel_spec(self, case: Case) -> KernelSpec:
        from layoutfuzz.harness.triton_compat import gluon_op_kernels
        from layoutfuzz.harness.triton_compat.gluon_layouts import from_spec

        p = case.params
        m, n = p["shape"]
        constexprs = {"M": m, "N": n, "A": from_spec(dict(p["layout"])), "OP": p["op"], "AXIS": p["axis"]}
        return KernelSpec(gluon_op_kernels.layout_op_kernel, {"src": "*fp32", "dst": "*fp32"}, constexprs,
                          p["num_warps"], p["num_ctas"])

    def expected(self, case: Case) -> Any:
        p = case.params
        return {"output": expected_output(p["op"], p["axis"], tile(case.index, p["shape"])).tolist()}

    def run(self, case: Case) -> Any:
        from layoutfuzz.gpu.targets.gluon_kernel import cubin_launcher

        p = case.params
        kernel = self.kernel_for(case)
        stream = cubin_launcher().stream
        src = device_input(tile(case.index, p["shape"]).ravel(), "src", stream)
        dst = device_output(np.zeros(prod(p["shape"]), np.float32), "dst", stream)
        self.execute(case, src, dst, kernel=kernel)
        return {"output": dst.read(stream).tolist()}

    def observed(self, case: Case) -> Any:
        answer = super().observed(case)
        if isinstance(answer, dict) and MISSING_OP.search(answer.get("rejected", "")):
            raise Unsupported(f"this Triton's Gluon lacks the operation: {answer['rejected']}")
        if isinstance(answer, dict) and "rejected" in answer:
            return {"rejected": without_tensor_types(answer["rejected"])}
        return answer

    def reproducer_script(self, case: Case) -> str | None:
        """``triton.layout_ops``' kernel written out (``layout_op_kernel``), the layout as its Gluon constructor,
        launched through Triton's JIT on torch tensors as one cluster of the layout's CTAs; expected: the operation's
        definition in NumPy (``torch.gather``'s ``take_along_axis``, a sum, a max...) on small integers in float32,
        exact. Needs a GPU (``gpu.script_parts``)."""
        return layout_ops_script(case)

    def compare_results(self, case: Case, expected: Any, observed: Any) -> Comparison:
        want, got = np.asarray(expected["output"]), np.asarray(observed["output"])
        wrong = np.flatnonzero(want != got)
        if not wrong.size:
            return Comparison(True)
        shown = tuple(f"[{i}] {want[i]:g} != {got[i]:g}" for i in wrong[:8])
        return Comparison(False, int(wrong.size), shown, f"{case.params['op']}: wrong values",
                          f"{wrong.size} of {want.size} output elements differ from NumPy")


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


def layout_ops_script(case: Case) -> str:
    """``TritonLayoutOpsRun.reproducer_script``."""
    from layoutfuzz.gpu.script_parts import gpu_script, source_of
    from layoutfuzz.harness.targets.triton_gluon_layouts import gluon_source
    from layoutfuzz.harness.triton_compat import gluon_op_kernels

    p = case.params
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
