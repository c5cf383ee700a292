"""The ``triton.shared_memory`` target: Gluon stores to and loads from shared memory in Triton's shared layouts on
the GPU."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.layouts import distributed_layout
from layoutfuzz.generators.legacy_space import NVMMA_ATOM_ELEMENTS_LOG2, OWNER, WARPS, other_kinds, shared_parameters
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.gpu.device_arrays import device_input, device_output
from layoutfuzz.gpu.targets.gluon_kernel import (
    INT_TYPES,
    POINTERS,
    PREBUILT_NEEDS,
    PREBUILT_PRELOAD,
    GluonKernelTarget,
    KernelSpec,
    cubin_launcher,
    gluon_layout,
)
from layoutfuzz.oracles.linear_layout import LinearLayout

VIEWS = ("none", "none", "none", "permute")  # the buffer read back as stored, or through its permuted view (a quarter)


def view_outs(shape: list[int], view: str) -> list[tuple[str, int]]:
    """The out dims of the layout the buffer is read back in: the tile's, or the permuted view's (S1 x S0)."""
    dims = list(reversed(shape)) if view == "permute" else list(shape)
    return [(f"dim{i}", s) for i, s in enumerate(dims)]


class TritonSharedMemory(GluonKernelTarget):
    name = "triton.shared_memory"
    layer = "Triton's lowering (shared-memory stores and loads)"
    description = "Gluon shared-memory round trips on the GPU: data, and the raw placement vs the memory-layout oracle"
    requires = ("cuda device sm_90", "triton")
    needs = PREBUILT_NEEDS
    preload = PREBUILT_PRELOAD
    prebuilt = True

    def parameter_space(self) -> Space:
        """Every parameter this target draws with its legal range."""
        return shared_memory_space()

    def generate(self, source: Source) -> dict[str, Any]:
        from layoutfuzz.generators import legacy_layouts
        from layoutfuzz.generators.layouts import memory_layout
        from layoutfuzz.oracles import triton_layouts as tl

        kind = source.choice(("swizzled_shared", "nvmma_shared", "linear"))
        elem_bits = source.choice((8, 16, 32) if kind == "nvmma_shared" else (8, 16, 32, 64))
        # element ids must fit the element type exactly: at most 2^8 elements of 8 bits
        shape = legacy_layouts.shape(source, 2, min_log2=3 if kind == "nvmma_shared" else 0, max_total_log2=min(12, elem_bits),
                                      max_dim_log2=8)
        outs = [(f"dim{i}", s) for i, s in enumerate(shape)]
        warps = source.integer(0, 5)  # 1-32 warps
        view = source.choice(VIEWS)
        a = distributed_layout(source, outs=outs, fixed_bits={"lane": 5, "warp": warps}, max_broadcast_bits=2)
        b = distributed_layout(source, outs=view_outs(shape, view), fixed_bits={"lane": 5, "warp": warps}, max_broadcast_bits=2)
        params = {"kind": kind, "shape": shape, "num_warps": 1 << warps, "elem_bits": elem_bits, "a": a.to_dict(), "b": b.to_dict()}
        if view != "none":
            params["view"] = view
        if kind == "linear":
            params["offset_bases"] = [list(x) for x in dict(memory_layout(source, "offset", outs=outs).in_dims)["offset"]]
        else:
            layout, _, _ = legacy_layouts.shared(source, kind, elem_bits, rank=2, tensor_shape=shape)
            params["shared"] = tl.to_dict(layout)
        return params

    def family(self, case: Case) -> str:
        view = case.params.get("view")
        return f"{case.params.get('kind', '?')}:{case.params.get('elem_bits', '?')}b" + (f":{view}" if view else "")

    def shared_layout(self, p: Mapping[str, Any]) -> LinearLayout:
        """The oracle's memory layout: offset -> element."""
        from layoutfuzz.harness.triton_compat.layouts import shared_layout
        from layoutfuzz.oracles import triton_layouts as tl

        outs = [(f"dim{i}", s) for i, s in enumerate(p["shape"])]
        if "offset_bases" in p:
            return LinearLayout.from_bases({"offset": p["offset_bases"]}, outs)
        layout = shared_layout(tl.from_dict(p["shared"]), p["shape"])
        return layout.sublayout(["offset"], [n for n, _ in outs])

    def validate(self, case: Case) -> None:
        """The generator's domain: a 2-D power-of-two tile whose element ids fit its integer type (at most 2^12
        elements, the cost cap the space states), 1-32 warps the two distributed layouts agree on, and a shared layout
        Triton's constructors accept that is a memory layout (Def 4.14)."""
        from layoutfuzz.generators.validity import check_layout_kind, check_legacy, check_shape, power_of_two
        from layoutfuzz.oracles import triton_layouts as tl

        p = case.params
        kind, bits = p.get("kind"), p.get("elem_bits")
        if kind not in ("swizzled_shared", "nvmma_shared", "linear"):
            raise ValueError("kind must be swizzled_shared, nvmma_shared or linear")
        if bits not in ((8, 16, 32) if kind == "nvmma_shared" else (8, 16, 32, 64)):
            raise ValueError(f"elem_bits {bits!r}: 8, 16, 32 or 64 (8-32 for NVMMA shared)")
        shape = check_shape(p.get("shape"), 2)
        if shape[0] * shape[1] > 1 << min(12, bits):
            raise ValueError("element ids must fit the element type, in at most 2^12 elements")
        warps = power_of_two(p.get("num_warps"), "num_warps", 1, 32)
        if p.get("view", "none") not in VIEWS:
            raise ValueError(f"view {p['view']!r}: none or permute (the buffer read back through its permuted view)")
        outs = [(f"dim{i}", s) for i, s in enumerate(shape)]
        for name, want in (("a", outs), ("b", view_outs(shape, p.get("view", "none")))):
            layout = LinearLayout.from_dict(p[name])
            check_layout_kind(layout, "distributed")
            sizes = {dim: 1 << len(bases) for dim, bases in layout.in_dims}
            if dict(layout.out_dims) != dict(want) or sizes.get("lane") != 32 or sizes.get("warp", 1) != warps:
                raise ValueError(f"layout {name} must map 32 lanes and num_warps warps onto the shape (b: the view's)")
        if kind != "linear":
            check_legacy(tl.from_dict(p["shared"]), shape, bits)
        if not self.shared_layout(p).is_invertible():
            raise ValueError("the shared layout is not a memory layout (Def 4.14)")

    def expected(self, case: Case) -> Any:
        """Data intact, and raw shared offset o holding element S(o) (row-major index)."""
        p = case.params
        if p.get("view") == "permute":  # the view's elements, each the stored one at its transposed coordinates
            return {"permuted view mismatches": 0}
        where = self.shared_layout(p).apply_all()  # per offset, its element's coordinates
        return {"data_mismatches": 0, "placement": (where["dim0"] * p["shape"][1] + where["dim1"]).tolist()}

    def kernel_spec(self, case: Case) -> KernelSpec:
        from triton.experimental.gluon import language as ttgl

        from layoutfuzz.gpu.gluon_probes import shared_permute_probe_2d, shared_probe_2d
        from layoutfuzz.harness.triton_compat.gluon_layouts import shared_linear, to_gluon
        from layoutfuzz.oracles import triton_layouts as tl

        p = case.params
        s0, s1 = p["shape"]
        shared = shared_linear(p["offset_bases"]) if "offset_bases" in p else to_gluon(tl.from_dict(p["shared"]))
        view_shape = [b for _, b in view_outs(p["shape"], p.get("view", "none"))]
        constexprs = {"A": gluon_layout(LinearLayout.from_dict(p["a"]), p["shape"]),
                      "B": gluon_layout(LinearLayout.from_dict(p["b"]), view_shape), "S": shared, "S0": s0, "S1": s1}
        pointer = POINTERS[p["elem_bits"]]
        if p.get("view") == "permute":
            return KernelSpec(shared_permute_probe_2d, {"src": pointer, "dst": pointer}, constexprs, p["num_warps"])
        constexprs["F"] = ttgl.BlockedLayout([1], [32], [p["num_warps"]], [0])
        return KernelSpec(shared_probe_2d, {"src": pointer, "dst": pointer, "raw": pointer}, constexprs, p["num_warps"])

    def direct_ttgir(self, case: Case, spec: KernelSpec | None = None) -> str | None:
        from layoutfuzz.gpu.direct_ttgir import shared_attr, shared_probe_ttgir

        p = case.params
        if 1 in p["shape"] or p.get("view"):  # a size-1 dim's ranges, a view: Gluon's own module, not written here
            return None
        spec = spec or self.kernel_spec(case)  # compile() has built it already
        return shared_probe_ttgir(list(p["shape"]), p["elem_bits"], LinearLayout.from_dict(p["a"]), LinearLayout.from_dict(p["b"]),
                                  shared_attr(spec.constexprs["S"]), p["num_warps"])

    def reproducer_script(self, case: Case) -> str | None:
        """For a permuted-view case: ``gluon_probes.shared_permute_probe_2d`` written out, its layouts as their Gluon
        constructors, launched through Triton's JIT; expected: the tile transposed (NumPy). None for the others."""
        if case.params.get("view") != "permute":
            return None
        return permute_script(case.params, self.kernel_spec(case))

    def run(self, case: Case) -> Any:
        p = case.params
        s0, s1 = p["shape"]
        numel = s0 * s1
        dtype = np.dtype(INT_TYPES[p["elem_bits"]])
        ids = np.arange(numel, dtype=np.int64).astype(dtype)  # element ids (mod 2^bits)
        kernel = self.kernel_for(case)
        stream = cubin_launcher().stream
        src = device_input(ids, "src", stream)
        if p.get("view") == "permute":
            dst = device_output(np.zeros(numel, dtype), "dst", stream)
            self.execute(case, src, dst, kernel=kernel)
            return {"permuted view mismatches": int((dst.read(stream) != ids.reshape(s0, s1).T.ravel()).sum())}
        dst, raw = device_output(np.zeros(numel, dtype), "dst", stream), device_output(np.zeros(numel, dtype), "raw", stream)
        self.execute(case, src, dst, raw, kernel=kernel)
        dst, raw = dst.read(stream), raw.read(stream)
        placement = raw.view(f"uint{p['elem_bits']}").tolist()  # ids, unsigned: exact, as numel <= 2^bits
        return {"data_mismatches": int((dst != ids).sum()), "placement": placement}


