"""``triton.convert_layout_cluster``: Gluon ``convert_layout`` between distributed layouts that span a cluster of CTAs
(the paper's ``block`` input dimension, Triton's ``num_ctas``), run on the GPU as one cluster.

Each side's holder of every element is read off the hardware as ``%tid.x`` plus ``%cluster_ctarank`` times the CTA's
threads, and the oracle's is the layout's right inverse with every broadcast bit (register, lane, warp, block) zero, so
a conversion that puts an element in the wrong CTA shows as a wrong holder, and one that loses data across CTAs as
wrong data.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.layouts import (
    DISTRIBUTED_DIMS,
    cta_tiling,
    distributed_layout,
    distributed_layout_sharing,
    split_bits,
)
from layoutfuzz.generators.shrink import drop_basis, replaced
from layoutfuzz.generators.source import Source
from layoutfuzz.generators.space import Parameter, Space
from layoutfuzz.gpu.targets.gluon_kernel import INT_TYPES, KernelSpec, _permuted
from layoutfuzz.gpu.targets.triton_convert_layout import TritonConvertLayout, _convert_illegal, convert_layout_space
from layoutfuzz.oracles.linear_layout import LinearLayout

CLUSTER_DIMS = (*DISTRIBUTED_DIMS, "block")
CLUSTER_SIZES = (1, 2, 4, 8)  # CTAs a cluster may hold portably (the CUDA guide: 8); 1 only where a reduction drops them


class TritonConvertLayoutCluster(TritonConvertLayout):
    name = "triton.convert_layout_cluster"
    layer = "Triton's lowering (convert_layout across the CTAs of a cluster, num_ctas > 1)"
    description = "Gluon convert_layout between distributed layouts over a cluster of 2-8 CTAs on the GPU: data and holders"
    requires = ("cuda device sm_90", "triton")

    def generate(self, source: Source) -> dict[str, Any]:
        """A and B over 2, 4 or 8 CTAs with the same ``block`` bases (Triton 3.6.0 fails to legalize a conversion that
        moves data between CTAs): three times in four the CTAs tile the tensor as Triton's CGA layouts do
        (``cta_tiling``), else the block bases are any bits of the tensor."""
        rank = source.integer(1, 3)
        ctas = source.integer(1, 3)
        total = source.integer(rank, 12)  # as triton.convert_layout: 2 to 2^12 elements
        shape = [1 << (b + 1) for b in split_bits(source, total - rank, rank)]
        outs = [(f"dim{i}", s) for i, s in enumerate(shape)]
        warps = source.integer(0, 5)
        fixed = {"lane": 5, "warp": warps}
        if source.integer(0, 3):  # CTAs tile the tensor, as Triton's CGA layouts do
            a = distributed_layout_sharing(source, cta_tiling(source, outs, ctas, CLUSTER_DIMS), ("block",), 2, fixed)
        else:  # block bases on any bits (Def 4.10, as Gluon's DistributedLinearLayout takes them)
            a = distributed_layout(source, CLUSTER_DIMS, outs=outs, fixed_bits=fixed | {"block": ctas}, max_broadcast_bits=2)
        how = source.choice(("independent", "registers", "within_warps"))
        if how == "independent":
            b = distributed_layout_sharing(source, a, ("block",), 2, fixed)
        else:  # data stays inside threads, or inside warps
            b = _permuted(source, a, ("register",) if how == "registers" else ("register", "lane"))
        return {"shape": shape, "num_warps": 1 << warps, "num_ctas": 1 << ctas, "elem_bits": source.choice(tuple(INT_TYPES)),
                "a": a.to_dict(), "b": b.to_dict()}

    def validate(self, case: Case) -> None:
        """``triton.convert_layout``'s rules, with both layouts spanning the kernel's ``num_ctas`` CTAs (1, 2, 4 or 8)
        through the same ``block`` bases."""
        p = case.params
        if p.get("num_ctas") not in CLUSTER_SIZES:
            raise ValueError(f"num_ctas must be one of {CLUSTER_SIZES}")
        super().validate(case)
        a, b = (LinearLayout.from_dict(p[key]) for key in ("a", "b"))
        for key, layout in (("a", a), ("b", b)):
            if dict(layout.in_sizes).get("block", 1) != p["num_ctas"]:
                raise ValueError(f"layout {key} must span the kernel's {p['num_ctas']} CTAs (its block dim)")
        if a.dim_columns("block") != b.dim_columns("block"):
            raise ValueError("A and B must share their block bases: Triton lowers no convert_layout between CTAs")


    def shrink(self, case: Case) -> Iterator[dict[str, Any]]:
        """Fewer CTAs (a block basis dropped from A and B at once), then ``triton.convert_layout``'s steps."""
        p = case.params
        ctas = p["num_ctas"]
        for i in reversed(range(ctas.bit_length() - 1)):
            yield replaced(p, a=drop_basis(p["a"], "block", i), b=drop_basis(p["b"], "block", i), num_ctas=ctas // 2)
        yield from super().shrink(case)

    def family(self, case: Case) -> str:
        p = case.params
        try:
            tiled = "CTA tiles" if ctas_tile(LinearLayout.from_dict(p["a"])) else "scattered blocks"
        except Exception:
            tiled = "?"
        return f"{super().family(case)}:{p.get('num_ctas', '?')} CTAs:{tiled}"

    def parameter_space(self) -> Space:
        return convert_layout_cluster_space()

    def kernel_spec(self, case: Case) -> KernelSpec:
        return replace(super().kernel_spec(case), num_ctas=case.params["num_ctas"])

    def picture(self, report: dict[str, Any]) -> Any:
        """None: its reports get the shared pictures (the holders picture is ``triton.convert_layout``'s)."""
        return None


def ctas_tile(layout: LinearLayout) -> bool:
    """Whether ``layout``'s CTAs tile its tensor (each non-zero block basis one of its dim's top bits, as
    ``generators.layouts.cta_tiling`` draws them), rather than hold scattered elements."""
    sizes = [size.bit_length() - 1 for _, size in layout.out_dims]
    blocks = dict(layout.in_dims).get("block", ())
    split = [sum(1 for basis in blocks if basis[d]) for d in range(len(sizes))]
    return all(basis[d].bit_length() - 1 >= sizes[d] - split[d] for basis in blocks for d in range(len(sizes)) if basis[d])


def convert_layout_cluster_space() -> Space:
    """``triton.convert_layout_cluster``: ``convert_layout_space`` over a cluster of CTAs (the ``block`` dimension)."""
    base = convert_layout_space()

    def block_broadcast(p: Mapping[str, Any]) -> str:
        return "yes" if any(not any(b) for b in dict(LinearLayout.from_dict(p["a"]).in_dims).get("block", ())) else "no"

    cuda = "CUDA programming guide: a cluster of up to 8 CTAs is portable (16 on an H100 with a non-portable size)"
    return Space((
        *base.parameters,
        Parameter("num_ctas", (1, 2, 4, 8, 16), f"Triton: num_ctas; {cuda}", lambda p: p["num_ctas"],
                  {1: "one CTA is triton.convert_layout's", 16: "a non-portable cluster size"}),
        Parameter("A broadcasts blocks", ("no", "yes"), "the paper, Def 4.10 (zero columns)", block_broadcast),
        Parameter("block bases", ("CTA tiles", "scattered blocks"), "Gluon: DistributedLinearLayout's block_bases (any bits)",
                  lambda p: "CTA tiles" if ctas_tile(LinearLayout.from_dict(p["a"])) else "scattered blocks"),
    ), _convert_illegal)
