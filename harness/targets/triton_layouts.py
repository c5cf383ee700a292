"""Target ``triton.layouts``: Triton's conversion of Gluon legacy layouts to linear layouts.

The observed layout is ``GluonOpBuilder.to_linear_layout`` for a random BlockedLayout,
SliceLayout, NVMMADistributedLayout (v2, v3), DotOperandLayout, NVMMASharedLayout or
SwizzledSharedLayout; the expected one is ``oracles.triton_layouts``. Triton 3.6.0 aborts the
process on shared layouts here (it wraps the result as a distributed layout): those cases end
as ``crash`` rows and the campaign goes on.
"""

from __future__ import annotations

from collections.abc import Iterator
from math import prod
from typing import Any

import numpy as np

from layoutfuzz.generators import legacy_layouts
from layoutfuzz.generators.case import Case
from layoutfuzz.generators.legacy_space import legacy_illegal, legacy_parameters
from layoutfuzz.generators.shrink import legacy_case_shrinks
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Space
from layoutfuzz.generators.validity import check_legacy, check_nvmma_tensor, legacy_from_params, legacy_kind
from layoutfuzz.harness.compare import Comparison, compare_values
from layoutfuzz.harness.triton_compat.builder import builder
from layoutfuzz.harness.triton_compat.gluon_layouts import GluonTarget, to_gluon
from layoutfuzz.harness.triton_compat.layouts import bases, in_triton_convention, shared_layout
from layoutfuzz.oracles import triton_layouts as tl
from layoutfuzz.reports.signatures import normalise


def layout_dict(layout) -> dict[str, list[list[int]]]:
    """Bases per input dim, as plain lists (the form both sides are compared in)."""
    return {name: [list(b) for b in bases] for name, bases in layout.in_dims}


class TritonLayouts(GluonTarget):
    name = "triton.layouts"
    layer = "Triton's layout library (Gluon to_linear_layout)"
    description = "Triton's legacy-layout -> linear-layout conversion (Gluon, CPU) vs Props 4.6-4.8, 9.1, 9.2, Def 4.11"

    def generate(self, source: Source) -> dict[str, Any]:
        kind = source.choice(legacy_layouts.KINDS)
        if kind in legacy_layouts.SHARED_KINDS:
            layout, shape, _ = legacy_layouts.shared(source, kind)
        else:
            layout, shape = legacy_layouts.distributed(source, kind)
        return {"kind": kind, "layout": tl.to_dict(layout), "shape": shape}

    def validate(self, case: Case) -> None:
        p = case.params
        if not isinstance(p.get("shape"), list) or not isinstance(p.get("layout"), dict):
            raise ValueError("params need 'layout' (a legacy layout dict) and 'shape' (a list)")
        legacy = legacy_from_params(p["layout"])
        if p.get("kind") != legacy_kind(legacy):
            raise ValueError(f"kind {p.get('kind')!r} is not the layout's ({legacy_kind(legacy)})")
        check_legacy(legacy, p["shape"])
        check_nvmma_tensor(legacy, p["shape"])
        layout = legacy.linear_layout(p["shape"])
        lanes = dict(layout.in_dims).get("lane")
        if lanes is not None and len(lanes) != 5:
            raise ValueError("a distributed layout must span a 32-lane warp")

    def parameter_space(self) -> Space:
        """Every constructor argument of each legacy layout over its legal range (generators.legacy_space)."""
        parameters = legacy_parameters(lambda p: tl.from_dict(p["layout"]), lambda p: p["shape"])
        return Space(parameters, legacy_illegal)

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """A halved tensor dim, then smaller layout parameters (fewer warps, elements, a narrower swizzle)."""
        return legacy_case_shrinks(case.params)

    def family(self, case: Case) -> str:
        return str(case.params.get("kind", "?"))

    def expected(self, case: Case) -> Any:
        layout, shape = tl.from_dict(case.params["layout"]), case.params["shape"]
        return in_triton_convention(case.params["kind"], layout_dict(shared_layout(layout, shape)))

    def observed(self, case: Case) -> Any:
        b = builder()
        gluon_layout = to_gluon(tl.from_dict(case.params["layout"]))
        try:
            result = b.to_linear_layout(gluon_layout._to_ir(b), list(case.params["shape"]))
        except Exception as exc:  # Triton refused a layout the oracle accepts
            return {"exception": f"{type(exc).__name__}: {exc}"}
        return bases(result)

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        if "exception" in observed:
            return Comparison(False, 1, (observed["exception"],), f"exception: {normalise(observed['exception'], 120)}",
                              "Triton raised on a valid layout")
        verdict = compare_values(expected, observed)
        if verdict.ok:
            return verdict
        return Comparison(False, verdict.mismatch_count, verdict.mismatches, layout_difference(expected, observed), verdict.note)

    def reproducer_script(self, case: Case) -> str | None:
        """A script that needs only Triton (``layoutfuzz export``)."""
        return reproducer(case)

    def picture(self, report: dict[str, Any]) -> Any:
        """Which thread holds each element: the oracle's layout above Triton's, disagreements as red x; None where either
        side is not a distributed layout's bases."""
        if not all(isinstance(v, dict) and "lane" in v and "register" in v for v in (report.get("expected"), report.get("observed"))):
            return None
        from layoutfuzz.reports.pictures import case_of, pyplot

        plt = pyplot()
        shape = list(case_of(report).params["shape"])
        want = thread_grid(report["expected"], shape)
        got = thread_grid(report["observed"], shape)
        fig, axes = plt.subplots(2, 1, figsize=(8, 7))
        wrong = np.argwhere(want != got)
        for ax, values, name in ((axes[0], want, "oracle"), (axes[1], got, "Triton")):
            ax.imshow(values, cmap="viridis", aspect="auto", interpolation="nearest")
            if wrong.size:
                ax.scatter(wrong[:, 1], wrong[:, 0], marker="x", color="red", s=12)
            ax.set_title(f"thread (lane + 32 warp) holding each element ({name})", fontsize=9)
            ax.set_xlabel(f"dim{len(shape) - 1}")
            ax.set_ylabel("other dims, row-major")
        fig.suptitle(f"{report['case_id']}: {len(wrong)} element(s) held by another thread", fontsize=10)
        return fig


