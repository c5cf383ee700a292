"""Target ``cute.layouts``: CuTe's layout algebra as CUTLASS's Python DSL computes it (``nvidia-cutlass-dsl``,
module ``cutlass.cute``), on the CPU, against the algebra's defining properties (the cases and the judgement:
``cute_algebra``, shared with ``pycute.layouts``: the same seed and index give both targets the same case).

The DSL evaluates layout algebra only while it traces a ``@cute.jit`` function (outside one the calls raise), and
static layouts give static answers at trace time: a batch of cases is one traced function that applies each case's
operation and reads the result's shape and stride back as Python ints. A raise of the DSL is judged by the
operation's precondition (a refusal is right only where it fails); an abort of the process is bisected down to its
case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.harness.target import Availability, Unsupported, only_answer, package_versions
from layoutfuzz.harness.targets.cute_algebra import ByMode, Call, CuteAlgebraTarget, _lists

# the DSL's products other than logical_product are typed ``tiler: Layout``: a tuple tiler is outside their signature
LAYOUT_TILER_ONLY = ("zipped_product", "tiled_product", "flat_product")

PACKAGE = "nvidia-cutlass-dsl"


class CuteDslLayouts(CuteAlgebraTarget):
    name = "cute.layouts"
    layer = "CuTe DSL (cutlass.cute layout algebra)"
    system = "CuTe DSL"
    description = "CUTLASS's Python DSL (cutlass.cute) layout algebra, traced in @cute.jit on the CPU, vs its defining properties"
    requires = (f"{PACKAGE} (pip install 'layoutfuzz[cutedsl]')",)
    max_batch = 1024  # one trace a batch: about 0.3 ms a case

    def availability(self) -> Availability:
        return dsl_availability("cutlass.cute")

    def versions(self) -> Mapping[str, str]:
        return package_versions(PACKAGE)

    def evaluate(self, call: Call) -> dict[str, Any]:
        return only_answer(evaluate_many([call]))

    def observed_batch(self, cases: Sequence[Case]) -> Sequence[Any]:
        """All the batch's cases in one trace; an entry is the case's result or the exception the DSL raised."""
        return evaluate_many([Call.of(case.params) for case in cases])

    def reproducer_script(self, case: Case) -> str | None:
        """A script that needs only the CuTe DSL (``layoutfuzz export``)."""
        return reproducer(case)


def dsl_availability(module: str) -> Availability:
    """Whether CUTLASS's Python DSL (``module`` of it) loads here, and if not, why."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError:
        return Availability(False, f"needs CUTLASS's Python DSL: pip install 'layoutfuzz[cutedsl]' ({PACKAGE})")
    except Exception as exc:  # the DSL's own start-up (its native libraries) failed here
        return Availability(False, f"{PACKAGE} does not load here: {str(exc)[:200]}")
    return Availability(True)


