"""Target ``triton.layout_ops``: Triton's lowering of layout-sensitive operations (reductions, scans, permute,
reshape, join/split, gather, broadcasts of reductions, expand_dims; scans and reductions with a user-written combine,
(value, index) pairs and reversed scans included; histograms of 1-D tensors) over every rank-2 and rank-3 distributed
Gluon layout, CGA layouts of 1 to 8 CTAs included, compiled for sm_90a on a CPU (Triton ships ptxas).

The layout is valid (``oracles.gluon_layouts``: every precondition of ``to_linear_layout`` holds) and the kernel is
what a Gluon user writes, so a compile error is a refusal of a valid kernel unless Triton documents the limit
(``oracles.gluon_layouts.op_precondition``: a scan lowers blocked layouts only, a histogram has a power-of-two
bin count), and a process abort is a crash. Compiled only: the values the kernel computes are the GPU targets' to check.
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
    description = ("reductions, scans (custom combines, (value, index) pairs, reversed), permute, reshape, join/split, "
                   "gather, broadcasts and histograms over every rank-1 to rank-3 Gluon distributed layout (CGA of 1-8 "
                   "CTAs) compiled for sm_90a on the CPU")

    def generate(self, source: Source) -> dict[str, Any]:
        return gluon_ops.compile_case(source, valid)

    def validate(self, case: Case) -> None:
        p = case.params
        if p.get("op") not in gluon_ops.ALL_OPS:
            raise ValueError(f"params need 'op', one of {list(gluon_ops.ALL_OPS)}")
        ranks = (1,) if p["op"] == "histogram" else (2, 3)
        if not isinstance(p.get("shape"), list) or len(p["shape"]) not in ranks:
            raise ValueError("params need 'shape': [M] for a histogram, [M, N] or [M, N, K] for any other op")
        if p.get("axis") not in range(len(p["shape"])):
            raise ValueError("params need 'axis', a dim of the shape")
        if ("reverse" in p) != (p["op"] in ("scan_max", "scan_pair")) or p.get("reverse") not in (None, False, True):
            raise ValueError("a scan with a user-written combine, and it alone, takes 'reverse' (a bool)")
        why = atomic_problem(p)
        if why:
            raise ValueError(why)
        if not isinstance(p.get("layout"), Mapping) or p["layout"].get("kind") not in gluon_ops.KINDS:
            raise ValueError(f"params need 'layout', a distributed Gluon layout of a kind in {list(gluon_ops.KINDS)}")
        if not valid(p["layout"], p["shape"]):
            raise ValueError(f"the layout breaks a precondition: {oracle.precondition(dict(p['layout']), p['shape'])}")
        if p["op"] == "histogram":
            bins = p.get("bins")
            if not isinstance(bins, int) or isinstance(bins, bool) or not 1 <= bins <= 1 << 12:
                raise ValueError("a histogram needs 'bins', 1 to 4096")
            dst = p.get("dst_layout")
            if not isinstance(dst, Mapping) or dst.get("kind") not in gluon_ops.KINDS_1D:
                raise ValueError(f"a histogram needs 'dst_layout', a 1-D layout of a kind in {list(gluon_ops.KINDS_1D)}")
            if not valid(dst, [histogram_dim(bins)]) or num_ctas(dst) != num_ctas(p["layout"]):
                raise ValueError("the histogram's layout breaks a precondition or spans other CTAs than the input's")

    def family(self, case: Case) -> str:
        p = case.params
        return f"{p['op']}:{p['layout']['kind']}" + (":rank3" if len(p["shape"]) == 3 else "")

    def timeout_cause(self, case: Case) -> str:
        """The operation: a gather's compile time and a histogram's are two root causes."""
        return str(case.params.get("op", ""))

    def parameter_space(self) -> Space:
        """Operations, axes, layout kinds, CTA counts, and the edges each campaign must draw."""
        api = "Gluon's layout-sensitive operations (triton/experimental/gluon/language/_core.py, triton/language/standard.py)"
        return Space((
            Parameter("op", gluon_ops.ALL_OPS, api, lambda p: p["op"]),
            Parameter("axis", (0, 1, 2), api, lambda p: p["axis"]),
            Parameter("rank", (1, 2, 3), "Gluon: histogram takes 1-D input only (_semantic.histogram), rank 3 for the rest",
                      lambda p: len(p["shape"])),
            Parameter("reverse", (False, True), "associative_scan(input, axis, combine_fn, reverse)",
                      lambda p: p.get("reverse")),
            Parameter("bins", (*gluon_ops.BINS, "not a power of two"), "histogram(input, num_bins, mask, layout)",
                      lambda p: None if "bins" not in p else p["bins"] if p["bins"] in gluon_ops.BINS else "not a power of two",
                      edges=(1, 1024, "not a power of two")),
            Parameter("histogram layout", gluon_ops.KINDS_1D, "Gluon: histogram's destination layout",
                      lambda p: p["dst_layout"]["kind"] if "dst_layout" in p else None),
            Parameter("atomic type", gluon_ops.ELEMENT_TYPES, "Gluon's atomics: the pointer's element type",
                      lambda p: p.get("dtype")),
            Parameter("sem", gluon_ops.SEMS, "Gluon's atomics: sem", lambda p: p.get("sem")),
            Parameter("scope", gluon_ops.SCOPES, "Gluon's atomics: scope", lambda p: p.get("scope")),
            Parameter("layout", gluon_ops.KINDS, "Gluon's distributed layouts", lambda p: p["layout"]["kind"]),
            Parameter("CTAs", (1, 2, 4, 8), "Gluon: cga_layout, one basis per CTA bit", lambda p: num_ctas(p["layout"])),
            Parameter("region", ("edge", "inside"), "dims of 1 and tiles larger than the tensor",
                      lambda p: "edge" if p.get("edge") else "inside"),
        ), _illegal)

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """A halved dim (bins included), then one CGA basis fewer (the case stays valid or is skipped by the reducer)."""
        p = case.params
        if p.get("bins", 1) > 1 and p["dst_layout"]["kind"] != "distributed_linear":
            yield {**p, "bins": p["bins"] // 2}
        for d, size in enumerate(p["shape"]):
            if size > 1:
                smaller = [s // 2 if i == d else s for i, s in enumerate(p["shape"])]
                if p["layout"]["kind"] != "distributed_linear" and valid(p["layout"], smaller):
                    yield {**p, "shape": smaller}
        if p["layout"].get("cga_layout") and "dst_layout" not in p:
            layout = {**p["layout"], "cga_layout": p["layout"]["cga_layout"][:-1]}
            if valid(layout, p["shape"]):
                yield {**p, "layout": layout}

    def expected(self, case: Case) -> Any:
        p = case.params
        return {"compiles": True, "limit": oracle.op_precondition(p["op"], p["axis"], dict(p["layout"]), p.get("bins"))}

    def observed(self, case: Case) -> Any:
        p = case.params
        try:
            layouts = {"A": from_spec(p["layout"])}
            if "dst_layout" in p:
                layouts["H"] = from_spec(p["dst_layout"])
        except TypeError as exc:
            raise Unsupported(f"this Triton's Gluon has no layout of these arguments: {exc}") from None
        error = compile_op_kernel(kernel_call(p), layouts, p["num_warps"], num_ctas(p["layout"]))
        return {"compiles": True} if error is None else {"compiles": False, "error": error}

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


def compile_op_kernel(call: tuple[str, dict[str, Any], str], layouts: Mapping[str, Any], num_warps: int,
                      ctas: int) -> str | None:
    """Compile the kernel of ``gluon_op_kernels`` that ``call`` names (``kernel_call``'s kernel, constexprs and pointer
    type; ``layouts`` in place of its layout constexprs) for sm_90a: None where it compiles, else the compiler's
    error; ``Unsupported`` where this release's Gluon lacks an operation it calls."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    from layoutfuzz.harness.triton_compat import gluon_op_kernels

    name, constexprs, dtype = call
    constexprs = {k: layouts.get(k, v) for k, v in constexprs.items()}
    signature = {"src": dtype, "dst": dtype, **{k: "constexpr" for k in constexprs}}
    diagnostics: list[str] = []
    try:
        with stderr_text() as diagnostics:
            triton.compile(GluonASTSource(getattr(gluon_op_kernels, name), signature, constexprs),
                           target=GPUTarget(*SM90), options={"num_warps": num_warps, "num_ctas": ctas})
    except Exception as exc:
        error = compile_error(exc, "".join(diagnostics))
        if MISSING_OP.search(error) or any(MISSING_OP.search(str(e)) for e in _causes(exc)):
            raise Unsupported(f"this Triton's Gluon lacks the operation: {error}") from None
        return without_tensor_types(error)
    return None


