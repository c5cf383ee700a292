"""Bridges from the oracle's legacy-layout dataclasses to Gluon's layout objects (Triton 3.6.0 and later;
what differs between releases is in ``harness.triton_compat``)."""

from __future__ import annotations

import re
from math import prod
from typing import Any, ClassVar

from layoutfuzz.harness.target import Availability, Target
from layoutfuzz.oracles import triton_layouts as tl

MISSING_OP = re.compile(r"module 'triton\.experimental\.gluon\.language' has no attribute")  # an older Gluon's gap


def without_tensor_types(error: str) -> str:
    """A compiler error cut at its first quoted tensor type (shapes and layouts vary between cases of one cause, and
    a stored error may end inside one): one bug, one bucket."""
    return re.sub(r"'tensor<.*", "'tensor'", error, flags=re.DOTALL)


class GluonTarget(Target):
    """Base of the targets that drive Triton's Gluon front end on the CPU. (Triton's version is in
    every report already: ``reports.report.environment_versions``.)"""

    requires: ClassVar[tuple[str, ...]] = ("triton",)
    preload: ClassVar[tuple[str, ...]] = ("triton", "triton.experimental.gluon.language", "triton.compiler.compiler",
                                          "layoutfuzz.harness.triton_compat.gluon_kernels")

    def warm_up(self) -> None:
        from layoutfuzz.harness.triton_compat import builder

        builder.warm_up()

    def availability(self) -> Availability:
        try:
            import triton.experimental.gluon.language  # noqa: F401
            from triton._C.libtriton import gluon_ir  # noqa: F401
        except Exception as exc:  # ImportError, or a broken binary wheel
            return Availability(False, f"Triton with Gluon is not importable: {exc}")
        return Availability(True)


def to_gluon(layout: tl.Layout) -> Any:
    """The Gluon layout object for an oracle legacy layout."""
    from triton.experimental.gluon import language as ttgl

    if isinstance(layout, tl.BlockedLayout):
        return ttgl.BlockedLayout(list(layout.size_per_thread), list(layout.threads_per_warp), list(layout.warps_per_cta), list(layout.order))
    if isinstance(layout, tl.SliceLayout):
        return ttgl.SliceLayout(layout.dim, to_gluon(layout.parent))
    if isinstance(layout, tl.NVMMADistributedLayout):
        return ttgl.NVMMADistributedLayout(list(layout.version), list(layout.warps_per_cta), list(layout.instr_shape))
    if isinstance(layout, tl.DotOperandLayout):
        return ttgl.DotOperandLayout(layout.operand_index, to_gluon(layout.parent), layout.k_width)
    if isinstance(layout, tl.SwizzledSharedLayout):
        return ttgl.SwizzledSharedLayout(layout.vec, layout.per_phase, layout.max_phase, list(layout.order))
    if isinstance(layout, tl.NVMMASharedLayout):
        return ttgl.NVMMASharedLayout(layout.swizzle_byte_width, layout.element_bitwidth, layout.rank, layout.transposed)
    raise TypeError(f"no Gluon layout for {layout!r}")


def shared_linear(bases: list[list[int]]) -> Any:
    """A Gluon SharedLinearLayout from offset bases (one coordinate per tensor dim)."""
    from triton.experimental.gluon import language as ttgl

    return ttgl.SharedLinearLayout([list(b) for b in bases])


def num_warps(layout: tl.Layout) -> int:
    """Warps a distributed legacy layout spans."""
    if isinstance(layout, (tl.DotOperandLayout, tl.SliceLayout)):
        return num_warps(layout.parent)
    if isinstance(layout, (tl.BlockedLayout, tl.NVMMADistributedLayout)):
        return prod(layout.warps_per_cta)
    raise TypeError(f"{layout!r} is not distributed")


def from_spec(spec: dict[str, Any]) -> Any:
    """The Gluon layout object a ``generators.gluon_layouts`` dict describes (its constructor may refuse)."""
    from triton.experimental.gluon import language as ttgl
    from triton.experimental.gluon.language import amd
    from triton.experimental.gluon.language.nvidia.blackwell import TensorMemoryLayout, TensorMemoryScalesLayout

    args = constructor_args(spec)
    kind = spec["kind"]
    if kind in ("slice", "dot_operand"):
        args["parent"] = from_spec(spec["parent"])
    if kind == "padded_shared":
        return ttgl.PaddedSharedLayout.with_identity_for(args["interval_padding_pairs"], args["shape"], args["order"],
                                                         args["cga_layout"])
    classes = {"blocked": ttgl.BlockedLayout, "slice": ttgl.SliceLayout, "dot_operand": ttgl.DotOperandLayout,
               "nvmma_distributed": ttgl.NVMMADistributedLayout, "distributed_linear": ttgl.DistributedLinearLayout,
               "amd_mfma": amd.AMDMFMALayout, "amd_wmma": amd.AMDWMMALayout, "nvmma_shared": ttgl.NVMMASharedLayout,
               "swizzled_shared": ttgl.SwizzledSharedLayout, "shared_linear": ttgl.SharedLinearLayout,
               "tensor_memory": TensorMemoryLayout, "tensor_memory_scales": TensorMemoryScalesLayout}
    return classes[kind](**args)


def constructor_args(spec: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of a layout dict's Gluon constructor: the dict but its kind, and a tensor-memory scales
    layout's empty CGA layout left out (before 3.8.0 it takes none, and an empty one is none)."""
    if spec["kind"] == "tensor_memory_scales" and not spec.get("cga_layout"):
        return {}
    return {k: v for k, v in spec.items() if k != "kind"}


def num_ctas(spec: dict[str, Any]) -> int:
    """CTAs a Gluon layout dict spans: two to the number of its (or its parent's) CGA or block bases."""
    if spec["kind"] in ("slice", "dot_operand"):
        return num_ctas(spec["parent"])
    return 1 << len(spec.get("cga_layout", spec.get("block_bases", [])))
