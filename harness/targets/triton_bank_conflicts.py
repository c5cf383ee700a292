"""Target ``triton.bank_conflicts``: Gluon's ``bank_conflicts`` against the shared-access oracle.

A case pairs a distributed layout with a shared layout of the same tensor and an element
width. The shared layout is a SwizzledSharedLayout, an NVMMASharedLayout, a random memory
layout (Def 4.14) or the optimal swizzle of 5.4/9.2 for the distributed layout and another one,
the last two given to Triton as SharedLinearLayouts. Expected: the excess accesses per wavefront
of one warp's ld/st.shared, counted exactly (``oracles.algorithms.shared_access``; equal to
Lemma 9.4's c - 1 whenever a vector covers a whole bank).
"""

from __future__ import annotations

from typing import Any

from generators import legacy_layouts
from generators.case import Case
from generators.layouts import memory_layout
from generators.source import Source
from harness.compare import Comparison
from harness.targets.gluon import GluonTarget, builder, shared_linear, to_gluon
from oracles import triton_layouts as tl
from oracles.algorithms import optimal_swizzle, shared_access
from oracles.linear_layout import LinearLayout

SHARED_KINDS = ("swizzled_shared", "nvmma_shared", "memory", "optimal")
DIST_KINDS = ("blocked", "nvmma_v2", "nvmma_v3", "dot_operand")


def _distributed(source: Source, shape: list[int]) -> tl.Layout:
    """A distributed layout for ``shape`` (mma kinds need rank 2)."""
    kind = source.choice(DIST_KINDS if len(shape) == 2 else ("blocked",))
    if kind == "blocked":
        return legacy_layouts.blocked(source, rank=len(shape))
    if kind == "dot_operand":
        return legacy_layouts.dot_operand(source)
    return legacy_layouts.nvmma(source, int(kind[-1]))


def _one_cta(layout: LinearLayout) -> LinearLayout:
    """A single-CTA distributed layout without its (empty) block dim."""
    return layout.sublayout([n for n in layout.in_dim_names if n != "block"], layout.out_dim_names)


class TritonBankConflicts(GluonTarget):
    name = "triton.bank_conflicts"
    description = "Gluon bank_conflicts (CPU) vs an exact count of one warp's shared accesses (Lemma 9.4)"

    def generate(self, source: Source) -> dict[str, Any]:
        shared_kind = source.choice(SHARED_KINDS)
        rank = 2 if shared_kind == "nvmma_shared" else source.integer(1, 3) if shared_kind == "swizzled_shared" else 2
        elem_bits = source.choice((8, 16, 32) if shared_kind == "nvmma_shared" else (8, 16, 32, 64))
        shape = legacy_layouts.shape(source, rank, min_log2=3 if rank > 1 else 5, max_total_log2=13, max_dim_log2=8)
        dist = _distributed(source, shape)
        params: dict[str, Any] = {"shared_kind": shared_kind, "elem_bits": elem_bits, "shape": shape, "distributed": tl.to_dict(dist)}
        if shared_kind in ("swizzled_shared", "nvmma_shared"):
            layout, shape, _ = legacy_layouts.shared(source, shared_kind, elem_bits, tensor_shape=shape)
            params["shared"] = tl.to_dict(layout)
        elif shared_kind == "memory":
            outs = list(dist.linear_layout(shape).out_dims)
            params["offset_bases"] = [list(b) for b in dict(memory_layout(source, "offset", outs=outs).in_dims)["offset"]]
        else:
            other = _distributed(source, shape)
            params["other"] = tl.to_dict(other)
        return params

    def validate(self, case: Case) -> None:
        if case.params.get("elem_bits") not in (8, 16, 32, 64):
            raise ValueError("elem_bits must be 8, 16, 32 or 64")
        _, dist, _ = self._layouts(case)
        if len(dict(dist.in_dims).get("lane", ())) != 5:
            raise ValueError("the distributed layout must span a 32-lane warp")

    def family(self, case: Case) -> str:
        return f"{case.params.get('shared_kind', '?')}:{case.params.get('elem_bits', '?')}b"

    def _layouts(self, case: Case) -> tuple[LinearLayout, LinearLayout, list[list[int]] | None]:
        """(shared, distributed, offset bases when the shared side is a linear layout)."""
        p = case.params
        shape = list(p["shape"])
        dist = _one_cta(tl.from_dict(p["distributed"]).linear_layout(shape))
        if "shared" in p:
            shared = tl.from_dict(p["shared"]).linear_layout(shape)
            return shared.sublayout(["offset"], shared.out_dim_names), dist, None
        if "offset_bases" in p:
            bases = p["offset_bases"]
        else:
            other = _one_cta(tl.from_dict(p["other"]).linear_layout(shape))
            bases = [list(b) for b in dict(optimal_swizzle(dist, other, p["elem_bits"]).layout.in_dims)["offset"]]
        return LinearLayout.from_bases({"offset": bases}, dist.out_dims), dist, bases

    def expected(self, case: Case) -> Any:
        shared, dist, _ = self._layouts(case)
        access = shared_access(shared, dist, case.params["elem_bits"])
        return {"bank_conflicts": access.bank_conflicts, "lemma_c": access.lemma_c, "vector": 1 << access.vector_log2}

    def observed(self, case: Case) -> Any:
        p = case.params
        _, _, bases = self._layouts(case)
        _, b = builder()
        dist = to_gluon(tl.from_dict(p["distributed"]))
        shared = to_gluon(tl.from_dict(p["shared"])) if bases is None else shared_linear(bases)
        try:
            return {"bank_conflicts": int(b.get_shared_bank_conflicts(dist._to_ir(b), shared._to_ir(b), list(p["shape"]), p["elem_bits"]))}
        except Exception as exc:
            return {"exception": f"{type(exc).__name__}: {exc}"}

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        if "exception" in observed:
            return Comparison(False, 1, (observed["exception"],), "exception", "Triton raised on a valid pair")
        want, got = expected["bank_conflicts"], observed["bank_conflicts"]
        if want == got:
            return Comparison(True)
        side = "under" if got < want else "over"
        lemma = "equals" if got == expected["lemma_c"] - 1 else "differs from"
        note = f"Triton {got}, exact {want} ({side}-count; Triton {lemma} Lemma 9.4's c - 1 = {expected['lemma_c'] - 1}; vector {expected['vector']})"
        return Comparison(False, 1, (note,), f"{side}-count/{'lemma' if lemma == 'equals' else 'other'}", note)