def _causes(exc: BaseException) -> list[BaseException]:
    """An exception and the ones it was raised from: an operation missing in a function the kernel calls is a
    CompilationError of the call, raised from the inner function's, raised from the AttributeError."""
    chain: list[BaseException] = []
    while exc is not None and exc not in chain and len(chain) < 16:
        chain.append(exc)
        exc = exc.__cause__ or exc.__context__
    return chain


def atomic_problem(p: Mapping[str, Any]) -> str | None:
    """Why ``p``'s element type, memory order or scope is wrong (an atomic, and it alone, may name its element type,
    one Triton takes for it; an ordered atomic, and it alone, takes both of the others), or None."""
    if "dtype" in p and p.get("dtype") not in gluon_ops.ATOMIC_TYPES.get(p.get("op", ""), ()):
        return f"an atomic, and it alone, takes 'dtype', one of {gluon_ops.ATOMIC_TYPES}"
    ordered = p.get("op") in gluon_ops.ORDERED_ATOMICS
    if ordered != ("sem" in p) or ordered != ("scope" in p):
        return f"an atomic of {list(gluon_ops.ORDERED_ATOMICS)}, and it alone, takes 'sem' and 'scope'"
    if ordered and (p["sem"] not in gluon_ops.SEMS or p["scope"] not in gluon_ops.SCOPES):
        return f"'sem' is one of {list(gluon_ops.SEMS)}, 'scope' one of {list(gluon_ops.SCOPES)}"
    return None