def layout_difference(expected: dict[str, list], observed: dict[str, list]) -> str:
    """A layout mismatch in the layout's own terms, without values: which input dims differ, and whether
    in the number of bases (the size of the dim) or only in the bases themselves."""
    parts = []
    for dim in sorted(set(expected) | set(observed)):
        want, got = expected.get(dim, []), observed.get(dim, [])
        if want != got and dim == "offset" and any(not any(b) for b in got):  # Def 4.14: an invertible map
            parts.append("offset bases: not a memory layout (a zero offset basis)")
        elif want != got:
            parts.append(f"{dim} bases: {'a different count' if len(want) != len(got) else 'different'}")
    return "; ".join(parts) or "different in-dim names"


def thread_grid(bases: dict[str, list[list[int]]], shape: list[int]) -> np.ndarray:
    """For each element of ``shape`` (rows = all but the last dim), the first thread (lane + 32 warp)
    that holds it in a distributed layout's bases; -1 where none does."""
    from layoutfuzz.oracles.linear_layout import LinearLayout

    names = [f"dim{i}" for i in range(len(shape))]
    layout = LinearLayout.from_bases({k: v for k, v in bases.items() if k in ("register", "lane", "warp")},
                                     list(zip(names, shape)))
    grid = np.full(prod(shape), -1)
    for reg in range(layout.in_dim_size("register")):
        for lane in range(layout.in_dim_size("lane")):
            for warp in range(layout.in_dim_size("warp")):
                out = layout.apply({"register": reg, "lane": lane, "warp": warp})
                flat = 0
                for name, size in zip(names, shape):
                    flat = flat * size + out[name]
                if grid[flat] < 0:
                    grid[flat] = lane + 32 * warp
    return grid.reshape(prod(shape[:-1]), shape[-1])


_SHARED_SOURCE = {
    "nvmma_shared": "ttgl.NVMMASharedLayout(swizzle_byte_width={swizzle_byte_width}, element_bitwidth={element_bitwidth}, "
                    "rank={rank}, transposed={transposed})",
    "swizzled_shared": "ttgl.SwizzledSharedLayout(vec={vec}, per_phase={per_phase}, max_phase={max_phase}, order={order})",
}


