"""Target ``triton.gluon_layouts``: every Gluon layout class, over everything its constructor accepts, through
``to_linear_layout`` (Triton's C++ conversion, as ``ttgl.to_linear_layout`` calls it), in a module of as many CTAs as
the layout's CGA layout spans.

Each answer and each refusal is judged (``oracles.gluon_layouts``): a refusal is right where a documented
precondition fails and spurious where the oracle models the case and every precondition holds; an answer must have
its kind's defining properties (onto the tensor, 32 lanes, a block basis per CTA bit, each CTA's offsets one-to-one)
and, where the oracle models the kind, be exactly the oracle's layout. A process abort is a crash either way: where a
precondition fails, Triton owes a Python error, not an abort.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from layoutfuzz.generators import gluon_layouts as gen
from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.harness.compare import Comparison, compare_values
from layoutfuzz.harness.target import Unsupported
from layoutfuzz.harness.triton_compat.builder import builder
from layoutfuzz.harness.triton_compat.gluon_layouts import GluonTarget, constructor_args, from_spec, num_ctas
from layoutfuzz.harness.triton_compat.layouts import bases, in_triton_convention, shared_layout
from layoutfuzz.oracles import gluon_layouts as oracle
from layoutfuzz.reports.signatures import normalise


class TritonGluonLayouts(GluonTarget):
    name = "triton.gluon_layouts"
    layer = "Triton's layout library (Gluon to_linear_layout)"
    description = ("every Gluon layout class over all its constructor accepts (CGA, rank 1-4, any wgmma N, padded, "
                   "linear, AMD, tensor memory) through to_linear_layout: refusals and answers judged")

    def generate(self, source: Source) -> dict[str, Any]:
        return gen.case(source)

    def validate(self, case: Case) -> None:
        p = case.params
        if not isinstance(p.get("layout"), Mapping) or p["layout"].get("kind") not in gen.KINDS:
            raise ValueError(f"params need 'layout', a Gluon layout dict of a kind in {list(gen.KINDS)}")
        if not isinstance(p.get("shape"), list) or not all(isinstance(s, int) and 0 < s <= 1 << 20 for s in p["shape"]):
            raise ValueError("params need 'shape', a list of positive dims")
        if p.get("num_warps") not in (1, 2, 4, 8, 16, 32):
            raise ValueError("params need 'num_warps', a power of two from 1 to 32")

    def family(self, case: Case) -> str:
        return case.params["layout"]["kind"]

    def parameter_space(self) -> Space:
        """The layout kinds, their ranks, CTA counts, and the edges each campaign must draw."""
        api = "Gluon's layout classes (triton/experimental/gluon/language/_layouts.py)"
        return Space((
            Parameter("kind", gen.KINDS, api, lambda p: p["layout"]["kind"]),
            Parameter("rank", (1, 2, 3, 4), "Gluon: any rank a class takes", lambda p: len(p["shape"])),
            Parameter("CTAs", (1, 2, 4, 8), "Gluon: cga_layout, one basis per CTA bit",
                      lambda p: num_ctas(p["layout"])),
            Parameter("nesting", (1, 2, 3), "slices of slices, dot operands of mma layouts", lambda p: _depth(p["layout"])),
            Parameter("region", ("edge", "inside"), "the domain's edges: rank 1 and 4, dims of 1, any wgmma N, "
                      "sub-atom NVMMA blocks, broadcast and non-low-bit CTA bases", lambda p: "edge" if p.get("edge") else "inside"),
            Parameter("precondition", ("holds", "fails"), "oracles.gluon_layouts", lambda p: "fails" if oracle.precondition(
                p["layout"], p["shape"]) else "holds"),
        ))

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """A halved tensor dim, then one CGA basis fewer."""
        p = case.params
        for d, size in enumerate(p["shape"]):
            if size > 1:
                yield {**p, "shape": [s // 2 if i == d else s for i, s in enumerate(p["shape"])]}
        layout = p["layout"]
        if layout.get("cga_layout"):
            yield {**p, "layout": {**layout, "cga_layout": layout["cga_layout"][:-1]}}

    def expected(self, case: Case) -> Any:
        spec, shape = case.params["layout"], case.params["shape"]
        exact = oracle.expected(spec, shape, shared_layout)
        if exact is not None and "register" in exact:
            exact = in_triton_convention(spec["kind"], exact)  # "blocked" names the same layouts in both
        return {"precondition": oracle.precondition(spec, shape), "layout": exact}

    def observed(self, case: Case) -> Any:
        spec = case.params["layout"]
        try:
            layout = from_spec(spec)
        except (TypeError, AttributeError) as exc:  # a class or argument this release does not have
            if "argument" in str(exc) or "has no attribute" in str(exc):
                raise Unsupported(f"this Triton's Gluon has no {spec['kind']} of these arguments: {exc}") from None
            return {"refused": f"{type(exc).__name__}: {exc}", "by": "constructor"}
        except Exception as exc:  # the constructor refused: judged like any refusal
            return {"refused": f"{type(exc).__name__}: {exc}", "by": "constructor"}
        b = builder(case.params["num_warps"], num_ctas(spec))
        try:
            result = b.to_linear_layout(layout._to_ir(b), list(case.params["shape"]))
        except Exception as exc:
            return {"refused": f"{type(exc).__name__}: {exc}", "by": "to_linear_layout"}
        if not hasattr(result, "offset_bases") and not hasattr(result, "reg_bases"):
            return {"unreadable": type(result).__name__}
        return {"layout": bases(result)}

    def reproducer_script(self, case: Case) -> str:
        return standalone_script(case)

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        spec, shape = case.params["layout"], case.params["shape"]
        failed = expected["precondition"]
        if "unreadable" in observed:
            return Comparison(True, note=f"answered a {observed['unreadable']}, not a linear layout")
        if "refused" in observed:
            if failed or expected["layout"] is None:
                return Comparison(True, note=f"refused ({failed or 'not modelled'})")
            return Comparison(False, 1, (observed["refused"],),
                              f"{spec['kind']}: spurious refusal ({normalise(observed['refused'], 80)})",
                              f"refused by the {observed['by']} though every precondition holds")
        if expected["layout"] is not None:
            verdict = compare_values(expected["layout"], observed["layout"])
            if not verdict.ok:
                return Comparison(False, verdict.mismatch_count, verdict.mismatches,
                                  f"{spec['kind']}: not the oracle's layout", verdict.note)
        broken = oracle.properties(spec, shape, observed["layout"])
        if not broken:
            return Comparison(True)
        condition = f": unchecked precondition ({failed.split(':')[0]})" if failed else ""
        return Comparison(False, len(broken), tuple(broken),
                          f"{spec['kind']}{condition}: {broken[0].split(':')[0]}", "; ".join(broken))


def _depth(layout: Mapping[str, Any]) -> int:
    return 1 + _depth(layout["parent"]) if "parent" in layout else 1


_GLUON_CLASS = {"blocked": "ttgl.BlockedLayout", "slice": "ttgl.SliceLayout", "dot_operand": "ttgl.DotOperandLayout",
                "nvmma_distributed": "ttgl.NVMMADistributedLayout", "distributed_linear": "ttgl.DistributedLinearLayout",
                "amd_mfma": "amd.AMDMFMALayout", "amd_wmma": "amd.AMDWMMALayout",
                "nvmma_shared": "ttgl.NVMMASharedLayout", "swizzled_shared": "ttgl.SwizzledSharedLayout",
                "shared_linear": "ttgl.SharedLinearLayout", "tensor_memory": "TensorMemoryLayout",
                "tensor_memory_scales": "TensorMemoryScalesLayout"}


def gluon_source(spec: Mapping[str, Any]) -> str:
    """The Gluon constructor call a layout dict stands for, as a user writes it."""
    if spec["kind"] == "padded_shared":
        return (f"ttgl.PaddedSharedLayout.with_identity_for({spec['interval_padding_pairs']!r}, {spec['shape']!r}, "
                f"{spec['order']!r}, {spec['cga_layout']!r})")
    args = ", ".join(f"{k}={gluon_source(v) if k == 'parent' else repr(v)}" for k, v in constructor_args(spec).items())
    return f"{_GLUON_CLASS[spec['kind']]}({args})"


def standalone_script(case: Case) -> str:
    """A script that needs only Triton: it compiles, for sm_90 on a CPU, a Gluon kernel that asks
    ``ttgl.to_linear_layout`` for the case's layout, in a child process; it exits 1 if the child dies by a signal (an
    abort where Triton owes a Python error or an answer), if Triton refuses a layout whose preconditions hold, or if
    a shared layout's offsets alias; 2 where this release's Gluon cannot build the layout; 0 otherwise."""
    p = case.params
    return rf'''"""Gluon's to_linear_layout on a layout its constructor accepts: a Python error or a layout is expected, not an
