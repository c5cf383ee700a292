"""Target ``triton.convert_layout_shuffle``: within-warp convert_layouts in Triton's lowering and the forced warp-shuffle
one (3.9), each against the oracle and against each other (``triton.convert_layout``'s cases and probe)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.gpu.targets.triton_convert_layout import TritonConvertLayout, within_warps
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.target import Availability
from layoutfuzz.harness.triton_compat.lowering import WARP_SHUFFLE


class TritonConvertLayoutShuffle(TritonConvertLayout):
    """Within-warp conversions lowered twice: Triton's own choice and the forced warp-shuffle lowering
    (3.9.0 on), each against the oracle and the two against each other."""

    name = "triton.convert_layout_shuffle"
    layer = "Triton's lowering (convert_layout, forced warp shuffle)"
    description = "within-warp convert_layouts in Triton's lowering and the forced warp-shuffle one (3.9): each vs the oracle, and vs each other"
    variants = ("", WARP_SHUFFLE)

    def generate(self, source: Source) -> dict[str, Any]:
        """A conversion that moves data only inside warps (5.4's shuffle plan), the rest as the parent's."""
        for _ in range(64):
            params = super().generate(source)
            if within_warps(params):
                return params
        return params  # rare: validate refuses it, and the runner records why

    def reproducer_script(self, case: Case) -> str | None:
        """None: its finding may be the forced lowering's (a variant of layoutfuzz's own, no Triton API reaches it);
        Triton's own lowering of the same case is ``triton.convert_layout``'s script."""
        return None

    def parameter_space(self) -> Space:
        """The convert_layout space, its plan the shuffle one by definition (triton.convert_layout draws the others)."""
        space = super().parameter_space()
        other_plan = "triton.convert_layout draws it: this target is the within-warp (shuffle) plan by definition"
        no_copies = ("5.4's shuffle plan needs the conversion to map each warp to itself; warps that hold copies map "
                     "to no warp (cvt(warp) = 0), so their conversions go through shared memory")
        excluded = {"conversion plan": {v: other_plan for v in ("none", "register", "shared")},
                    "A broadcasts warps": {"yes": no_copies}}
        return Space(tuple(Parameter(p.name, p.values, p.source, p.draw, {**p.excluded, **excluded[p.name]})
                           if p.name in excluded else p for p in space.parameters), space.illegal)

    def validate(self, case: Case) -> None:
        super().validate(case)
        if not within_warps(case.params):
            raise ValueError("the conversion must stay inside each warp (5.4's shuffle plan) for a warp-shuffle lowering")

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        for params in super().shrink(case):
            if within_warps(params):
                yield params

    def availability(self) -> Availability:
        from layoutfuzz.harness.triton_compat.lowering import supports

        found = super().availability()
        if not found.available:
            return found
        try:
            if not supports(WARP_SHUFFLE):
                return Availability(False, "this Triton has no forced warp-shuffle lowering of convert_layout (3.9.0 on)")
        except ImportError as exc:
            return Availability(False, f"needs Triton: {exc}")
        return found

    def expected(self, case: Case) -> Any:
        one = super().expected(case)
        return {variant or "triton": one for variant in self.variants}

    def run(self, case: Case, variant: str = "") -> Any:
        return {v or "triton": super(TritonConvertLayoutShuffle, self).run(case, v) for v in self.variants}

    def compare_results(self, case: Case, expected: Any, observed: Any) -> Comparison:
        """Each lowering against the oracle (its broken promises named after it), then the two against
        each other (data and holders)."""
        broken, count, lines = [], 0, []
        for side in expected:
            verdict = super().compare_results(case, expected[side], observed[side])
            if not verdict.ok:
                broken.append(f"{side}: {verdict.signature}")
                count += verdict.mismatch_count
                lines += [f"{side}: {m}" for m in verdict.mismatches[:4]]
        if broken:
            return Comparison(False, count, tuple(lines), "; ".join(broken), "a lowering disagrees with the oracle")
        first, second = observed.values()
        if first != second:
            return Comparison(False, 1, ("the two lowerings store different holders or data",), "the lowerings differ")
        return Comparison(True)

    def picture(self, report: dict[str, Any]) -> Any:
        """None: its reports get the shared pictures (the holders picture is ``triton.convert_layout``'s)."""
        return None
