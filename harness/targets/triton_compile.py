"""Target ``triton.compile``: compile random Gluon conversion and shared-memory kernels for sm_90.

Runs on a CPU (Triton ships ptxas). A case is a ``convert_layout`` between two distributed
layouts, or a round trip register -> shared -> register through a shared layout, for an M x N
tile of 8-, 16- or 32-bit elements. A compiler error or crash is a divergence. Each case
records the PTX counts of ld/st.shared, shfl, ldmatrix and stmatrix (the paper's Table 4
metric); the family is the conversion the oracle plans (5.4) or the shared layout's kind.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from math import prod
from typing import Any

from layoutfuzz.generators import legacy_layouts
from layoutfuzz.generators.case import Case
from layoutfuzz.generators.legacy_space import WARPS
from layoutfuzz.generators.shrink import halved_sizes, narrower_element, replaced
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.generators.validity import check_legacy, check_shape, legacy_from_params, legacy_kind, power_of_two
from layoutfuzz.harness.capture import stderr_text
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.harness.triton_compat.gluon_layouts import GluonTarget, num_warps, to_gluon
from layoutfuzz.oracles import triton_layouts as tl
from layoutfuzz.oracles.algorithms import conversion_plan
from layoutfuzz.reports.signatures import compile_error

DTYPES = {8: "i8", 16: "fp16", 32: "fp32"}
PTX_COUNTS = {
    "st.shared": r"\bst\.shared(?:\.\w+)*",
    "ld.shared": r"\bld\.shared(?:\.\w+)*",
    "shfl": r"\bshfl\.sync",
    "ldmatrix": r"\bldmatrix\.",
    "stmatrix": r"\bstmatrix\.",
}
SM90 = ("cuda", 90, 32)


def ptx_counts(ptx: str) -> dict[str, int]:
    """Instruction counts in a PTX listing (the metric of the paper's Table 4)."""
    return {name: len(re.findall(pattern, ptx)) for name, pattern in PTX_COUNTS.items()}


class TritonCompile(GluonTarget):
    name = "triton.compile"
    layer = "Triton's lowering (Gluon to PTX, ptxas)"
    description = "Gluon convert_layout / shared round-trip kernels compiled for sm_90 on the CPU"

    def generate(self, source: Source) -> dict[str, Any]:
        kernel = source.choice(("convert", "shared"))
        warps = 1 << source.integer(0, 5)  # 1-32 warps: a CTA holds at most 1024 threads
        a_kind, a = legacy_layouts.distributed_2d(source, warps)
        b_kind, b = legacy_layouts.distributed_2d(source, warps)
        shape = legacy_layouts.shape(source, 2, min_log2=1, max_total_log2=13, max_dim_log2=8)
        elem_bits = source.choice(tuple(DTYPES))
        params: dict[str, Any] = {
            "kernel": kernel, "num_warps": warps, "shape": shape, "elem_bits": elem_bits,
            "a": tl.to_dict(a), "b": tl.to_dict(b), "kinds": [a_kind, b_kind],
        }
        if kernel == "shared":
            shared, shape, _ = legacy_layouts.shared(source, None, elem_bits, rank=2, tensor_shape=shape)
            params["shared"] = tl.to_dict(shared)
        return params

    def validate(self, case: Case) -> None:
        """The generator's rules: 1-32 warps, a 2-D shape from 2 to 256 per dim, legacy layouts over
        exactly the kernel's warps, a shared layout whose atom fits the tile."""
        p = case.params
        if p.get("kernel") not in ("convert", "shared"):
            raise ValueError("kernel must be 'convert' or 'shared'")
        if p.get("elem_bits") not in DTYPES:
            raise ValueError(f"elem_bits must be one of {sorted(DTYPES)}")
        warps = power_of_two(p.get("num_warps"), "num_warps", 1, 32)
        shape = check_shape(p.get("shape"), 2)
        if min(shape) < 2 or max(shape) > 256 or prod(shape) > 1 << 13:
            raise ValueError("shape dims from 2 to 256, at most 8192 elements")
        for key in ("a", "b"):
            layout = legacy_from_params(p.get(key), key)
            check_legacy(layout, shape)
            if legacy_kind(layout) not in ("blocked", "nvmma_v2", "nvmma_v3", "dot_operand"):
                raise ValueError(f"layout {key} is not a 2-D distributed layout")
            if num_warps(layout) != warps:
                raise ValueError(f"layout {key} spans {num_warps(layout)} warps, the kernel has {warps}")
        if p.get("kinds") != [legacy_kind(legacy_from_params(p[key], key)) for key in ("a", "b")]:
            raise ValueError("kinds must name the kinds of layouts a and b")
        if p["kernel"] == "shared":
            check_legacy(legacy_from_params(p.get("shared"), "shared"), shape, p["elem_bits"])

    def parameter_space(self) -> Space:
        """The kernel, its warps, element width and tile, the two distributed layouts' kinds, the conversion plan the
        oracle finds (5.4) and the shared layout's kind, over the legal ranges of Gluon and Triton's sm_90 compiler."""
        gluon = "Gluon kernels (num_warps, convert_layout, allocate_shared_memory) compiled for sm_90"
        kinds = ("blocked", "nvmma_v2", "nvmma_v3", "dot_operand")

        def plan(p: Mapping[str, Any]) -> str | None:
            return self.family(Case(self.name, 0, 0, p)).split(":")[1] if p["kernel"] == "convert" else None

        def illegal(a: str, x: Any, b: str, y: Any) -> bool:
            pair = {a: x, b: y}
            if "warps" in pair and ("A kind" in pair or "B kind" in pair):  # wgmma layouts: whole warpgroups
                return pair.get("A kind", pair.get("B kind")) == "nvmma_v3" and pair["warps"] < 4
            if "kernel" in pair and ("plan" in pair or "shared kind" in pair):
                return pair["kernel"] != ("convert" if "plan" in pair else "shared")
            if "plan" in pair and "shared kind" in pair:
                return True
            return False

        return Space((
            Parameter("kernel", ("convert", "shared"), f"{gluon}: convert_layout A -> B; A -> shared -> B", lambda p: p["kernel"]),
            Parameter("warps", WARPS, f"{gluon}; CUDA: at most 32 warps a CTA", lambda p: p["num_warps"]),
            Parameter("element bits", tuple(sorted(DTYPES)), f"{gluon}: i8, fp16, fp32 tiles", lambda p: p["elem_bits"]),
            Parameter("tile elements (log2)", tuple(range(2, 14)), "this target's tiles: 2-D, dims 2-256, at most 2^13",
                      lambda p: prod(p["shape"]).bit_length() - 1),
            Parameter("A kind", kinds, "Gluon's distributed layouts of rank 2", lambda p: p["kinds"][0]),
            Parameter("B kind", kinds, "Gluon's distributed layouts of rank 2", lambda p: p["kinds"][1]),
            Parameter("plan", ("none", "register", "shuffle", "shared"), "the paper's 5.4: what a conversion needs", plan),
            Parameter("shared kind", ("swizzled_shared", "nvmma_shared"), f"{gluon}: SwizzledShared, NVMMAShared",
                      lambda p: p["shared"]["kind"] if p["kernel"] == "shared" else None),
        ), illegal)

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """A halved tile dim, a narrower element, smaller layout parameters."""
        p = case.params
        for shape in halved_sizes(p["shape"]):
            yield replaced(p, shape=shape)
        yield from narrower_element(p, ("a", "b", "shared"))

    def family(self, case: Case) -> str:
        p = case.params
        if p.get("kernel") == "shared":
            return f"shared:{p['shared']['kind']}"
        try:
            a = tl.from_dict(p["a"]).linear_layout(p["shape"])
            b = tl.from_dict(p["b"]).linear_layout(p["shape"])
            return f"convert:{conversion_plan(a, b).kind}"
        except Exception:
            return "convert:?"

    def expected(self, case: Case) -> Any:
        return {"compiles": True}

    def observed(self, case: Case) -> Any:
        import triton
        from triton.backends.compiler import GPUTarget
        from triton.experimental.gluon._runtime import GluonASTSource

        from layoutfuzz.harness.triton_compat import gluon_kernels

        p = case.params
        dtype = "*" + DTYPES[p["elem_bits"]]
        m, n = p["shape"]
        constexprs = {"M": m, "N": n, "A": to_gluon(tl.from_dict(p["a"])), "B": to_gluon(tl.from_dict(p["b"]))}
        if p["kernel"] == "shared":
            fn = gluon_kernels.shared_roundtrip_kernel
            constexprs["S"] = to_gluon(tl.from_dict(p["shared"]))
        else:
            fn = gluon_kernels.convert_layout_kernel
        signature = {"src": dtype, "dst": dtype, **{k: "constexpr" for k in constexprs}}
        diagnostics: list[str] = []
        try:
            with stderr_text() as diagnostics:
                kernel = triton.compile(GluonASTSource(fn, signature, constexprs), target=GPUTarget(*SM90), options={"num_warps": p["num_warps"]})
        except Exception as exc:
            return {"compiles": False, "error": compile_error(exc, "".join(diagnostics))}
        return {"compiles": True, "ptx": ptx_counts(kernel.asm["ptx"])}

    def metrics(self, case: Case, observed: Any) -> Mapping[str, float]:
        return observed.get("ptx", {})

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        if observed.get("compiles"):
            return Comparison(True)
        error = observed.get("error", "")
        return Comparison(False, 1, (error,), "compile-error: " + error, "the compiler rejected a valid kernel")