abort of the process. Needs only Triton (no GPU: the kernel is compiled for sm_90 on the CPU)."""
import ast
import os
import re
import subprocess
import sys
import tempfile

PRECONDITION = {oracle.precondition(dict(p["layout"]), p["shape"])!r}  # the documented precondition that fails, if any
SHARED = {p["layout"]["kind"] in oracle.SHARED_KINDS!r}

CHILD = r"""
import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon import language as ttgl
from triton.experimental.gluon._runtime import GluonASTSource

try:
    from triton.experimental.gluon.language import amd
    from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout{', TensorMemoryScalesLayout' if p['layout']['kind'] == 'tensor_memory_scales' else ''}
    LAYOUT = {gluon_source(p["layout"])}
except (TypeError, AttributeError, ImportError) as exc:  # a class or argument this release does not have
    print("unavailable:", exc)
    raise SystemExit(0)
SHAPE = {list(p["shape"])!r}


@gluon.jit
def probe(L: ttgl.constexpr, SHAPE: ttgl.constexpr):
    ttgl.static_print(ttgl.to_linear_layout(L, SHAPE))


src = GluonASTSource(probe, {{"L": "constexpr", "SHAPE": "constexpr"}}, {{"L": LAYOUT, "SHAPE": SHAPE}})
try:
    triton.compile(src, target=GPUTarget("cuda", 90, 32), options={{"num_warps": {p["num_warps"]}, "num_ctas": {num_ctas(p["layout"])}}})