def reproducer(case: Case) -> str | None:
    """A script that needs only Triton: Gluon's ``to_linear_layout`` of the case's shared layout (the builder Gluon's
    own front end uses, in a module for sm_90, in a child process: Triton 3.6.0 aborts there), against the offset
    bases the layout's definition gives (written into the script, from layoutfuzz's oracle) and the property every
    memory layout has (invertible: no zero basis, 2^n distinct offsets). None for distributed layouts."""
    p = case.params
    if p["kind"] not in _SHARED_SOURCE:
        return None
    layout = p["layout"]
    source = _SHARED_SOURCE[p["kind"]].format(**layout)
    want = TritonLayouts().expected(case)["offset"]
    return f'''"""Gluon's to_linear_layout of a {p["kind"]} layout ({case.case_id}, found by layoutfuzz): a shared layout is a memory
layout, so its offset bases must be invertible (no zero basis, 2^n distinct offsets) and equal the layout's definition.
Needs only Triton; runs on a CPU. Exit 1 while the answer is wrong (or the call raises or aborts), 0 once right, 2
where this release lacks the layout class."""
import json
import subprocess
import sys

SHAPE = {list(p["shape"])!r}
# the offset bases of {source} over SHAPE by the layout's definition (one coordinate per dim, one basis per bit)
EXPECTED = {want!r}

CHILD = """
import json
from triton._C.libtriton import gluon_ir, ir
from triton.experimental.gluon import language as ttgl

try:
    LAYOUT = {source}
except (TypeError, AttributeError) as exc:
    print("ANSWER", json.dumps({{"unavailable": str(exc)}}))
    raise SystemExit(0)
ctx = ir.context()
ir.load_dialects(ctx)
b = gluon_ir.GluonOpBuilder(ctx)
module = b.create_module()  # as Gluon's front end: a module for sm_90, 4 warps, 1 CTA
module.set_attr("ttg.target", b.get_string_attr("cuda:90"))
for name, value in (("ttg.num-warps", 4), ("ttg.num-ctas", 1), ("ttg.threads-per-warp", 32)):
    module.set_attr(name, b.get_int32_attr(value))
fn = b.get_or_insert_function(module, "probe", b.get_function_ty([], []), "public", False)
module.push_back(fn)
b.set_insertion_point_to_start(fn.add_entry_block())
try:
    result = b.to_linear_layout(LAYOUT._to_ir(b), {list(p["shape"])!r})
    out = {{"offset": [list(x) for x in result.offset_bases]}} if hasattr(result, "offset_bases") else {{"other": repr(result)[:300]}}
except Exception as exc:
    out = {{"raised": f"{{type(exc).__name__}}: {{exc}}"[:300]}}
print("ANSWER", json.dumps(out))
"""


def span(bases):
    """Every offset the bases reach: the XOR of the bases of each input's set bits."""
    points = [tuple(0 for _ in SHAPE)]
    for basis in bases:
        points += [tuple(x ^ y for x, y in zip(point, basis)) for point in points]
    return points


child = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True)
answer = next((line[7:] for line in child.stdout.splitlines() if line.startswith("ANSWER ")), None)
print("triton", __import__("triton").__version__)
print("expected: offset bases", EXPECTED, "(invertible:", len(set(span(EXPECTED))) == len(span(EXPECTED)), ")")
if answer is None:
    tail = child.stderr.strip().splitlines() or [""]
    print(f"observed: the process died (rc {{child.returncode}}):", next((t for t in tail if "ssert" in t or "ERROR" in t), tail[-1])[:300])
    sys.exit(1 if child.returncode < 0 or child.returncode > 128 else 2)
got = json.loads(answer)
if "unavailable" in got:
    print("observed: this release lacks the layout:", got["unavailable"])
    sys.exit(2)
if "offset" not in got:
    print("observed:", got)
    sys.exit(1)
points = span(got["offset"])
print("observed: offset bases", got["offset"], "(invertible:", len(set(points)) == len(points), ")")
sys.exit(0 if got["offset"] == EXPECTED else 1)
'''
