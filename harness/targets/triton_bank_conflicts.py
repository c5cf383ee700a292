"""Target ``triton.bank_conflicts``: Gluon's ``bank_conflicts`` against the shared-access oracle.

A case pairs a distributed layout with a shared layout of the same tensor and an element
width. The shared layout is a SwizzledSharedLayout, an NVMMASharedLayout, a random memory
layout (Def 4.14) or the optimal swizzle of 5.4/9.2 for the distributed layout and another one,
the last two given to Triton as SharedLinearLayouts. Expected: the excess accesses per wavefront
of one warp's ld/st.shared, counted exactly (``oracles.algorithms.shared_access``; equal to
Lemma 9.4's c - 1 whenever a vector covers a whole bank).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from math import prod
from typing import Any

import numpy as np

from layoutfuzz.generators import legacy_layouts
from layoutfuzz.generators.case import Case
from layoutfuzz.generators.layouts import memory_layout
from layoutfuzz.generators.legacy_space import NVMMA_ATOM_ELEMENTS_LOG2, OWNER, WARPS, other_kinds, shared_parameters
from layoutfuzz.generators.shrink import halve_out_dim, halved_sizes, narrower_element, replaced
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.generators.validity import check_layout_kind, check_legacy, check_shape, legacy_from_params, legacy_kind
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.triton_compat.builder import builder
from layoutfuzz.harness.triton_compat.gluon_layouts import GluonTarget, shared_linear, to_gluon
from layoutfuzz.harness.triton_compat.layouts import shared_layout
from layoutfuzz.oracles import triton_layouts as tl
from layoutfuzz.oracles.algorithms import optimal_swizzle, shared_access
from layoutfuzz.oracles.linear_layout import LinearLayout

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
    layer = "Triton's layout library (bank-conflict model)"
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
        """The generator's rules: shared kind and rank, element width, shape bounds, legacy layouts in
        their samplers' domains, a Def 4.14 memory layout, a distributed layout spanning a 32-lane warp."""
        p = case.params
        kind = p.get("shared_kind")
        if kind not in SHARED_KINDS:
            raise ValueError(f"shared_kind must be one of {', '.join(SHARED_KINDS)}")
        if p.get("elem_bits") not in ((8, 16, 32) if kind == "nvmma_shared" else (8, 16, 32, 64)):
            raise ValueError("elem_bits must be 8, 16, 32 or 64 (8-32 for nvmma_shared)")
        shape = check_shape(p.get("shape"))
        if not (1 <= len(shape) <= 3 if kind == "swizzled_shared" else len(shape) == 2):
            raise ValueError(f"a {kind} case has rank {'1-3' if kind == 'swizzled_shared' else 2}")
        if min(shape) < (8 if len(shape) > 1 else 32) or max(shape) > 256 or prod(shape) > 1 << 13:
            raise ValueError("shape dims from 8 (32 in 1-D) to 256, at most 8192 elements")
        dist = legacy_from_params(p.get("distributed"), "distributed")
        if legacy_kind(dist) not in (DIST_KINDS if len(shape) == 2 else ("blocked",)):
            raise ValueError(f"the distributed layout is a {legacy_kind(dist)}")
        check_legacy(dist, shape)
        if kind in ("swizzled_shared", "nvmma_shared"):
            shared = legacy_from_params(p.get("shared"), "shared")
            if legacy_kind(shared) != kind:
                raise ValueError(f"the shared layout is not a {kind}")
            check_legacy(shared, shape, p["elem_bits"])
        elif kind == "optimal":
            other = legacy_from_params(p.get("other"), "other")
            if legacy_kind(other) not in DIST_KINDS:
                raise ValueError("the other layout of an optimal swizzle is distributed")
            check_legacy(other, shape)
        _, layout, bases = self._layouts(case)
        if kind == "memory":
            check_layout_kind(LinearLayout.from_bases({"offset": bases}, layout.out_dims), "memory")
        if len(dict(layout.in_dims).get("lane", ())) != 5:
            raise ValueError("the distributed layout must span a 32-lane warp")

    def parameter_space(self) -> Space:
        """The shared side (kind, element width, the swizzled and NVMMA constructor arguments), the distributed side
        (kind, warps) and the tensor (rank, elements), over Gluon's legal ranges within this target's tensors."""
        gluon = "Gluon's bank_conflicts(distributed, shared, shape, bitwidth) and its layout constructors"

        def shared(p: Mapping[str, Any]) -> tl.Layout | None:
            return tl.from_dict(p["shared"]) if "shared" in p else None

        def distributed(p: Mapping[str, Any]) -> tl.Layout:
            return tl.from_dict(p["distributed"])

        def warps(p: Mapping[str, Any]) -> int:
            layout = distributed(p)
            layout = layout.parent if isinstance(layout, tl.DotOperandLayout) else layout
            return prod(layout.warps_per_cta)

        return Space((
            Parameter("shared kind", SHARED_KINDS, f"{gluon}: SwizzledShared, NVMMAShared, SharedLinear (a Def 4.14 "
                      "memory layout, the 9.2 optimal swizzle)", lambda p: p["shared_kind"]),
            Parameter("element bits", (8, 16, 32, 64), f"{gluon}: bitwidth", lambda p: p["elem_bits"]),
            Parameter("rank", (1, 2, 3), "this target's tensors: 1-3 dims (the mma kinds and NVMMA: 2)", lambda p: len(p["shape"])),
            Parameter("tensor elements (log2)", tuple(range(5, 14)), "this target's tensors: dims of 8 (1-D: 32) to 256, "
                      "at most 2^13 elements", lambda p: prod(p["shape"]).bit_length() - 1),
            Parameter("distributed kind", DIST_KINDS, gluon, lambda p: legacy_kind(distributed(p))),
            Parameter("warps", WARPS, f"{gluon}: warps_per_cta; CUDA: at most 32 warps a CTA", warps),
            *shared_parameters(shared, ("swizzled vec", "swizzled per_phase", "swizzled max_phase", "nvmma swizzle bytes")),
        ), _illegal)

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """A halved tensor dim, a narrower element, smaller distributed or shared layout parameters."""
        p = case.params
        if p["shared_kind"] != "memory":
            for shape in halved_sizes(p["shape"]):
                yield replaced(p, shape=shape)
        else:  # a memory layout's offsets are tied to the shape: halve a dim and drop one offset bit
            outs = [[f"dim{i}", d] for i, d in enumerate(p["shape"])]
            for d in range(len(outs)):
                smaller = halve_out_dim({"bases": [["offset", p["offset_bases"]]], "out_dims": outs}, f"dim{d}")
                if smaller is None:
                    continue
                bases = smaller["bases"][0][1]
                for i in range(len(bases)):
                    yield replaced(p, shape=[s for _, s in smaller["out_dims"]], offset_bases=bases[:i] + bases[i + 1:])
        yield from narrower_element(p, ("distributed", "shared", "other"))

    def family(self, case: Case) -> str:
        return f"{case.params.get('shared_kind', '?')}:{case.params.get('elem_bits', '?')}b"

    def _layouts(self, case: Case) -> tuple[LinearLayout, LinearLayout, list[list[int]] | None]:
        """(shared, distributed, offset bases when the shared side is a linear layout)."""
        p = case.params
        shape = list(p["shape"])
        dist = _one_cta(tl.from_dict(p["distributed"]).linear_layout(shape))
        if "shared" in p:
            shared = shared_layout(tl.from_dict(p["shared"]), shape)
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
        b = builder()
        dist = to_gluon(tl.from_dict(p["distributed"]))
        shared = to_gluon(tl.from_dict(p["shared"])) if bases is None else shared_linear(bases)
        try:
            return {"bank_conflicts": int(b.get_shared_bank_conflicts(dist._to_ir(b), shared._to_ir(b), list(p["shape"]), p["elem_bits"]))}
        except Exception as exc:
            return {"exception": f"{type(exc).__name__}: {exc}"}

    def reproducer_script(self, case: Case) -> str:
        """A script that needs only Triton (``layoutfuzz export``)."""
        return reproducer(case, *self._layouts(case))

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

    def picture(self, report: dict[str, Any]) -> Any:
        """Which bank each lane's access hits in the busiest transaction; banks asked for two or more different 4-byte
        words (a conflict) in red. None where the oracle gave no count."""
        expected = report.get("expected")
        if not (isinstance(expected, dict) and "bank_conflicts" in expected):
            return None
        from layoutfuzz.oracles.algorithms import BANKS, busiest_access
        from layoutfuzz.reports.pictures import case_of, pyplot

        plt = pyplot()
        case = case_of(report)
        shared, dist, _ = self._layouts(case)
        first_lane, words = busiest_access(shared, dist, case.params["elem_bits"])
        lanes = words.shape[0]
        grid = np.full((lanes, BANKS), np.nan)
        for lane in range(lanes):
            for word in words[lane]:
                grid[lane, word % BANKS] = word // BANKS
        per_bank = [len({int(w) for w in np.unique(words) if w % BANKS == b}) for b in range(BANKS)]
        fig, ax = plt.subplots(figsize=(9, 0.25 * lanes + 1.8))
        ax.imshow(np.ma.masked_invalid(grid), cmap="Greys", aspect="auto", interpolation="nearest", vmin=-1)
        conflicted = {b for b, n in enumerate(per_bank) if n > 1}
        hits = [(lane, int(w) % BANKS) for lane in range(lanes) for w in words[lane] if int(w) % BANKS in conflicted]
        if hits:
            ax.scatter([b for _, b in hits], [lane for lane, _ in hits], marker="s", color="red", s=30)
        ax.set_xlabel("bank (4-byte word mod 32); red: lanes asking a bank for two or more different words (a conflict)")
        ax.set_ylabel(f"lane (from lane {first_lane})")
        expected, observed = report.get("expected") or {}, report.get("observed") or {}
        ax.set_title(f"{report['case_id']}: the busiest transaction; exact {expected.get('bank_conflicts')} conflict(s), "
                     f"Triton {observed.get('bank_conflicts', observed)}", fontsize=9)
        return fig