def evaluate_many(calls: Sequence[Call]) -> list[Any]:
    """Each call's answer computed by cutlass.cute inside one @cute.jit trace: {"shape", "stride"} of the result, or
    {"offsets"} of a composed layout; an entry is the exception where the DSL raised on that call."""
    import cutlass.cute as cute

    def layout(data: tuple) -> Any:
        return cute.make_layout(data[0], stride=data[1])

    def tiler(data: Any) -> Any:  # an integer tiler stays an integer: the DSL takes both; by mode, a tuple
        if isinstance(data, ByMode):
            return tuple(e if e is None or isinstance(e, int) else layout(e) for e in data.entries)
        return data if isinstance(data, int) else layout(data)

    def composed(c: Call) -> Any:
        return cute.make_composed_layout(cute.make_swizzle(*c.swizzle), c.offset, layout(c.a))

    def tv(c: Call) -> Any:
        tiler_mn, layout_tv = cute.make_layout_tv(layout(c.a), layout(c.b))
        return {"tiler": _lists(_static(tuple(tiler_mn) if isinstance(tiler_mn, tuple) else (tiler_mn,))),
                "shape": _lists(_static(layout_tv.shape)), "stride": _lists(_static(layout_tv.stride))}

    ops = {
        "composition": lambda c: cute.composition(layout(c.a), tiler(c.b)),
        "coalesce": lambda c: cute.coalesce(layout(c.a)),
        "complement": lambda c: cute.complement(layout(c.a), c.m),
        "left_inverse": lambda c: cute.left_inverse(layout(c.a)),
        "right_inverse": lambda c: cute.right_inverse(layout(c.a)),
        "logical_divide": lambda c: cute.logical_divide(layout(c.a), tiler(c.b)),
        "logical_product": lambda c: cute.logical_product(layout(c.a), tiler(c.b)),
        "zipped_divide": lambda c: cute.zipped_divide(layout(c.a), tiler(c.b)),
        "tiled_divide": lambda c: cute.tiled_divide(layout(c.a), tiler(c.b)),
        "flat_divide": lambda c: cute.flat_divide(layout(c.a), tiler(c.b)),
        "zipped_product": lambda c: cute.zipped_product(layout(c.a), tiler(c.b)),
        "tiled_product": lambda c: cute.tiled_product(layout(c.a), tiler(c.b)),
        "flat_product": lambda c: cute.flat_product(layout(c.a), tiler(c.b)),
        "blocked_product": lambda c: cute.blocked_product(layout(c.a), tiler(c.b)),
        "raked_product": lambda c: cute.raked_product(layout(c.a), tiler(c.b)),
        "recast": lambda c: cute.recast_layout(c.bits[0], c.bits[1], layout(c.a)),
        "swizzle": composed,
        "composition_swizzled": lambda c: cute.composition(composed(c), tiler(c.b)),
        "slice_swizzled": lambda c: cute.slice_(composed(c), c.get("coord")),
        "make_layout_tv": tv,
        "slice": lambda c: cute.slice_(layout(c.a), c.get("coord")),
        "dice": lambda c: cute.dice(layout(c.a), c.get("coord")),
        "select": lambda c: cute.select(layout(c.a), mode=c.get("modes")),
        "group_modes": lambda c: cute.group_modes(layout(c.a), c.get("begin"), c.get("end")),
        "flatten": lambda c: cute.flatten(layout(c.a)),
        "filter": lambda c: cute.filter(layout(c.a)),
        "filter_zeros": lambda c: cute.filter_zeros(layout(c.a)),
        "filter_zeros_profile": lambda c: cute.filter_zeros(layout(c.a), target_profile=c.get("profile")),
        "append": lambda c: cute.append(layout(c.a), layout(c.get("elem")), up_to_rank=c.get("up_to_rank")),
        "prepend": lambda c: cute.prepend(layout(c.a), layout(c.get("elem")), up_to_rank=c.get("up_to_rank")),
        "coalesce_profile": lambda c: cute.coalesce(layout(c.a), target_profile=c.get("profile")),
        "nullspace": lambda c: cute.nullspace(layout(c.a)),
        "make_layout_like": lambda c: cute.make_layout_like(layout(c.a)),
        "max_common_layout": lambda c: cute.max_common_layout(layout(c.a), layout(c.b)),
        "max_common_vector": lambda c: {"n": _static(cute.max_common_vector(layout(c.a), layout(c.b)))},
        "make_ordered_layout": lambda c: cute.make_ordered_layout(c.get("shape"), order=c.get("order")),
    }
    results: list[Any] = []

    def answer(c: Call) -> Any:  # outside the traced body: the DSL rewrites the control flow of what it traces
        if isinstance(c.b, ByMode) and c.op in LAYOUT_TILER_ONLY:
            return Unsupported(f"CuTe DSL's {c.op} takes a Layout tiler (its signature), not a tuple")
        try:
            r = ops[c.op](c)
            if isinstance(r, dict):
                return r
            if c.op in ("swizzle", "composition_swizzled", "slice_swizzled"):  # over the result's own domain
                return {"offsets": [_static(r(i)) for i in range(_static(cute.size(r)))]}
            return {"shape": _lists(_static(r.shape)), "stride": _lists(_static(r.stride))}
        except Exception as exc:  # the DSL's refusal of this input: judged by the operation's precondition
            return {"raised": f"{type(exc).__name__}: {exc}"[:500]}

    @cute.jit
    def trace() -> None:  # a fresh function each batch: the DSL caches a traced function by its arguments
        for c in calls:
            results.append(answer(c))

    trace()
    return results


