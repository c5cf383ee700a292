"""Samplers of CuTe layouts (hierarchical shape:stride) for the CuTe targets.

Power-of-two shapes and strides keep CuTe's divisibility preconditions of composition, divide and product
mostly met; other shapes (3, 5, 6) appear where an operation takes any layout (coalesce, inverses)."""

from __future__ import annotations

from typing import Any

from layoutfuzz.generators.source import Source, permutation

SHAPES_POW2 = (1, 2, 4, 8)
SHAPES_ANY = (1, 2, 3, 4, 5, 6, 8)


def layout(source: Source, shapes: tuple[int, ...] = SHAPES_POW2, injective: bool = False, max_size: int = 256,
           max_cosize: int | None = None) -> dict:
    """A layout as {"shape", "stride"}: 1-4 leaves; injective ones have the strides of a column-major layout of
    the leaves in a random order, some widened by a gap of 2 or 4 (none where the offsets would reach
    ``max_cosize``); others any stride 0-32."""
    count = source.integer(1, 4)
    sizes, total = [], 1
    for _ in range(count):
        size = source.choice(shapes)
        if total * size > max_size:
            size = 1
        sizes.append(size)
        total *= size
    if injective:
        order = permutation(source, count)
        gaps = [source.choice((1, 1, 1, 2, 4)) for _ in range(count)]
        strides = _column_major(sizes, order, gaps)
        if max_cosize is not None and sum((n - 1) * d for n, d in zip(sizes, strides)) + 1 > max_cosize:
            strides = _column_major(sizes, order, [1] * count)
    else:
        strides = [source.choice((0, 1, 2, 4, 8, 16, 32, 3, 5)) for _ in range(count)]
    structure = [source.integer(0, 2) for _ in range(count)]  # the same grouping for shape and stride
    return {"shape": _group(sizes, structure), "stride": _group(strides, structure)}


def _column_major(sizes: list[int], order: list[int], gaps: list[int]) -> list[int]:
    """Strides of the leaves taken in ``order``, each after a gap factor: an injective layout."""
    strides, step = [0] * len(sizes), 1
    for k, gap in zip(order, gaps):
        step *= gap
        strides[k] = step
        step *= sizes[k]
    return strides


def _group(leaves: list[int], structure: list[int]) -> Any:
    modes, i = [], 0
    while i < len(leaves):
        if structure[i] == 0 and i + 1 < len(leaves):
            modes.append(tuple(leaves[i:i + 2]))
            i += 2
        else:
            modes.append(leaves[i])
            i += 1
    return modes[0] if len(modes) == 1 else tuple(modes)
