"""Target ``triton.layout_chains``: up to three layout-sensitive Gluon operations in a row
(``generators.gluon_chains``:
reductions, a reduction expanded back, a broadcast against one, scans, permutes, reshapes, join and split, a
conversion into any valid layout), each on the layout Gluon inferred for the one before, compiled for sm_90a on a CPU.

The first layout is valid (``oracles.gluon_layouts``) and every step legal on the shape it meets, so a compile error is
a refusal of a valid kernel unless Triton documents the limit (``chain_limit``: a scan lowers blocked layouts only,
and only the first layout is known to be one; ``split`` takes a last dim of 2 that one thread holds, which only a
``join`` just before guarantees; a conversion over a cluster whose elements would change CTAs, which the oracle does
not model for inferred layouts, so a refused conversion there is taken as that limit when the chain cut after it is
refused too), and a process abort is a crash. Compiled only: the values are for a GPU to check.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from layoutfuzz.generators import gluon_chains, gluon_ops
from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Unsupported
from layoutfuzz.harness.targets.triton_layout_ops import compile_op_kernel, compile_script, valid
from layoutfuzz.harness.triton_compat.gluon_layouts import GluonTarget, from_spec, num_ctas
from layoutfuzz.oracles import gluon_layouts as oracle

KEEPS_LAYOUT = ("center", "cumsum")  # steps whose result has their operand's layout
CROSS_CTA = ("Triton lowers convert_layout only where every element stays in its CTA; the chain's inferred layout "
             "there is not modelled, so a refused conversion over a cluster is taken as that limit")


def _compile(p: Mapping[str, Any], layouts: Mapping[str, Any]) -> str | None:
    """Compile the chain of ``p`` for sm_90a; None where it compiles, else the compiler's error."""
    return compile_op_kernel(kernel_call(p), layouts, p["num_warps"], num_ctas(p["layout"]))


def why_not(p: Mapping[str, Any]) -> str | None:
    """Why ``p`` is not a chain case (the validator's answer), or None."""
    shape, steps = p.get("shape"), p.get("steps")
    if p.get("op") != "chain":
        return "params need 'op': 'chain'"
    if not isinstance(shape, list) or len(shape) not in (2, 3) or not all(isinstance(d, int) and d > 0 for d in shape):
        return "params need 'shape': [M, N] or [M, N, K]"
    if not isinstance(steps, list) or not 1 <= len(steps) <= 3:
        return "params need 'steps': 1 to 3 [step, axis] pairs"
    at = list(shape)
    for step in steps:
        if (not isinstance(step, list) or len(step) != 2 or step[0] not in gluon_chains.STEPS
                or not isinstance(step[1], int) or not gluon_chains.legal(step[0], step[1], at)):
            return f"step {step!r} is not one of {list(gluon_chains.STEPS)} legal on a tensor of shape {at}"
        at = gluon_chains.step_shape(step[0], step[1], at)
    layout = p.get("layout")
    if not isinstance(layout, Mapping) or layout.get("kind") not in gluon_ops.KINDS:
        return f"params need 'layout', a distributed Gluon layout of a kind in {list(gluon_ops.KINDS)}"
    if not valid(layout, shape):
        return f"the layout breaks a precondition: {oracle.precondition(dict(layout), shape)}"
    converts = [i for i, (step, _) in enumerate(steps) if step == "convert"]
    if len(converts) > 1 or bool(converts) != ("convert_layout" in p):
        return "a chain converts at most once, and 'convert_layout' is given where it does"
    if converts:
        met = gluon_chains.shapes(steps, shape)[converts[0]]
        if not valid(p["convert_layout"], met) or num_ctas(p["convert_layout"]) != num_ctas(layout):
            return "the converted-to layout breaks a precondition for its shape or spans other CTAs"
    return None


def chain_limit(p: Mapping[str, Any]) -> str | None:
    """A documented limit the chain may meet, as "NAME: detail" (a refusal there is right), or None: a scan of a layout
    not known to be blocked (the first layout where it is not blocked or is split across CTAs on the axis, any
    inferred one), a split whose last dim no join just before put in one thread's registers."""
    layout_is_first = True
    for i, (step, axis) in enumerate(p["steps"]):
        if step == "cumsum":
            limit = oracle.op_precondition("cumsum", axis, dict(p["layout"])) if layout_is_first else (
                "scan: an inferred layout (blocked only)")
            if limit:
                return limit
        if step == "split" and (i == 0 or p["steps"][i - 1][0] != "join"):
            return "split: a last dim no join put in one thread's registers"
        layout_is_first = layout_is_first and step in KEEPS_LAYOUT
    return None


def kernel_call(p: Mapping[str, Any]) -> tuple[str, dict[str, Any], str]:
    """The chain kernel of ``gluon_op_kernels`` (rank 2 or 3 loaded), its constexprs (the layouts as "A" and "B",
    filled in by the caller) and its pointers' type."""
    constexprs: dict[str, Any] = {**dict(zip("MNK", p["shape"])), "A": "A", "B": "B"}
    for i, (step, axis) in enumerate([*p["steps"], *[["none", 0]] * (3 - len(p["steps"]))], 1):
        constexprs[f"S{i}"], constexprs[f"X{i}"] = step, axis
    return ("chain_rank2_kernel" if len(p["shape"]) == 2 else "chain_rank3_kernel"), constexprs, "*fp32"