def _static(value: Any) -> Any:
    """A traced int tuple as Python ints (a dynamic value, which static inputs should never give, raises)."""
    if isinstance(value, tuple):
        return tuple(_static(v) for v in value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"a result that is not a static integer: {value!r} ({type(value).__name__})")
    return value


# what each operation is in the DSL's public API, over the reproducer's constants (A, B, M, SW, OFFSET, BITS, ...)
_DSL_CALLS = {
    "composition": "cute.composition(L(A), T(B))",
    "composition_swizzled": "cute.composition(cute.make_composed_layout(cute.make_swizzle(*SW), OFFSET, L(A)), T(B))",
    "slice_swizzled": "cute.slice_(cute.make_composed_layout(cute.make_swizzle(*SW), OFFSET, L(A)), COORD)",
    "complement": "cute.complement(L(A), M)",
    "left_inverse": "cute.left_inverse(L(A))",
    "recast": "cute.recast_layout(BITS[0], BITS[1], L(A))",
    "filter_zeros_profile": "cute.filter_zeros(L(A), target_profile=PROFILE)",
    "nullspace": "cute.nullspace(L(A))",
    "append": "cute.append(L(A), L(ELEM), up_to_rank=UP_TO_RANK)",
    "prepend": "cute.prepend(L(A), L(ELEM), up_to_rank=UP_TO_RANK)",
    "make_layout_tv": "cute.make_layout_tv(L(A), L(B))[1]",
}


def dsl_child(case: Case) -> str:
    """The child process of a CuTe DSL reproducer: the case's call inside a ``@cute.jit`` function (the DSL computes
    layout algebra only while it traces one), its answer read back as Python ints, printed as ``ANSWER <json>``."""
    from layoutfuzz.harness.targets.cute_scripts import _constants

    p = case.params
    call = _DSL_CALLS.get(p["op"], f"cute.{p['op']}(L(A), T(B))")
    function = p["op"] in ("composition_swizzled", "slice_swizzled")
    read = ('{"offsets": [static(r(i)) for i in range(static(cute.size(r)))]}' if function else
            '{"shape": static(r.shape), "stride": static(r.stride)}')
    return dsl_probe(_constants(p), call, read)


def dsl_probe(constants: str, call: str, read: str, imports: str = "") -> str:
    """A CuTe DSL child process: ``call`` (an expression over ``constants``, script lines) inside a ``@cute.jit``
    function, its result ``r`` read by the expression ``read`` as Python ints, printed as ``ANSWER <json>``; a raise
    of the call or of the trace is the answer {"raised": ...}."""
    return f'''import json
import cutlass.cute as cute
{imports}
{constants}out = []


def static(v):
    return tuple(static(x) for x in v) if isinstance(v, tuple) else int(v)


def L(t):
    return cute.make_layout(t[0], stride=t[1])


def T(b):
    return b if isinstance(b, int) else L(b)


def answer():  # outside the traced body: the DSL rewrites the control flow of what it traces
    try:
        r = {call}
        return {read}
    except Exception as exc:
        return {{"raised": f"{{type(exc).__name__}}: {{exc}}"[:500]}}


@cute.jit
def probe():
    out.append(answer())


try:
    probe()
except Exception as exc:  # the trace itself failed (after the call answered, or before)
    failed = f"{{type(exc).__name__}}: {{exc}}"[:500]
    out = [{{**out[0], "trace": "then the trace failed: " + failed.splitlines()[0]}}] if out else [{{"raised": failed}}]
print("ANSWER", json.dumps(out[0]))
'''


def reproducer(case: Case) -> str | None:
    """A script that needs only the CuTe DSL (``cute_scripts.algebra_script``), or None for an operation it does
    not check."""
    from layoutfuzz.harness.targets.cute_scripts import algebra_script

    version = '"nvidia-cutlass-dsl", __import__("importlib.metadata").metadata.version("nvidia-cutlass-dsl")'
    return algebra_script(case, "the CuTe DSL (cutlass.cute)", version, dsl_child(case))
