"""Target ``triton.layout_ops``: Triton's lowering of layout-sensitive operations (reductions, scans, permute,
reshape, join/split, gather, broadcasts of reductions, expand_dims) over every rank-2 distributed Gluon layout, CGA
layouts of 1 to 8 CTAs included, compiled for sm_90a on a CPU (Triton ships ptxas).

The layout is valid (``oracles.gluon_layouts``: every precondition of ``to_linear_layout`` holds) and the kernel is
what a Gluon user writes, so a compile error is a refusal of a valid kernel unless Triton documents the limit
(``oracles.gluon_layouts.op_precondition``: a scan lowers blocked layouts only), and a process abort is a crash. Compiled only: the values the kernel computes are the GPU targets' to check.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from layoutfuzz.generators import gluon_ops
from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.harness.capture import stderr_text
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Unsupported
from layoutfuzz.harness.triton_compat.gluon_layouts import (
    MISSING_OP,
    GluonTarget,
    from_spec,
    num_ctas,
    without_tensor_types,
)
from layoutfuzz.oracles import gluon_layouts as oracle
from layoutfuzz.reports.signatures import compile_error

SM90 = ("cuda", 90, 32)


def valid(layout: Mapping[str, Any], shape: list[int]) -> bool:
    """A layout the operations may be given: every documented precondition of its linear layout holds."""
    return oracle.precondition(dict(layout), shape) is None


class TritonLayoutOps(GluonTarget):
    name = "triton.layout_ops"
    layer = "Triton's lowering (Gluon to PTX, ptxas)"
    description = ("reductions, scans, permute, reshape, join/split, gather and broadcasts over every rank-2 Gluon "
                   "distributed layout (CGA of 1-8 CTAs) compiled for sm_90a on the CPU")

    def generate(self, source: Source) -> dict[str, Any]:
        return gluon_ops.case(source, valid)

    def validate(self, case: Case) -> None:
        p = case.params
        if p.get("op") not in gluon_ops.OPS or p.get("axis") not in (0, 1):
            raise ValueError(f"params need 'op' (one of {list(gluon_ops.OPS)}) and 'axis' (0 or 1)")
        if not isinstance(p.get("shape"), list) or len(p["shape"]) != 2:
            raise ValueError("params need 'shape', [M, N]")
        if not isinstance(p.get("layout"), Mapping) or p["layout"].get("kind") not in gluon_ops.KINDS:
            raise ValueError(f"params need 'layout', a rank-2 distributed Gluon layout of a kind in {list(gluon_ops.KINDS)}")
        if not valid(p["layout"], p["shape"]):
            raise ValueError(f"the layout breaks a precondition: {oracle.precondition(dict(p['layout']), p['shape'])}")

    def family(self, case: Case) -> str:
        return f"{case.params['op']}:{case.params['layout']['kind']}"

    def parameter_space(self) -> Space:
        """Operations, axes, layout kinds, CTA counts, and the edges each campaign must draw."""
        api = "Gluon's layout-sensitive operations (triton/experimental/gluon/language/_core.py, triton/language/standard.py)"
        return Space((
            Parameter("op", gluon_ops.OPS, api, lambda p: p["op"]),
            Parameter("axis", (0, 1), api, lambda p: p["axis"]),
            Parameter("layout", gluon_ops.KINDS, "Gluon's distributed layouts", lambda p: p["layout"]["kind"]),
            Parameter("CTAs", (1, 2, 4, 8), "Gluon: cga_layout, one basis per CTA bit", lambda p: num_ctas(p["layout"])),
            Parameter("region", ("edge", "inside"), "dims of 1 and tiles larger than the tensor",
                      lambda p: "edge" if p.get("edge") else "inside"),
        ))

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """A halved dim, then one CGA basis fewer (the case stays valid or is skipped by the reducer)."""
        p = case.params
        for d, size in enumerate(p["shape"]):
            if size > 1:
                smaller = [s // 2 if i == d else s for i, s in enumerate(p["shape"])]
                if p["layout"]["kind"] != "distributed_linear" and valid(p["layout"], smaller):
                    yield {**p, "shape": smaller}
        if p["layout"].get("cga_layout"):
            layout = {**p["layout"], "cga_layout": p["layout"]["cga_layout"][:-1]}
            if valid(layout, p["shape"]):
                yield {**p, "layout": layout}

    def expected(self, case: Case) -> Any:
        p = case.params
        return {"compiles": True, "limit": oracle.op_precondition(p["op"], p["axis"], dict(p["layout"]))}

    def observed(self, case: Case) -> Any:
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.experimental.gluon._runtime import GluonASTSource

        from layoutfuzz.harness.triton_compat import gluon_op_kernels

        p = case.params
        try:
            layout = from_spec(p["layout"])
        except TypeError as exc:
            raise Unsupported(f"this Triton's Gluon has no {p['layout']['kind']} of these arguments: {exc}") from None
        m, n = p["shape"]
        constexprs = {"M": m, "N": n, "A": layout, "OP": p["op"], "AXIS": p["axis"]}
        signature = {"src": "*fp32", "dst": "*fp32", **{k: "constexpr" for k in constexprs}}
        options = {"num_warps": p["num_warps"], "num_ctas": num_ctas(p["layout"])}
        diagnostics: list[str] = []
        try:
            with stderr_text() as diagnostics:
                triton.compile(GluonASTSource(gluon_op_kernels.layout_op_kernel, signature, constexprs),
                               target=GPUTarget(*SM90), options=options)
        except Exception as exc:
            error = compile_error(exc, "".join(diagnostics))
            if MISSING_OP.search(error):
                raise Unsupported(f"this Triton's Gluon lacks the operation: {error}") from None
            return {"compiles": False, "error": without_tensor_types(error)}
        return {"compiles": True}

    def reproducer_script(self, case: Case) -> str:
        return standalone_script(case)

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        if observed.get("compiles"):
            return Comparison(True)
        if expected.get("limit"):  # a documented limit of the lowering: refusing is right
            return Comparison(True, note=f"refused ({expected['limit']})")
        error = observed.get("error", "")
        return Comparison(False, 1, (error,), f"compile error: {error}",  # one bug, one bucket: the op is in the note
                          f"the compiler refused a valid kernel ({case.params['op']} over axis {case.params['axis']})")


COMPILE_LIMIT_S = 15  # a kernel of one tile compiles in seconds; minutes is a problem of its own


def standalone_script(case: Case) -> str:
    """A script that needs only Triton: the case's kernel written out, compiled for sm_90a on a CPU in a child
    process (Triton's cache off, so that each run compiles); exits 1 while Triton refuses, aborts or takes longer
    than ``COMPILE_LIMIT_S`` on it, 0 once it compiles in time, 2 where this release's Gluon cannot build the layout."""
    import inspect

    from layoutfuzz.harness.targets.script_parts import TRITON_CHILD_ENV
    from layoutfuzz.harness.targets.triton_gluon_layouts import gluon_source
    from layoutfuzz.harness.triton_compat import gluon_op_kernels

    p = case.params
    kernel = inspect.getsource(gluon_op_kernels.layout_op_kernel.fn)
    m, n = p["shape"]
    return f'''"""A Gluon kernel a user writes ({p["op"]} over axis {p["axis"]} of a {m} x {n} tile in a valid layout), compiled
for sm_90a: it is expected to compile, within {COMPILE_LIMIT_S} s. Needs only Triton (no GPU)."""
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon import language as ttgl
from triton.experimental.gluon._runtime import GluonASTSource


{kernel}

try:
    LAYOUT = {gluon_source(p["layout"])}
except (TypeError, AttributeError) as exc:  # a class or argument this release does not have
    print("unavailable:", exc)
    raise SystemExit(0)
constexprs = {{"M": {m}, "N": {n}, "A": LAYOUT, "OP": {p["op"]!r}, "AXIS": {p["axis"]}}}
signature = {{"src": "*fp32", "dst": "*fp32", **{{k: "constexpr" for k in constexprs}}}}
try:
    triton.compile(GluonASTSource(layout_op_kernel, signature, constexprs), target=GPUTarget("cuda", 90, 32),
                   options={{"num_warps": {p["num_warps"]}, "num_ctas": {num_ctas(p["layout"])}}})
    print("compiled")
except Exception as exc:
    print("refused:", type(exc).__name__, (str(exc).splitlines() or [""])[0][:200])
"""

with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as kernel_file:  # Gluon reads a kernel's source
    kernel_file.write(CHILD)
fresh = {TRITON_CHILD_ENV}  # compile every run
try:
    child = subprocess.run([sys.executable, kernel_file.name], capture_output=True, text=True, env=fresh,
                           timeout={COMPILE_LIMIT_S})
    said = (child.stdout.strip().splitlines() or [""])[-1]
    why = next((line for line in child.stderr.splitlines() if "Assertion" in line or "error:" in line or "LLVM ERROR" in line), "")
    died = f"the process died (rc {{child.returncode}})" if child.returncode else ""
except subprocess.TimeoutExpired:
    said, why, died = "still compiling after {COMPILE_LIMIT_S} s", "", ""
print("triton", __import__("triton").__version__)
print("expected: compiled")
print("observed:", died or said, why[:300])
sys.exit(2 if said.startswith("unavailable") else 0 if said == "compiled" and not died else 1)
'''