def permute_script(p: Mapping[str, Any], spec: KernelSpec) -> str:
    """``TritonSharedMemory.reproducer_script`` of a permuted-view case ``p`` whose kernel is ``spec``."""
    from layoutfuzz.gpu import gluon_probes
    from layoutfuzz.gpu.script_parts import gpu_script, source_of

    (s0, s1), bits, c = p["shape"], p["elem_bits"], spec.constexprs
    return gpu_script(
        doc=(f"A {s0} x {s1} int{bits} tile stored into Gluon shared memory in {c['S']!r}, then read back through the "
             f"buffer's permuted view (smem.permute([1, 0]), {s1} x {s0}) in a distributed layout, {p['num_warps']} "
             "warps: the view must hold the tile transposed."),
        kernel=source_of(gluon_probes._offsets_2d, gluon_probes.shared_permute_probe_2d),
        layouts=[f"A = ttgl.{c['A']!r}", f"B = ttgl.{c['B']!r}", f"S = ttgl.{c['S']!r}"],
        launch=['src = on_gpu(inputs["src"])', "dst = torch.zeros_like(src)",
                f"launch(shared_permute_probe_2d, src, dst, A=A, B=B, S=S, S0={s0}, S1={s1}, num_warps={p['num_warps']})",
                'outputs = {"dst": dst.cpu().numpy()}'],
        inputs=[f"src = np.arange({s0 * s1}, dtype=np.int64).astype(np.int{bits})  # each element its row-major index",
                'return {"src": src}'],
        expected=[f'return {{"dst": inputs["src"].reshape({s0}, {s1}).T.ravel()}}  # the tile transposed, row-major'],
        expected_text=f"dst = the {s0} x {s1} tile transposed ({s1} x {s0}), exactly")