DTYPES = {8: "int8", 16: "float16", 32: "float32", 64: "float64"}


def reproducer(case: Case, shared: LinearLayout, dist: LinearLayout, bases: list[list[int]] | None) -> str:
    """A script that needs only Triton: a Gluon kernel asks ``ttgl.bank_conflicts`` for the case's pair (Triton's own
    tests do the same), compiled for sm_90 on the CPU in a child process; the exact count is computed inline from
    where each register and lane bit of warp 0 lands in shared memory (the two layouts' definitions, from
    layoutfuzz's oracle, written in): one warp's accesses, vectorised as Triton's lowering does, each 128-byte
    transaction's busiest bank counted in distinct 4-byte words."""
    from layoutfuzz.harness.targets.script_parts import (
        GLUON_CHILD_HEAD,
        PARENT_IMPORTS,
        RUN_CHILD,
        TRITON_CHILD_ENV,
        gluon_constructor,
    )
    from layoutfuzz.harness.triton_compat.gluon_layouts import num_warps
    from layoutfuzz.oracles.algorithms import LANE, REGISTER, to_offsets

    p = case.params
    cvt = to_offsets(shared, dist)
    dtype, shape = DTYPES[p["elem_bits"]], list(p["shape"])
    dist_source = gluon_constructor(p["distributed"])
    shared_source = gluon_constructor(p["shared"]) if bases is None else f"ttgl.SharedLinearLayout(offset_bases={bases!r})"
    return f'''"""Triton's bank-conflict count of one pair of layouts ({case.case_id}, found by layoutfuzz): a {shape} {dtype}
tensor in {dist_source}
read from or written to a shared buffer of {shared_source}.
ttgl.bank_conflicts documents the excess accesses each wavefront of one warp's ld/st.shared needs; the script counts
them from the accesses. Needs only Triton; runs on a CPU (the kernel is compiled for sm_90, not run). Exit 1 while
Triton's count is not the exact one (or Triton aborts), 0 once it is, 2 where this release lacks a layout."""
{PARENT_IMPORTS}from collections import Counter

BITS = {p["elem_bits"]}
# the shared-memory offset (in elements) of each register bit and each lane bit of warp 0: the distributed layout's
# register and lane bases mapped through the inverse of the shared layout (both layouts' definitions)
REGISTER = {list(cvt.dim_columns(REGISTER))!r}
LANE = {list(cvt.dim_columns(LANE))!r}

CHILD = r"""{GLUON_CHILD_HEAD}

REG, SMEM = unavailable(lambda: (ttgl.distributed_type(ttgl.{dtype}, {shape!r}, {dist_source}),
                                 ttgl.shared_memory_descriptor_type(ttgl.{dtype}, {shape!r}, {shared_source}, {shape!r})))


@gluon.jit
def probe(R: ttgl.constexpr, M: ttgl.constexpr):
    ttgl.static_print("bank conflicts:", ttgl.bank_conflicts(R, M))


text, raised = printed(probe, {{"R": REG, "M": SMEM}}, {num_warps(tl.from_dict(p["distributed"]))})
found = re.search(r"bank conflicts: \\D*(\\d+)", text)
print("ANSWER", json.dumps({{"conflicts": int(found[1])}} if found else {{"raised": raised or text[-300:]}}))
"""
{RUN_CHILD}

def span(vectors):
    """Every XOR combination of the vectors, index bit k choosing vector k."""
    table = [0]
    for x in vectors:
        table += [t ^ x for t in table]
    return table


def vector_bits():
    """log2 of the elements one ld/st.shared moves: the widest power of two, at most 128 bits, whose offsets
    1, 2, .. 2^(k-1) are register bits while no other register or lane bit touches those low offset bits."""
    k = 0
    while (2 << k) * BITS <= 128 and (1 << k) in REGISTER:
        units = {{1 << j for j in range(k + 1)}}
        if any(x & ((2 << k) - 1) for x in [r for r in REGISTER if r not in units] + LANE):
            break
        k += 1
    return k


def exact_conflicts():
    """The busiest bank's distinct 4-byte words, less one, over every instruction and 128-byte transaction."""
    v = vector_bits()
    words = max(1, (1 << v) * BITS // 8 // 4)  # 4-byte words (banks) one lane's vector spans
    lanes = 32 // words  # a vector over n banks splits the warp into n transactions, by its highest lane bits
    starts = span(LANE)  # the offset of lane i's vector
    worst = 0
    for base in span([r for r in REGISTER if r not in {{1 << j for j in range(v)}}]):
        byte = [(s ^ base) * BITS // 8 for s in starts]
        for first in range(0, 32, lanes):
            asked = {{b // 4 + w for b in byte[first:first + lanes] for w in range(words)}}
            worst = max(worst, max(Counter(w % 32 for w in asked).values()))
    return worst - 1


print("triton", __import__("triton").__version__)
expected = f"{{exact_conflicts()}} bank conflict(s) (vectors of {{1 << vector_bits()}} elements)"
got = run_child(CHILD, expected, {TRITON_CHILD_ENV})
print("expected:", expected)
if "conflicts" not in got:
    print("observed: no count:", got["raised"])
    sys.exit(1)
print("observed:", got["conflicts"], "bank conflict(s)")
sys.exit(0 if got["conflicts"] == exact_conflicts() else 1)
'''