def _illegal(a: str, x: Any, b: str, y: Any) -> bool:
    """Pairs no case can hold: a histogram is rank 1 over axis 0 with bins and an output layout, and only it is; only
    a user-written scan is reversed; axis 2 is rank 3's; a rank-1 layout is blocked, a slice or linear; NVMMA
    layouts are rank 2; a linear layout holds no bin count that is not a power of two."""
    v = {a: x, b: y}
    histogram_only = ("bins", "histogram layout")
    if "op" in v and v["op"] != "histogram" and (any(k in v for k in histogram_only) or v.get("rank") == 1):
        return True
    if "op" in v and v["op"] not in ("scan_max", "scan_pair") and "reverse" in v:
        return True
    if "op" in v and v["op"] not in gluon_ops.ORDERED_ATOMICS and ("sem" in v or "scope" in v):
        return True
    if ("sem" in v or "scope" in v) and ("reverse" in v or "bins" in v or "histogram layout" in v or v.get("rank") == 1):
        return True
    if "atomic type" in v and ("reverse" in v or "bins" in v or "histogram layout" in v or v.get("rank") == 1):
        return True
    if "atomic type" in v and "op" in v:  # only atomics have one, each of the types Triton takes for it
        return v["atomic type"] not in gluon_ops.ATOMIC_TYPES.get(v["op"], ())
    if v.get("op") == "histogram" and (v.get("rank", 1) != 1 or v.get("axis", 0) != 0 or "reverse" in v):
        return True
    if "reverse" in v and any(k in v for k in (*histogram_only,)) or v.get("rank") == 1 and "reverse" in v:
        return True
    if v.get("rank") in (2, 3) and any(k in v for k in histogram_only):
        return True
    if v.get("axis") in (1, 2) and (v.get("rank") == 1 or any(k in v for k in histogram_only)):
        return True
    if v.get("axis") == 2 and v.get("rank") == 2:
        return True
    if v.get("layout") in ("nvmma_distributed", "dot_operand") and (
            v.get("rank") == 1 or v.get("op") == "histogram" or any(k in v for k in histogram_only)):
        return True
    if v.get("bins") == "not a power of two" and v.get("histogram layout") == "distributed_linear":
        return True  # a linear layout names its shape, a power of two
    return v.get("layout") == "nvmma_distributed" and (v.get("rank") == 3 or v.get("axis") == 2)


def histogram_dim(bins: int) -> int:
    """The power of two a histogram's destination layout is drawn and checked for (``bins`` itself where it is one)."""
    return bins if bins & (bins - 1) == 0 else 1 << bins.bit_length()


def kernel_call(p: Mapping[str, Any]) -> tuple[str, dict[str, Any], str]:
    """The kernel of ``harness.triton_compat.gluon_op_kernels`` a case compiles, its constexprs (the layouts as the
    names "A" and "H", filled in by the caller) and its pointers' type: the original operations on a rank-2 tile
    keep ``layout_op_kernel``; histograms, the user-written combines and rank-3 tiles have kernels of their own."""
    shape, op = p["shape"], p["op"]
    if op == "histogram":
        return "histogram_kernel", {"M": shape[0], "B": p["bins"], "A": "A", "H": "H"}, "*i32"
    dims = dict(zip("MNK", shape))
    if op in gluon_ops.OPS and len(shape) == 2:
        return "layout_op_kernel", {**dims, "A": "A", "OP": op, "AXIS": p["axis"]}, "*fp32"
    pointer = "*" + p.get("dtype", "fp32")  # an atomic's element type (float32 for the other operations)
    if op in gluon_ops.ORDERED_ATOMICS:
        name = "rank2_atomic_kernel" if len(shape) == 2 else "rank3_atomic_kernel"
        return name, {**dims, "A": "A", "OP": op, "SEM": p["sem"], "SCOPE": p["scope"]}, pointer
    name = "rank2_op_kernel" if len(shape) == 2 else "rank3_op_kernel"
    return name, {**dims, "A": "A", "OP": op, "AXIS": p["axis"], "REVERSE": bool(p.get("reverse"))}, pointer


