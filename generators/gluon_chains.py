"""Cases of ``triton.layout_chains``: up to three layout-sensitive Gluon operations in a row on one tile, each taking
the layout Gluon inferred for the one before (a reduction's slice, a permutation's, a reshape's, a join's), so that
layouts are built from layouts the way a kernel builds them: a permute of a reduction, a reshape of a transposed
tile, a split of a join of a permute, a conversion into any valid layout of whatever shape the chain reached.

A chain is a grammar with a depth bound of three over these steps, each legal on the shape it meets (Gluon's tensor
dims are powers of two, rank 1 to 3 here; ``expand_dims`` takes only a layout sliced on its axis, so a reduction
expanded back is one step, ``keep``):

- ``sum``/``max``/``keep``/``center``/``cumsum`` over an axis (``keep``: the sum expanded back; ``center``: the
  tile less its maximum along the axis, broadcast back; ``cumsum``: a running sum, ``associative_scan`` with an add
  combine, which every release has);
- ``trans`` (the dims reversed), ``rot`` (a rank-3 rotation);
- ``flat`` (a reshape to 1-D), ``unflat`` (the last dim cut in two: ``[.., N] -> [.., 2, N / 2]``);
- ``join`` (with ``x + 1``: a last dim of 2), ``split`` (of a last dim of 2, recombined as ``2 a + b``);
- ``convert`` into a drawn layout of the chain's shape there (one a chain).
"""

from __future__ import annotations

from math import prod
from typing import Any

from layoutfuzz.generators import gluon_layouts, gluon_ops
from layoutfuzz.generators.source import Source, at_edge

STEPS = ("sum", "max", "keep", "center", "cumsum", "trans", "rot", "flat", "unflat", "join", "split", "convert")
AXIS_STEPS = ("sum", "max", "keep", "center", "cumsum")
DEPTHS = (1, 2, 3)  # one step is the reduced form of a chain (the shrinks end there); drawn a fifth of the time
MAX_ELEMENTS = 1 << 12  # a tile of up to 4,096 elements (a join doubles it): compiled in seconds
CONVERT_KINDS = {1: gluon_ops.KINDS_1D, 2: gluon_ops.KINDS, 3: gluon_ops.KINDS_3D}


def legal(step: str, axis: int, shape: list[int]) -> bool:
    """Whether Gluon takes ``step`` over ``axis`` on a tensor of ``shape`` (rank 1 to 3 before and after)."""
    rank = len(shape)
    if step in AXIS_STEPS:
        return axis < rank and (rank >= 2 or step in ("cumsum",))
    if step == "trans":
        return rank >= 2
    if step == "rot":
        return rank == 3
    if step == "flat":
        return rank >= 2
    if step == "unflat":
        return rank <= 2 and shape[-1] >= 2
    if step == "join":
        return rank <= 2
    if step == "split":
        return rank >= 2 and shape[-1] == 2
    return step == "convert"


def step_shape(step: str, axis: int, shape: list[int]) -> list[int]:
    """The shape after ``step`` (which ``legal`` allows)."""
    if step in ("sum", "max"):
        return [d for i, d in enumerate(shape) if i != axis]
    if step == "keep":
        return [1 if i == axis else d for i, d in enumerate(shape)]
    if step == "trans":
        return shape[::-1]
    if step == "rot":
        return [shape[1], shape[2], shape[0]]
    if step == "flat":
        return [prod(shape)]
    if step == "unflat":
        return [*shape[:-1], 2, shape[-1] // 2]
    if step == "join":
        return [*shape, 2]
    if step == "split":
        return shape[:-1]
    return list(shape)  # center, cumsum, convert


def shapes(steps: list[list[Any]], shape: list[int]) -> list[list[int]]:
    """The shape before each step and after the last."""
    out = [list(shape)]
    for step, axis in steps:
        out.append(step_shape(step, axis, out[-1]))
    return out


def chain_case(source: Source, valid: Any) -> dict[str, Any]:
    """{"op": "chain", "steps": [[step, axis], ...], "layout", "shape", "num_warps", "edge"} and, where a step
    converts, "convert_layout" for the shape it meets: the first layout drawn as ``triton.layout_ops`` draws it
    (rank 2 or 3, every distributed kind, CGA layouts of 1 to 8 CTAs), a quarter at the edges."""
    rank = source.choice((2, 2, 3))
    for _ in range(16):
        op = "sum"  # the drawn first layout is any valid one; the steps are drawn below
        first = gluon_ops.rank3_case(source, valid, op) if rank == 3 else gluon_ops.case(source, valid, op)
        if prod(first["shape"]) > MAX_ELEMENTS:
            continue
        steps = _steps(source, first["shape"])
        if steps is None:
            continue
        case = {"op": "chain", "steps": steps, "layout": first["layout"], "shape": first["shape"],
                "num_warps": first["num_warps"], "edge": first["edge"] or at_edge(source)}
        converts = [i for i, (step, _) in enumerate(steps) if step == "convert"]
        if converts:
            met = shapes(steps, first["shape"])[converts[0]]
            layout = _convert_layout(source, met, case["num_warps"], case["edge"], first["layout"], valid)
            if layout is None:
                continue
            case["convert_layout"] = layout
        return case
    return {"op": "chain", "steps": [["trans", 0], ["flat", 0]], "layout": first["layout"], "shape": first["shape"],
            "num_warps": first["num_warps"], "edge": False}


def _steps(source: Source, shape: list[int]) -> list[list[Any]] | None:
    steps: list[list[Any]] = []
    for _ in range(source.choice((1, 2, 2, 3, 3))):
        options = [s for s in STEPS if s != "convert" or all(t != "convert" for t, _ in steps)]
        for _ in range(8):
            step = "split" if legal("split", 0, shape) and source.integer(0, 1) else source.choice(options)
            axis = source.integer(0, max(0, len(shape) - 1)) if step in AXIS_STEPS else 0
            if legal(step, axis, shape):
                break
        else:
            return None
        steps.append([step, axis])
        shape = step_shape(step, axis, shape)
    return steps


def _convert_layout(source: Source, shape: list[int], num_warps: int, edge: bool, first: dict[str, Any],
                    valid: Any) -> dict[str, Any] | None:
    """A layout of ``shape``'s rank, of as many warps and CTAs as the chain's first layout, valid for ``shape``."""
    rank, ctas = len(shape), gluon_ops.cta_bits(first)
    for _ in range(16):
        kind = source.choice(CONVERT_KINDS[rank])
        if kind == "distributed_linear":
            layout = gluon_ops.linear_layout(source, shape, num_warps, ctas)
        else:
            layout = gluon_layouts.draw(source, kind, rank, num_warps, edge, depth=2)
        if (gluon_layouts.layout_rank(layout) == rank and not gluon_ops.is_amd(layout)
                and gluon_ops.cta_bits(layout) == ctas and gluon_ops.warps_of(layout, num_warps) == num_warps
                and valid(layout, shape)):
            return layout
    return None