def shared_memory_space() -> Space:
    """``triton.shared_memory``: a tile stored into a swizzled, NVMMA or linear shared buffer and read back."""
    gluon = "Gluon: allocate_shared_memory with a SwizzledShared, NVMMAShared or SharedLinear layout"

    def shared(p: Mapping[str, Any]) -> Any:
        from layoutfuzz.oracles import triton_layouts as tl

        return tl.from_dict(p["shared"]) if "shared" in p else None

    def illegal(a: str, x: Any, b: str, y: Any) -> bool:
        pair = {a: x, b: y}
        if other_kinds(pair, "kind"):
            return True
        kind = pair.get("kind", next((OWNER[n][0] for n in pair if n in OWNER), None))
        if "element bits" in pair and "nvmma swizzle bytes" in pair:  # 8 rows of the swizzle's span in 2^min(12, bits)
            span = 8 * max(16, pair["nvmma swizzle bytes"]) // pair["element bits"]
            return pair["element bits"] == 64 or 8 * max(8, span) > 1 << min(12, pair["element bits"])
        if "element bits" in pair and kind == "nvmma_shared":
            return pair["element bits"] == 64
        if "tile elements (log2)" in pair and "element bits" in pair:  # element ids fit the element type
            return pair["tile elements (log2)"] > min(12, pair["element bits"])
        if "tile elements (log2)" in pair and "nvmma swizzle bytes" in pair:  # an 8-row atom of the swizzle fits
            return pair["tile elements (log2)"] < NVMMA_ATOM_ELEMENTS_LOG2[pair["nvmma swizzle bytes"]]
        return False

    return Space((
        Parameter("kind", ("swizzled_shared", "nvmma_shared", "linear"), gluon, lambda p: p["kind"]),
        Parameter("element bits", (8, 16, 32, 64), "Triton: int8-int64 tiles (NVMMA shared: 8-32)", lambda p: p["elem_bits"]),
        Parameter("tile elements (log2)", tuple(range(13)), "this target: 2-D tiles (dims from 8 for NVMMA shared), "
                  "element ids that fit the element type (at most 2^12)", lambda p: (p["shape"][0] * p["shape"][1]).bit_length() - 1),
        Parameter("num_warps", WARPS, "Triton: a power of two, up to 32 warps (1,024 threads)", lambda p: p["num_warps"]),
        Parameter("view", ("none", "permute"), "Gluon: shared_memory_descriptor.permute, the buffer read back transposed",
                  lambda p: p.get("view", "none")),
        *shared_parameters(shared, ("swizzled vec", "swizzled per_phase", "swizzled max_phase", "nvmma swizzle bytes",
                                    "nvmma transposed")),
    ), illegal)