def _illegal(a: str, x: Any, b: str, y: Any) -> bool:
    """Pairs of triton.bank_conflicts parameter values that cannot occur together."""
    pair = {a: x, b: y}
    if other_kinds(pair, "shared kind"):
        return True
    kind = pair.get("shared kind", next((OWNER[n][0] for n in pair if n in OWNER), None))
    if "element bits" in pair and kind == "nvmma_shared":  # NVMMA shared layouts: 8-32-bit elements
        return pair["element bits"] == 64
    if "rank" in pair:
        rank = pair["rank"]
        if kind is not None and kind != "swizzled_shared" and rank != 2:
            return True
        if pair.get("distributed kind", "blocked") != "blocked" and rank != 2:  # the mma kinds are 2-D
            return True
        if "tensor elements (log2)" in pair:  # dims of 8 (1-D: 32) to 256, at most 2^13 elements
            low, high = {1: (5, 8), 2: (6, 13), 3: (9, 13)}[rank]
            return not low <= pair["tensor elements (log2)"] <= high
    if "warps" in pair and pair.get("distributed kind") in ("nvmma_v3", "dot_operand"):
        return pair["warps"] < 4 and pair["distributed kind"] == "nvmma_v3"
    if "tensor elements (log2)" in pair:
        elements = pair["tensor elements (log2)"]
        if kind == "nvmma_shared":  # 2-D, dims from 8, an 8-row atom of the swizzle's bytes
            return elements < NVMMA_ATOM_ELEMENTS_LOG2[pair.get("nvmma swizzle bytes", 0)]
        if (kind is not None and kind != "swizzled_shared") or pair.get("distributed kind", "blocked") != "blocked":
            return elements < 6  # 2-D: dims from 8
    return False
