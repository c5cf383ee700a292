"""Target ``cute.layouts``: CuTe's layout algebra as CUTLASS's Python DSL computes it (``nvidia-cutlass-dsl``,
module ``cutlass.cute``), on the CPU, against the algebra's defining properties (the cases and the judgement:
``cute_algebra``, shared with ``pycute.layouts``: the same seed and index give both targets the same case).

The DSL evaluates layout algebra only while it traces a ``@cute.jit`` function (outside one the calls raise), and
static layouts give static answers at trace time: a batch of cases is one traced function that applies each case's
operation and reads the result's shape and stride back as Python ints. A raise of the DSL on a valid input is that
case's ``crash`` (its exception is the root cause); an abort of the process is bisected down to its case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.harness.target import Availability
from layoutfuzz.harness.targets.cute_algebra import CuteAlgebraTarget, _lists, _tuple

PACKAGE = "nvidia-cutlass-dsl"


class CuteDslLayouts(CuteAlgebraTarget):
    name = "cute.layouts"
    layer = "CuTe DSL (cutlass.cute layout algebra)"
    system = "CuTe DSL"
    description = "CUTLASS's Python DSL (cutlass.cute) layout algebra, traced in @cute.jit on the CPU, vs its defining properties"
    requires = (f"{PACKAGE} (pip install 'layoutfuzz[cutedsl]')",)
    max_batch = 1024  # one trace a batch: about 0.3 ms a case

    def availability(self) -> Availability:
        try:
            import cutlass.cute  # noqa: F401
        except ImportError:
            return Availability(False, f"needs CUTLASS's Python DSL: pip install 'layoutfuzz[cutedsl]' ({PACKAGE})")
        except Exception as exc:  # the DSL's own start-up (its native libraries) failed here
            return Availability(False, f"{PACKAGE} does not load here: {str(exc)[:200]}")
        return Availability(True)

    def versions(self) -> Mapping[str, str]:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return {PACKAGE: version(PACKAGE)}
        except PackageNotFoundError:
            return {}

    def evaluate(self, op: str, a: tuple, b: tuple | None, m: int | None) -> tuple[Any, Any]:
        result = evaluate_many([(op, a, b, m)])[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def observed_batch(self, cases: Sequence[Case]) -> Sequence[Any]:
        """All the batch's cases in one trace; an entry is the case's result or the exception the DSL raised."""
        calls = []
        for case in cases:
            p = case.params
            b = (_tuple(p["b"]["shape"]), _tuple(p["b"]["stride"])) if "b" in p else None
            calls.append((p["op"], (_tuple(p["a"]["shape"]), _tuple(p["a"]["stride"])), b, p.get("m")))
        out = []
        for result in evaluate_many(calls):
            if isinstance(result, BaseException):
                out.append(result)
            else:
                out.append({"shape": _lists(result[0]), "stride": _lists(result[1])})
        return out


def evaluate_many(calls: Sequence[tuple[str, tuple, tuple | None, int | None]]) -> list[Any]:
    """(shape, stride) of each (op, a, b, m), each layout (shape, stride), computed by cutlass.cute inside one
    @cute.jit trace; an entry is the exception where the DSL raised on that call."""
    import cutlass.cute as cute

    def layout(data: tuple) -> Any:
        return cute.make_layout(data[0], stride=data[1])

    ops = {
        "composition": lambda a, b, m: cute.composition(layout(a), layout(b)),
        "coalesce": lambda a, b, m: cute.coalesce(layout(a)),
        "complement": lambda a, b, m: cute.complement(layout(a), m),
        "left_inverse": lambda a, b, m: cute.left_inverse(layout(a)),
        "right_inverse": lambda a, b, m: cute.right_inverse(layout(a)),
        "logical_divide": lambda a, b, m: cute.logical_divide(layout(a), layout(b)),
        "logical_product": lambda a, b, m: cute.logical_product(layout(a), layout(b)),
    }
    results: list[Any] = []

    @cute.jit
    def trace() -> None:  # a fresh function each batch: the DSL caches a traced function by its arguments
        for op, a, b, m in calls:
            try:
                r = ops[op](a, b, m)
                results.append((_static(r.shape), _static(r.stride)))
            except Exception as exc:  # the DSL's raise on this input: that case's answer
                results.append(exc)

    trace()
    return results


def _static(value: Any) -> Any:
    """A traced int tuple as Python ints (a dynamic value, which static inputs should never give, raises)."""
    if isinstance(value, tuple):
        return tuple(_static(v) for v in value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"a result that is not a static integer: {value!r} ({type(value).__name__})")
    return value
