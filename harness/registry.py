"""Finding targets: built-ins, the ``layoutfuzz.targets`` entry-point group, and ``module:attr``."""

from __future__ import annotations

import difflib
import importlib
import re
from functools import cache
from importlib.metadata import entry_points

from layoutfuzz.harness.target import Target
from layoutfuzz.reports import pictures
from layoutfuzz.reports.signatures import SANITIZER_TOOLS  # the TOOL of a NAME+TOOL target

ENTRY_POINT_GROUP = "layoutfuzz.targets"

BUILTIN: dict[str, str] = {  # by folder (harness/targets, then gpu/targets); the module is the name, dots as underscores
    "triton.linear_layout": "layoutfuzz.harness.targets.triton_linear_layout:TritonLinearLayout",
    "triton.layouts": "layoutfuzz.harness.targets.triton_layouts:TritonLayouts",
    "triton.gluon_layouts": "layoutfuzz.harness.targets.triton_gluon_layouts:TritonGluonLayouts",
    "triton.layout_ops": "layoutfuzz.harness.targets.triton_layout_ops:TritonLayoutOps",
    "triton.layout_chains": "layoutfuzz.harness.targets.triton_layout_chains:TritonLayoutChains",
    "triton.shared_layouts": "layoutfuzz.harness.targets.triton_shared_layouts:TritonSharedLayouts",
    "triton.bank_conflicts": "layoutfuzz.harness.targets.triton_bank_conflicts:TritonBankConflicts",
    "triton.compile": "layoutfuzz.harness.targets.triton_compile:TritonCompile",
    "pycute.layouts": "layoutfuzz.harness.targets.pycute_layouts:PycuteLayouts",
    "cute.layouts": "layoutfuzz.harness.targets.cute_layouts:CuteDslLayouts",
    "cute.smem_atoms": "layoutfuzz.harness.targets.cute_smem_atoms:CuteSmemAtoms",
    "triton.smem_atoms": "layoutfuzz.harness.targets.triton_smem_atoms:TritonSmemAtoms",
    "triton.xor_swizzles": "layoutfuzz.harness.targets.triton_xor_swizzles:TritonXorSwizzles",
    "pycute.xor_swizzles": "layoutfuzz.harness.targets.pycute_xor_swizzles:PycuteXorSwizzles",
    "cute.xor_swizzles": "layoutfuzz.harness.targets.cute_xor_swizzles:CuteXorSwizzles",
    "mosaic.layouts": "layoutfuzz.harness.targets.mosaic_layouts:MosaicLayouts",
    "mosaic.layout_relations": "layoutfuzz.harness.targets.mosaic_layout_relations:MosaicLayoutRelations",
    "mosaic.layout_inference": "layoutfuzz.harness.targets.mosaic_layout_inference:MosaicLayoutInference",
    "mosaic.transfers": "layoutfuzz.harness.targets.mosaic_transfers:MosaicTransfers",
    "triton.nvmma_default": "layoutfuzz.harness.targets.triton_nvmma_default:TritonNvmmaDefault",
    "tma.swizzle": "layoutfuzz.gpu.targets.tma_swizzle:TmaSwizzle",
    "tma.encode": "layoutfuzz.gpu.targets.tma_encode:TmaEncode",
    "tma.copy": "layoutfuzz.gpu.targets.tma_copy:TmaCopy",
    "wgmma.descriptor": "layoutfuzz.gpu.targets.wgmma_descriptor:WgmmaDescriptor",
    "triton.convert_layout": "layoutfuzz.gpu.targets.triton_convert_layout:TritonConvertLayout",
    "triton.convert_layout_shuffle": "layoutfuzz.gpu.targets.triton_convert_layout_shuffle:TritonConvertLayoutShuffle",
    "triton.layout_ops_run": "layoutfuzz.gpu.targets.triton_layout_ops_run:TritonLayoutOpsRun",
    "triton.layout_chains_run": "layoutfuzz.gpu.targets.triton_layout_chains_run:TritonLayoutChainsRun",
    "triton.convert_layout_cluster": "layoutfuzz.gpu.targets.triton_convert_layout_cluster:TritonConvertLayoutCluster",
    "triton.tma_cluster": "layoutfuzz.gpu.targets.triton_tma_cluster:TritonTmaCluster",
    "triton.tma_multicast": "layoutfuzz.gpu.targets.triton_tma_multicast:TritonTmaMulticast",
    "triton.tma_cluster_multicast": "layoutfuzz.gpu.targets.triton_tma_cluster_multicast:TritonTmaClusterMulticast",
    "triton.tma_cluster_store": "layoutfuzz.gpu.targets.triton_tma_cluster_store:TritonTmaClusterStore",
    "triton.shared_memory": "layoutfuzz.gpu.targets.triton_shared_memory:TritonSharedMemory",
    "triton.tma": "layoutfuzz.gpu.targets.triton_tma:TritonTma",
    "triton.wgmma": "layoutfuzz.gpu.targets.triton_wgmma:TritonWgmma",
    "mosaic.gpu": "layoutfuzz.gpu.targets.mosaic_gpu:MosaicGpu",
    "tma.boxes": "layoutfuzz.gpu.targets.tma_boxes:RawTmaBoxes",
    "triton.tma_boxes": "layoutfuzz.gpu.targets.triton_tma_boxes:TritonTmaBoxes",
    "mosaic.tma_boxes": "layoutfuzz.gpu.targets.mosaic_tma_boxes:MosaicTmaBoxes",
}