except Exception as exc:
    print("raised", type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
"""

with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as kernel_file:  # Gluon reads a kernel's source
    kernel_file.write(CHILD)
fresh = {{**os.environ, "TRITON_ALWAYS_COMPILE": "1", "TRITON_CACHE_DIR": tempfile.mkdtemp()}}  # the front end must run
child = subprocess.run([sys.executable, kernel_file.name], capture_output=True, text=True, env=fresh)
tail = (child.stderr.strip().splitlines() or [""])
said = (child.stdout.strip().splitlines() or ["answered"])[-1]
died = child.returncode < 0 or child.returncode > 128
print("triton", __import__("triton").__version__)
print("expected:", "a Python error" if PRECONDITION else "a linear layout" + (", each CTA's offsets one-to-one" if SHARED else ""))


def one_to_one(bases):
    """Offset bases independent over F2 (no zero basis, none the XOR of others): no two offsets alias."""
    widths = [max(1, max((b[d] for b in bases), default=0).bit_length()) for d in range(len(bases[0]))] if bases else []
    packed, pivots = [int("".join(format(v, f"0{{w}}b") for v, w in zip(b, widths)), 2) for b in bases], {{}}
    for v in packed:
        while v and v.bit_length() in pivots:
            v ^= pivots[v.bit_length()]
        if not v:
            return False
        pivots[v.bit_length()] = v
    return True


offsets = re.search(r"offset_bases=(\[\[.*?\]\])", child.stdout)
if died:
    verdict, why = 1, f"the process died (rc {{child.returncode}}): " + next((line for line in tail if "LLVM ERROR" in line or "Assertion" in line), tail[-1])[:300]
elif said.startswith("unavailable"):
    verdict, why = 2, said
elif said.startswith("raised"):
    verdict, why = (0 if PRECONDITION else 1), said
elif SHARED and offsets and not one_to_one(ast.literal_eval(offsets[1])):
    verdict, why = 1, "offsets alias: " + offsets[1][:200]
else:
    verdict, why = 0, said[:300]
print("observed:", why)
sys.exit(verdict)
'''