def describe_steps(p: Mapping[str, Any]) -> str:
    """The chain's steps as "trans>sum>convert" (families and signatures)."""
    return ">".join(step for step, _ in p["steps"])


def describe(p: Mapping[str, Any]) -> str:
    """The chain in a few words: "trans, sum over axis 1, convert"."""
    return ", ".join(f"{step} over axis {axis}" if step in gluon_chains.AXIS_STEPS else step
                     for step, axis in p["steps"])


class TritonLayoutChains(GluonTarget):
    name = "triton.layout_chains"
    layer = "Triton's lowering (Gluon to PTX, ptxas)"
    description = ("chains of 1-3 layout-sensitive Gluon operations (reductions, scans, permutes, reshapes, "
                   "join/split, conversions), each on the layout inferred for the one before, compiled for sm_90a")

    def generate(self, source: Source) -> dict[str, Any]:
        return gluon_chains.chain_case(source, valid)

    def validate(self, case: Case) -> None:
        why = why_not(case.params)
        if why:
            raise ValueError(why)

    def family(self, case: Case) -> str:
        p = case.params
        return f"{describe_steps(p)}:{p['layout']['kind']}"

    def timeout_cause(self, case: Case) -> str:
        return describe_steps(case.params)

    def parameter_space(self) -> Space:
        api = "Gluon's layout-sensitive operations (triton/experimental/gluon/language/_core.py), chained"
        return Space((
            Parameter("first step", gluon_chains.STEPS, api, lambda p: p["steps"][0][0]),
            Parameter("last step", gluon_chains.STEPS, api, lambda p: p["steps"][-1][0]),
            Parameter("depth", gluon_chains.DEPTHS, "the grammar's depth bound", lambda p: len(p["steps"])),
            Parameter("rank", (2, 3), "the loaded tile's rank", lambda p: len(p["shape"])),
            Parameter("layout", gluon_ops.KINDS, "Gluon's distributed layouts", lambda p: p["layout"]["kind"]),
            Parameter("converted to", gluon_ops.KINDS, "convert_layout(value, layout)",
                      lambda p: p["convert_layout"]["kind"] if "convert_layout" in p else None),
            Parameter("CTAs", (1, 2, 4, 8), "Gluon: cga_layout, one basis per CTA bit",
                      lambda p: num_ctas(p["layout"])),
            Parameter("region", ("edge", "inside"), "dims of 1 and tiles larger than the tensor",
                      lambda p: "edge" if p.get("edge") else "inside"),
        ), _illegal)

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """A step fewer (the last, then the first), then the conversion's layout the first one's where it fits."""
        p = case.params
        for steps in (p["steps"][:-1], p["steps"][1:]):
            q = {**p, "steps": steps}
            if not any(step == "convert" for step, _ in steps):
                q.pop("convert_layout", None)
            if steps and why_not(q) is None:
                yield q

    def expected(self, case: Case) -> Any:
        return {"compiles": True, "limit": chain_limit(case.params)}

    def observed(self, case: Case) -> Any:
        """Whether the chain compiles; where it does not and a conversion over a cluster comes first, whether the
        chain cut after that conversion is refused too (the conversion's refusal)."""
        p = case.params
        try:
            layouts = {"A": from_spec(p["layout"]),
                       "B": from_spec(p["convert_layout"]) if "convert_layout" in p else None}
        except TypeError as exc:
            raise Unsupported(f"this Triton's Gluon has no layout of these arguments: {exc}") from None
        error = _compile(p, layouts)
        if error is None:
            return {"compiles": True}
        answer = {"compiles": False, "error": error}
        converts = [i for i, (step, _) in enumerate(p["steps"]) if step == "convert"]
        if converts and num_ctas(p["layout"]) > 1:  # is the conversion itself refused? (the chain cut after it)
            answer["conversion_refused"] = converts[0] == len(p["steps"]) - 1 or _compile(
                {**p, "steps": p["steps"][:converts[0] + 1]}, layouts) is not None
        return answer

    def reproducer_script(self, case: Case) -> str:
        """The chain kernel and the functions it calls written out, compiled for sm_90a in a child process."""
        p = case.params
        call = kernel_call(p)
        tile = " x ".join(str(d) for d in p["shape"])
        layouts = {"A": ("LAYOUT", p["layout"]), "B": ("CONVERT_LAYOUT", p.get("convert_layout"))}
        return compile_script(p, call, ("store_tile", "add_combine", "chain_step", call[0]),
                              f"{describe(p)}, on a {tile} tile", layouts)

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        if observed.get("compiles"):
            return Comparison(True)
        if expected.get("limit"):
            return Comparison(True, note=f"refused ({expected['limit']})")
        if observed.get("conversion_refused"):
            return Comparison(True, note="refused a conversion between layouts of a cluster (" + CROSS_CTA + ")")
        error = observed.get("error", "")
        return Comparison(False, 1, (error,), f"compile error: {error}",
                          f"the compiler refused a valid chain ({describe(case.params)})")


def _illegal(a: str, x: Any, b: str, y: Any) -> bool:
    """Pairs no case can hold: NVMMA and dot-operand first layouts are rank 2 or 3 as drawn; ``rot`` and ``split``
    cannot come first on a rank-2 tile's... (every step is legal somewhere, so only the conversion's rank rules)."""
    v = {a: x, b: y}
    return v.get("layout") == "nvmma_distributed" and v.get("rank") == 3