SANITIZED = "layoutfuzz.gpu.sanitizer:Sanitized"  # NAME+TOOL: a target's system under test under compute-sanitizer


class TargetNotFound(LookupError):
    """No target of that name or spec."""


SPEC = re.compile(r"[^\W\d]\w*(?:\.[^\W\d]\w*)*:[^\W\d]\w*(?:\[.*\])?", re.DOTALL)  # module.path:attr[ARGUMENT]


def check_spec(spec: str) -> str:
    """``spec`` if it is a well-formed ``module:attr`` (a dotted absolute module path, an attribute name, an optional
    ``[ARGUMENT]``), else TargetNotFound saying so: nothing malformed reaches the import machinery."""
    if not SPEC.fullmatch(spec):
        raise TargetNotFound(f"bad target {spec!r}: expected MODULE:ATTR, e.g. mypackage.targets:MyTarget")
    return spec


def available_specs() -> dict[str, str]:
    """Target name -> ``module:attr``, built-ins first, then installed plug-ins."""
    specs = dict(BUILTIN)
    for name, value in _plugins():
        specs.setdefault(name, value)
    return specs


@cache
def _plugins() -> tuple[tuple[str, str], ...]:
    """The installed plug-ins, read once a process: scanning every distribution's entry points takes milliseconds, and
    every report written asks (``harness.trust``)."""
    return tuple((ep.name, ep.value) for ep in entry_points(group=ENTRY_POINT_GROUP))


def resolve(name_or_spec: str) -> str:
    """The ``module:attr`` spec of a target name, or the spec itself."""
    if ":" in name_or_spec:
        return name_or_spec
    inner, plus, tool = name_or_spec.rpartition("+")
    if plus and tool in SANITIZER_TOOLS:
        return sanitized_spec(resolve(inner), tool)
    specs = available_specs()
    if name_or_spec not in specs:
        close = difflib.get_close_matches(name_or_spec, specs, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise TargetNotFound(f"unknown target {name_or_spec!r}; {hint}known: {', '.join(sorted(specs))} "
                             "(or give module:attr)")
    return specs[name_or_spec]


_loaded: dict[str, Target] = {}


def load(name_or_spec: str) -> Target:
    """The target object behind a name or ``module:attr`` spec (a class is instantiated)."""
    spec = check_spec(resolve(name_or_spec))
    if spec not in _loaded:
        module_name, _, attr = spec.partition(":")
        attr, bracket, argument = attr.partition("[")  # module:Class[ARGUMENT]: the class called with ARGUMENT
        try:
            obj = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise TargetNotFound(f"cannot load target {spec!r}: {exc}") from exc
        if bracket:
            target = obj(argument.removesuffix("]"))
        else:
            target = obj() if isinstance(obj, type) else obj
        if not getattr(target, "name", ""):
            raise TargetNotFound(f"target {spec!r} has no name")
        _loaded[spec] = target
    return _loaded[spec]


def sanitized_spec(inner_spec: str, tool: str = "memcheck") -> str:
    """The spec of ``inner_spec``'s target with its system under test under compute-sanitizer's ``tool``."""
    return f"{SANITIZED}[{inner_spec}@{tool}]"


def sanitized_parts(spec: str) -> tuple[str, str] | None:
    """(inner spec, tool) of a ``sanitized_spec``, else None."""
    if not (spec.startswith(SANITIZED + "[") and spec.endswith("]")):
        return None
    inner, _, tool = spec[len(SANITIZED) + 1:-1].rpartition("@")
    return (inner, tool) if inner and tool in SANITIZER_TOOLS else None


def picture_target(name: str) -> Target | None:
    """The installed target of this name, which draws the pictures of its reports (``reports.pictures``); None for
    any other name (a report names its target as data: only installed targets are loaded, as ``harness.trust`` says)."""
    spec = available_specs().get(name)
    return None if spec is None else load(spec)


pictures.target_of = picture_target