COMPILE_LIMIT_S = 15  # a kernel of one tile compiles in seconds; minutes is a problem of its own


def standalone_script(case: Case) -> str:
    """A script that needs only Triton: the case's kernel written out, compiled for sm_90a on a CPU in a child
    process (Triton's cache off, so that each run compiles); exits 1 while Triton refuses, aborts or takes longer
    than ``COMPILE_LIMIT_S`` on it, 0 once it compiles in time, 2 where this release's Gluon cannot build the layout."""
    p = case.params
    name, constexprs, dtype = kernel_call(p)
    if name == "layout_op_kernel":
        needed: tuple[str, ...] = (name,)
    elif "atomic" in name:
        needed = ("apply_atomic", name)
    else:  # the kernel and the functions it calls, each as the user writes it
        needed = ("max_combine", "argmax_combine", "store_tile", "apply_op", name) if name != "histogram_kernel" else (name,)
    tile = " x ".join(str(d) for d in p["shape"])
    what = (f"a histogram of {p['bins']} bins of {tile} values" if p["op"] == "histogram" else
            f"{p['op']} ({p.get('dtype', 'fp32')}, {p['sem']}, scope {p['scope']}) of a {tile} tile" if "sem" in p else
            f"{p['op']} of a {tile} {p['dtype']} tile" if "dtype" in p else
            f"{p['op']} over axis {p['axis']}{' reversed' if p.get('reverse') else ''} of a {tile} tile")
    layouts = {"A": ("LAYOUT", p["layout"])}
    if "dst_layout" in p:
        layouts["H"] = ("DST_LAYOUT", p["dst_layout"])
    return compile_script(p, (name, constexprs, dtype), needed, what, layouts)


def compile_script(p: Mapping[str, Any], call: tuple[str, dict[str, Any], str], needed: tuple[str, ...], what: str,
                   layouts: Mapping[str, tuple[str, Any]]) -> str:
    """The script of ``standalone_script`` for any kernel of ``gluon_op_kernels``: ``call`` is (kernel, constexprs,
    pointer type), ``needed`` the kernel and the functions it calls, ``layouts`` each layout constexpr's (variable
    name, layout dict), a None layout passed as None."""
    import inspect

    from layoutfuzz.harness.targets.script_parts import TRITON_CHILD_ENV
    from layoutfuzz.harness.targets.triton_gluon_layouts import gluon_source
    from layoutfuzz.harness.triton_compat import gluon_op_kernels

    name, constexprs, dtype = call
    kernel = "\n\n".join(inspect.getsource(getattr(gluon_op_kernels, f).fn) for f in needed)
    given = [(var, spec) for var, spec in layouts.values() if spec is not None]
    layouts_source = "\n    ".join(f"{var} = {gluon_source(spec)}" for var, spec in given)
    names = {k: var if spec is not None else "None" for k, (var, spec) in layouts.items()}
    literal = "{" + ", ".join(f"{k!r}: {names.get(k, repr(v))}" for k, v in constexprs.items()) + "}"
    return f'''"""A Gluon kernel a user writes ({what} in a valid layout), compiled
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
    {layouts_source}
except (TypeError, AttributeError) as exc:  # a class or argument this release does not have
    print("unavailable:", exc)
    raise SystemExit(0)
constexprs = {literal}
signature = {{"src": "{dtype}", "dst": "{dtype}", **{{k: "constexpr" for k in constexprs}}}}
try:
    triton.compile(GluonASTSource({name}, signature, constexprs), target=GPUTarget("cuda", 90, 32),
                   options={{"num_warps": {p["num_warps"]}, "num_ctas": {num_ctas(p["layout"])}}})
    print("compiled")
except Exception as exc:
    chain = [exc]
    while (chain[-1].__cause__ or chain[-1].__context__) is not None and len(chain) < 16:
        chain.append(chain[-1].__cause__ or chain[-1].__context__)
    missing = [e for e in chain if "gluon.language' has no attribute" in str(e)]
    if missing:  # an operation this release's Gluon does not have
        print("unavailable:", str(missing[-1]).splitlines()[-1][:200])
    else:
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
