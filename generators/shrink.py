"""Shrinks in the domain's own terms, for the reducer: smaller layouts, shapes and widths, each a
single step (drop a basis vector, halve a dimension, fewer warps, a narrower element). A shrink
need not be valid on its own: targets keep those their ``validate`` accepts."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

LayoutDict = dict[str, Any]  # LinearLayout.to_dict(): {"bases": [[name, [[...], ...]], ...], "out_dims": [[name, size], ...]}


def drop_basis(layout: LayoutDict, dim: str, index: int) -> LayoutDict:
    """``layout`` without basis ``index`` of input ``dim`` (that input halves)."""
    out = copy.deepcopy(layout)
    for entry in out["bases"]:
        if entry[0] == dim:
            del entry[1][index]
    return out


def zero_basis(layout: LayoutDict, dim: str, index: int) -> LayoutDict:
    """``layout`` with basis ``index`` of ``dim`` sent to zero (a broadcast)."""
    out = copy.deepcopy(layout)
    for entry in out["bases"]:
        if entry[0] == dim:
            entry[1][index] = [0] * len(entry[1][index])
    return out


def halve_out_dim(layout: LayoutDict, dim: str) -> LayoutDict | None:
    """``layout`` with output ``dim`` halved: its top bit dropped from every basis; None if size 1."""
    out = copy.deepcopy(layout)
    names = [n for n, _ in out["out_dims"]]
    if dim not in names:
        return None
    i = names.index(dim)
    size = out["out_dims"][i][1]
    if size < 2:
        return None
    out["out_dims"][i][1] = size // 2
    for _, bases in out["bases"]:
        for basis in bases:
            basis[i] &= size // 2 - 1
    return out


def layout_shrinks(layout: LayoutDict) -> Iterator[LayoutDict]:
    """Single-step shrinks of one linear layout: each output dim halved, each input's last basis
    dropped (the input halves), then any basis dropped or zeroed."""
    for name, _ in layout["out_dims"]:
        smaller = halve_out_dim(layout, name)
        if smaller is not None:
            yield smaller
    for name, bases in layout["bases"]:
        for i in reversed(range(len(bases))):
            yield drop_basis(layout, name, i)
    for name, bases in layout["bases"]:
        for i, basis in enumerate(bases):
            if any(basis):
                yield zero_basis(layout, name, i)


def joint_out_dim_halvings(layouts: Sequence[LayoutDict]) -> Iterator[list[LayoutDict]]:
    """Layouts that share their output dims (A and B of a conversion, inner and outer of
    invert_and_compose), each output dim halved in all of them at once."""
    if not layouts:
        return
    for name, _ in layouts[0]["out_dims"]:
        smaller = [halve_out_dim(layout, name) for layout in layouts]
        if all(s is not None for s in smaller):
            yield smaller


def halved_sizes(values: Sequence[int]) -> Iterator[list[int]]:
    """``values`` (power-of-two sizes) with one entry halved."""
    for i, v in enumerate(values):
        if isinstance(v, int) and v > 1:
            yield [*values[:i], v // 2, *values[i + 1:]]


def legacy_shrinks(layout: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Single-step shrinks of a legacy layout's dict: a size, warp count or instruction N halved, a
    narrower swizzle or element, the same in its parent."""
    for key, value in layout.items():
        if key == "parent":
            for parent in legacy_shrinks(value):
                yield replaced(layout, parent=parent)
        elif key == "swizzle_byte_width" and value:
            yield replaced(layout, **{key: value // 2 if value > 32 else 0})
        elif key == "element_bitwidth" and value > 8:
            yield replaced(layout, **{key: value // 2})
        elif key in ("size_per_thread", "warps_per_cta", "instr_shape"):
            for smaller in halved_sizes(value):
                yield replaced(layout, **{key: smaller})
        elif key in ("vec", "per_phase", "max_phase", "k_width") and value > 1:
            yield replaced(layout, **{key: value // 2})


def narrower_element(params: Mapping[str, Any], layouts: Sequence[str]) -> Iterator[dict[str, Any]]:
    """``params`` with ``elem_bits`` halved (not below 8) and the legacy layouts under ``layouts``
    shrunk one step each (a layout that names its element width follows the case's)."""
    if params["elem_bits"] > 8:
        narrower = replaced(params, elem_bits=params["elem_bits"] // 2)
        for key in layouts:
            if isinstance(narrower.get(key), dict) and "element_bitwidth" in narrower[key]:
                narrower[key]["element_bitwidth"] = params["elem_bits"] // 2
        yield narrower
    for key in layouts:
        if key in params:
            for layout in legacy_shrinks(params[key]):
                yield replaced(params, **{key: layout})


def replaced(params: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy of ``params`` with some keys replaced."""
    return {**copy.deepcopy(dict(params)), **changes}


def legacy_case_shrinks(params: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A case of one legacy layout over a tensor (``layout``, ``shape``): a halved tensor dim first, then
    smaller layout parameters (fewer warps, elements, a narrower swizzle)."""
    for shape in halved_sizes(params["shape"]):
        yield replaced(params, shape=shape)
    for layout in legacy_shrinks(params["layout"]):
        yield replaced(params, layout=layout)
