"""The ``triton.convert_layout`` and ``triton.convert_layout_shuffle`` targets: Gluon's convert_layout between random
distributed linear layouts on the GPU, in Triton's own lowering and in the forced warp shuffle."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from math import prod
from typing import Any

import numpy as np

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.layouts import distributed_layout, split_bits
from layoutfuzz.generators.legacy_space import WARPS
from layoutfuzz.generators.shrink import drop_basis, joint_out_dim_halvings, replaced
from layoutfuzz.generators.source import Source, at_edge, bounded
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.generators.validity import check_layout_kind, check_shape, power_of_two
from layoutfuzz.gpu.device_arrays import device_input, device_output
from layoutfuzz.gpu.direct_ttgir import convert_probe_ttgir
from layoutfuzz.gpu.targets.gluon_kernel import (
    INT_TYPES,
    POINTERS,
    PREBUILT_NEEDS,
    PREBUILT_PRELOAD,
    GluonKernelTarget,
    KernelSpec,
    _permuted,
    cubin_launcher,
    gluon_layout,
)
from layoutfuzz.harness.compare import Comparison
from layoutfuzz.oracles import algorithms
from layoutfuzz.oracles.algorithms import conversion_plan
from layoutfuzz.oracles.linear_layout import LinearLayout


class TritonConvertLayout(GluonKernelTarget):
    name = "triton.convert_layout"
    layer = "Triton's lowering (convert_layout)"
    description = "Gluon convert_layout between random distributed linear layouts on the GPU: data and holders"
    requires = ("cuda device sm_90", "triton")
    needs = PREBUILT_NEEDS
    preload = PREBUILT_PRELOAD
    prebuilt = True

    def generate(self, source: Source) -> dict[str, Any]:
        edge = at_edge(source)  # the narrowest and widest elements, one warp and 32
        rank = source.integer(1, 3)
        total = source.integer(rank, 12)  # from 2 elements (fewer than a warp's lanes: broadcasting) to 2^12
        shape = [1 << (b + 1) for b in split_bits(source, total - rank, rank)]
        outs = [(f"dim{i}", s) for i, s in enumerate(shape)]
        warps = bounded(source, 0, 5, edge)  # 1-32 warps
        a = distributed_layout(source, outs=outs, fixed_bits={"lane": 5, "warp": warps}, max_broadcast_bits=2)
        how = source.choice(("independent", "registers", "within_warps"))
        if how == "independent":
            b = distributed_layout(source, outs=outs, fixed_bits={"lane": 5, "warp": warps}, max_broadcast_bits=2)
        else:  # B moves data only inside threads, or only inside warps: 5.4's cheaper conversions
            b = _permuted(source, a, ("register",) if how == "registers" else ("register", "lane"))
        elem_bits = source.choice((8, 8, 8, 64) if edge else tuple(INT_TYPES))  # 8-bit: four to a 32-bit register
        return {"shape": shape, "num_warps": 1 << warps, "elem_bits": elem_bits,
                "a": a.to_dict(), "b": b.to_dict()}

    def validate(self, case: Case) -> None:
        """The generator's rules: 1-3 dims of at least 2, at most 2^12 elements, 1-32 warps, 8-64-bit
        elements, and A and B distributed layouts (Def 4.10) over 32 lanes and the kernel's warps."""
        p = case.params
        shape = check_shape(p.get("shape"))
        warps = power_of_two(p.get("num_warps"), "num_warps", 1, 32)
        if not 1 <= len(shape) <= 3 or min(shape) < 2 or not prod(shape).bit_length() - 1 <= 12:
            raise ValueError("1-3 dims of at least 2, at most 2^12 elements")
        if p.get("elem_bits") not in INT_TYPES:
            raise ValueError(f"elem_bits must be one of {sorted(INT_TYPES)}")
        for key in ("a", "b"):
            layout = LinearLayout.from_dict(p[key])
            if [s for _, s in layout.out_dims] != list(shape) or not layout.is_surjective():
                raise ValueError(f"layout {key} does not cover the shape {p['shape']}")
            check_layout_kind(layout, "distributed")
            sizes = dict(layout.in_sizes)
            if sizes.get("lane") != 32 or sizes.get("warp") != warps:
                raise ValueError(f"layout {key} must span 32 lanes and the kernel's {warps} warps")

    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """A dim halved in A and B at once, fewer warps in both, a register basis dropped, a narrower element."""
        p = case.params
        for a, b in joint_out_dim_halvings([p["a"], p["b"]]):
            yield replaced(p, a=a, b=b, shape=[s for _, s in a["out_dims"]])
        warps = dict(LinearLayout.from_dict(p["a"]).in_sizes).get("warp", 1)
        for i in reversed(range(warps.bit_length() - 1)):
            yield replaced(p, a=drop_basis(p["a"], "warp", i), b=drop_basis(p["b"], "warp", i), num_warps=p["num_warps"] // 2)
        for key in ("a", "b"):
            registers = len(dict(LinearLayout.from_dict(p[key]).in_dims).get("register", ()))
            for i in reversed(range(registers)):
                yield replaced(p, **{key: drop_basis(p[key], "register", i)})
        if p["elem_bits"] > 8:
            yield replaced(p, elem_bits=p["elem_bits"] // 2)

    def family(self, case: Case) -> str:
        p = case.params
        try:
            kind = conversion_plan(LinearLayout.from_dict(p["a"]), LinearLayout.from_dict(p["b"])).kind
        except Exception:
            kind = "?"
        return f"{kind}:{p.get('elem_bits', '?')}b"

    def parameter_space(self) -> Space:
        return convert_layout_space()

    def expected(self, case: Case) -> Any:
        p = case.params
        return {
            "data_mismatches": 0,
            "holders_a": algorithms.holders(LinearLayout.from_dict(p["a"]), p["shape"]),
            "holders_b": algorithms.holders(LinearLayout.from_dict(p["b"]), p["shape"]),
        }

    def compare_results(self, case: Case, expected: Any, observed: Any) -> Comparison:
        """Which of the conversion's promises broke, whatever the side or element: a wrong holder
        (the layout), wrong data (the values moved), or both."""
        verdict = super().compare_results(case, expected, observed)
        if verdict.ok:
            return verdict
        kinds = [k for k, broken in (("wrong holder", expected["holders_a"] != observed.get("holders_a")
                                      or expected["holders_b"] != observed.get("holders_b")),
                                     ("wrong data", observed.get("data_mismatches", 0) != 0)) if broken]
        return Comparison(False, verdict.mismatch_count, verdict.mismatches, ", ".join(kinds) or verdict.signature, verdict.note)

    def run(self, case: Case, variant: str = "") -> Any:
        p = case.params
        dtype = np.dtype(INT_TYPES[p["elem_bits"]])
        numel = prod(p["shape"])
        info = np.iinfo(dtype)
        values = np.random.default_rng(case.index).integers(info.min, info.max, numel, dtype=dtype)  # the data follows the index
        kernel = self.kernel_for(case, variant)
        stream = cubin_launcher().stream
        src = device_input(values, "src", stream)
        outputs = [device_output(np.zeros(numel, dtype), "dst", stream),
                   *(device_output(np.full(numel, -1, np.int32), name, stream) for name in ("tid_a", "tid_b"))]
        self.execute(case, src, *outputs, variant=variant, kernel=kernel)
        dst, tid_a, tid_b = (g.read(stream) for g in outputs)
        return {"data_mismatches": int((dst != values).sum()), "holders_a": tid_a.tolist(), "holders_b": tid_b.tolist()}

    def direct_ttgir(self, case: Case, spec: KernelSpec | None = None) -> str | None:
        p = case.params
        return convert_probe_ttgir(list(p["shape"]), p["elem_bits"], LinearLayout.from_dict(p["a"]),
                                   LinearLayout.from_dict(p["b"]), p["num_warps"], p.get("num_ctas", 1))

    def kernel_spec(self, case: Case) -> KernelSpec:
        from layoutfuzz.gpu.gluon_probes import CONVERT_PROBES

        p = case.params
        shape = list(p["shape"])
        pointer = POINTERS[p["elem_bits"]]
        constexprs = {"A": gluon_layout(LinearLayout.from_dict(p["a"]), shape), "B": gluon_layout(LinearLayout.from_dict(p["b"]), shape),
                      **{f"S{i}": s for i, s in enumerate(shape)}}
        return KernelSpec(CONVERT_PROBES[len(shape)], {"src": pointer, "dst": pointer, "tid_a": "*i32", "tid_b": "*i32"},
                          constexprs, p["num_warps"])

    def reproducer_script(self, case: Case) -> str | None:
        """The probe written out (``gluon_probes.convert_probe_{1,2,3}d``), the two layouts as Gluon
        ``DistributedLinearLayout`` literals, launched through Triton's JIT on torch tensors (one cluster of the
        layouts' CTAs); expected: the data arrives unchanged (``dst == src``: a conversion moves elements, never
        changes them). Needs a GPU (``gpu.script_parts``)."""
        return convert_layout_script(case.params, case.index)

    def picture(self, report: dict[str, Any]) -> Any:
        """Which thread holds each element under layouts A and B, the oracle's above the GPU's, disagreements as red x;
        None where either side has no holders."""
        if not all(isinstance(v, dict) and "holders_a" in v and "holders_b" in v for v in (report.get("expected"), report.get("observed"))):
            return None
        from layoutfuzz.reports.pictures import pyplot

        plt = pyplot()
        p = report["case"]["params"]
        shape = p["shape"]
        rows = prod(shape[:-1])
        expected, observed = report["expected"], report["observed"]
        fig, axes = plt.subplots(2, 2, figsize=(10, 7))
        for col, side in enumerate(("a", "b")):
            want = np.asarray(expected[f"holders_{side}"]).reshape(rows, shape[-1])
            got = np.asarray(observed[f"holders_{side}"]).reshape(rows, shape[-1])
            for row, (values, name) in enumerate(((want, "oracle"), (got, "GPU"))):
                ax = axes[row][col]
                ax.imshow(values, cmap="viridis", aspect="auto", interpolation="nearest")
                wrong = np.argwhere(want != got)
                if wrong.size:
                    ax.scatter(wrong[:, 1], wrong[:, 0], marker="x", color="red", s=12)
                ax.set_title(f"layout {side.upper()}: %tid.x holding each element ({name})", fontsize=9)
                ax.set_xlabel(f"dim{len(shape) - 1}")
                ax.set_ylabel("other dims, row-major")
        data = observed.get("data_mismatches", 0)
        fig.suptitle(f"{report['case_id']}: holders {'agree' if expected['holders_a'] == observed['holders_a'] and expected['holders_b'] == observed['holders_b'] else 'differ (red x)'}; "
                     f"{data} element value(s) wrong after the conversion", fontsize=10)
        return fig


def within_warps(params: Mapping[str, Any]) -> bool:
    try:
        kind = conversion_plan(LinearLayout.from_dict(params["a"]), LinearLayout.from_dict(params["b"])).kind
    except Exception:
        return False
    return kind == "shuffle"


def convert_layout_space() -> Space:
    """``triton.convert_layout``: a Gluon convert_layout between two distributed layouts (Def 4.10) of one tensor."""
    triton = "Triton: Gluon DistributedLinearLayout and num_warps"

    def broadcasts(dim: str) -> Callable[[Mapping[str, Any]], str]:
        def draw(p: Mapping[str, Any]) -> str:
            bases = dict(LinearLayout.from_dict(p["a"]).in_dims).get(dim, ())
            return "yes" if any(not any(b) for b in bases) else "no"
        return draw

    def plan(p: Mapping[str, Any]) -> str:
        return conversion_plan(LinearLayout.from_dict(p["a"]), LinearLayout.from_dict(p["b"])).kind

    small = "the generator keeps 2^12 elements at most (a kernel of up to 64-bit elements in 1-32 warps, compiled per case)"
    return Space((
        Parameter("rank", (1, 2, 3, 4, 5), f"{triton}: any rank", lambda p: len(p["shape"]),
                  {4: "the probes are written for ranks 1-3", 5: "the probes are written for ranks 1-3"}),
        Parameter("log2 elements", tuple(range(21)), "Triton: TRITON_MAX_TENSOR_NUMEL = 2^20",
                  lambda p: sum(s.bit_length() - 1 for s in p["shape"]),
                  {0: "dims of at least 2: a one-element tensor has no layout to convert"} | {n: small for n in range(13, 21)}),
        Parameter("num_warps", WARPS, f"{triton}: a power of two, up to 32 warps (1,024 threads)", lambda p: p["num_warps"]),
        Parameter("element bits", (8, 16, 32, 64), "Triton: int8-int64 (the data moved)", lambda p: p["elem_bits"]),
        Parameter("conversion plan", ("none", "register", "shuffle", "shared"), "the paper, Section 5.4", plan),
        Parameter("A broadcasts registers", ("no", "yes"), "the paper, Def 4.10 (zero columns)", broadcasts("register")),
        Parameter("A broadcasts lanes", ("no", "yes"), "the paper, Def 4.10 (zero columns)", broadcasts("lane")),
        Parameter("A broadcasts warps", ("no", "yes"), "the paper, Def 4.10 (zero columns)", broadcasts("warp")),
    ), _convert_illegal)


def _convert_illegal(a: str, x: Any, b: str, y: Any) -> bool:
    """One warp has no warp bits to broadcast; fewer elements than dims of at least 2 cannot be."""
    pair = {a: x, b: y}
    if pair.get("num_warps") == 1 and pair.get("A broadcasts warps") == "yes":
        return True
    if "rank" in pair and "log2 elements" in pair:
        return pair["log2 elements"] < pair["rank"]
    return False


def convert_layout_script(p: Mapping[str, Any], index: int) -> str:
    """``TritonConvertLayout.reproducer_script`` of params ``p`` (case index ``index``: the data's seed)."""
    from layoutfuzz.gpu import gluon_probes
    from layoutfuzz.gpu.script_parts import gpu_script, source_of

    shape = list(p["shape"])
    rank = len(shape)
    offsets = {1: gluon_probes._offsets_1d, 2: gluon_probes._offsets_2d, 3: gluon_probes._offsets_3d}[rank]
    probe = gluon_probes.CONVERT_PROBES[rank]
    ctas = p.get("num_ctas", 1)
    kind = INT_TYPES[p["elem_bits"]]
    info = np.iinfo(kind)

    def literal(layout: Mapping[str, Any]) -> str:
        bases = dict(LinearLayout.from_dict(layout).in_dims)
        args = [[list(b) for b in bases.get(d, ())] for d in ("register", "lane", "warp", "block")]
        return f"ttgl.DistributedLinearLayout({', '.join(map(repr, args))}, {shape!r})"

    dims = ", ".join(f"S{i}={s}" for i, s in enumerate(shape))
    clusters = f", num_ctas={ctas}" if ctas > 1 else ""
    tile = " x ".join(map(str, shape))
    return gpu_script(
        doc=(f"Gluon's convert_layout of a {tile} tensor of {kind} between two distributed linear layouts "
             f"({p['num_warps']} warp(s){f', a cluster of {ctas} CTAs' if ctas > 1 else ''}): a conversion moves each "
             "element to the thread the second layout names and must not change it, so the tensor stored from layout B "
             "equals the one loaded in layout A. The kernel also records each element's holder (its thread) in A and "
             "in B; only the data is checked here."),
        kernel=source_of(gluon_probes._tid_like, offsets, probe),
        layouts=[f"A = {literal(p['a'])}", f"B = {literal(p['b'])}"],
        launch=['src = on_gpu(inputs["src"])', "dst = torch.zeros_like(src)",
                "tid_a = torch.full(src.shape, -1, dtype=torch.int32, device=src.device)",
                "tid_b = torch.full(src.shape, -1, dtype=torch.int32, device=src.device)",
                f"launch({probe.__name__}, src, dst, tid_a, tid_b, A=A, B=B, {dims}, num_warps={p['num_warps']}{clusters})",
                'outputs = {"dst": dst.cpu().numpy()}'],
        inputs=[f"values = np.random.default_rng({index}).integers({info.min}, {info.max}, {int(np.prod(shape))}, "
                f"dtype=np.{kind})",
                'return {"src": values}  # row-major: element (i, j, ...) at its row-major offset'],
        expected=['return {"dst": inputs["src"]}  # convert_layout changes where elements live, never their values'],
        expected_text=f"dst == src: the {int(np.prod(shape))} {kind} values unchanged by convert_layout")
