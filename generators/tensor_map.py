"""Samplers of ``cuTensorMapEncodeTiled`` arguments: mostly encodings the documentation allows, and a chosen share
that break exactly one documented requirement (``oracles.tensor_map``), so that both answers of the driver are tested."""

from __future__ import annotations

from typing import Any

from layoutfuzz.generators.source import Source
from layoutfuzz.oracles.tensor_map import (
    DATA_TYPE_BYTES,
    DATA_TYPE_NAMES,
    FLOAT_TYPES,
    INTERLEAVES,
    L2_PROMOTIONS,
    OOB_FILLS,
    SWIZZLE_BYTES,
    SWIZZLES,
)

BROKEN_SHARE = 8  # one encoding in BROKEN_SHARE breaks a rule on purpose
BREAKS = ("box dim 0", "box dim 257", "element stride 0", "element stride 9", "inner box bytes", "interleaved inner box bytes",
          "inner box past the swizzle",
          "address 8-byte aligned", "stride 8-byte aligned", "stride 2^40", "global dim 0", "global dim 2^32 + 1",
          "interleave below rank 3", "interleave 32B without swizzle 32B", "NaN fill of an integer type", "rank 6",
          "enum out of range")
# the enum arguments and their value counts: "enum out of range" sets one past its last value (up to 15)
ENUMS = {"data_type": len(DATA_TYPE_NAMES), "interleave": len(INTERLEAVES), "swizzle": len(SWIZZLES),
         "l2_promotion": len(L2_PROMOTIONS), "oob_fill": len(OOB_FILLS)}


def tiled_encoding(source: Source) -> dict[str, Any]:
    """An encoding's arguments as JSON params; ``global_address`` is an offset from a 256-byte aligned buffer,
    ``broken`` the rule broken on purpose ("" for none)."""
    data_type = source.choice(tuple(DATA_TYPE_BYTES))
    size = DATA_TYPE_BYTES[data_type]
    interleave = source.choice((0, 0, 0, 0, 0, 0, 1, 2))
    rank = source.integer(3 if interleave else 1, 5)
    swizzle = 1 if interleave == 2 else source.choice(tuple(range(7)))
    span = SWIZZLE_BYTES[swizzle] if interleave == 0 and swizzle else 256 * size
    inner = max(1, source.integer(1, max(1, min(span, 256 * size) // 16)) * 16 // size)  # a row of whole 16-byte units
    box = [inner] + [source.integer(1, source.choice((4, 16, 256))) for _ in range(rank - 1)]
    element_strides = [source.choice((1, 1, 1, 1, 2, 3, 4, 5, 6, 7, 8)) for _ in range(rank)]
    dims = [max(1, b * source.integer(1, 4) - source.integer(0, b - 1)) for b in box]  # mostly about a box's size
    if source.integer(0, 3) == 0:  # now and then a large dimension, up to 2^32
        dims[source.integer(0, rank - 1)] = 1 << source.integer(16, 32)
    align = 32 if interleave == 2 else 16
    strides, pitch = [], -(-dims[0] * size // align) * align + align * source.choice((0, 0, 0, 1, 4))
    for d in dims[1:]:
        strides.append(pitch)
        pitch = pitch * d + align * source.choice((0, 0, 1))
    if any(s >= 1 << 40 for s in strides):  # large dims stacked past the stride limit: packed rows from the start
        strides = [align * (k + 1) for k in range(rank - 1)]
    params = {"data_type": data_type, "global_address": align * source.integer(0, 15), "global_dims": dims,
              "global_strides": strides, "box_dims": box, "element_strides": element_strides, "interleave": interleave,
              "swizzle": swizzle, "l2_promotion": source.integer(0, 3),
              "oob_fill": source.choice((0, 1)) if data_type in FLOAT_TYPES else 0, "broken": ""}
    if source.integer(1, BROKEN_SHARE) == 1:
        params["broken"] = source.choice(BREAKS)
        _break(params, params["broken"], source)
    return params


def _break(p: dict[str, Any], rule: str, source: Source) -> None:
    """Breaks one documented requirement of ``p`` (the others may break with it: rank 6 is also a sixth box dim)."""
    last = len(p["box_dims"]) - 1
    if rule.startswith("stride") and not p["global_strides"]:  # rank 1 has no stride to break
        rule = p["broken"] = "address 8-byte aligned"
    if rule == "interleaved inner box bytes" and not p["interleave"]:  # only an interleaved encoding can break it
        rule = p["broken"] = "inner box bytes"
    if rule == "box dim 0":
        p["box_dims"][source.integer(0, last)] = 0
    elif rule == "box dim 257":
        p["box_dims"][source.integer(0, last)] = 257
    elif rule == "element stride 0":
        p["element_strides"][source.integer(0, last)] = 0
    elif rule == "element stride 9":
        p["element_strides"][source.integer(0, last)] = 9
    elif rule == "inner box bytes":  # an inner row that is not whole 16-byte units (one element less, or more)
        size = DATA_TYPE_BYTES[p["data_type"]]
        p["interleave"], p["swizzle"] = 0, 0 if p["interleave"] == 2 else p["swizzle"]
        p["box_dims"][0] = 16 // size + source.choice((-1, 1))  # 8 bytes and less, or 8 bytes and more, than 16
    elif rule == "interleaved inner box bytes":  # the observed rule (oracles.tensor_map): interleaved, and not 16-byte units
        p["box_dims"][0] = 16 // DATA_TYPE_BYTES[p["data_type"]] + source.choice((-1, 1))
    elif rule == "inner box past the swizzle":
        size = DATA_TYPE_BYTES[p["data_type"]]
        p["interleave"], p["swizzle"] = 0, source.integer(1, 6)
        p["box_dims"][0] = min(256, (SWIZZLE_BYTES[p["swizzle"]] + 16) // size)
    elif rule == "address 8-byte aligned":
        p["global_address"] += 8
    elif rule == "stride 8-byte aligned":
        p["global_strides"][source.integer(0, len(p["global_strides"]) - 1)] += 8
    elif rule == "stride 2^40":
        p["global_strides"][-1] = 1 << 40
    elif rule == "global dim 0":
        p["global_dims"][source.integer(0, last)] = 0
    elif rule == "global dim 2^32 + 1":
        p["global_dims"][source.integer(0, last)] = (1 << 32) + 1
    elif rule == "interleave below rank 3":
        keep = source.integer(1, 2)
        for key in ("global_dims", "box_dims", "element_strides"):
            p[key] = p[key][:keep]
        p["global_strides"] = p["global_strides"][:keep - 1]
        p["interleave"] = source.integer(1, 2)
        p["swizzle"] = 1 if p["interleave"] == 2 else p["swizzle"]
    elif rule == "interleave 32B without swizzle 32B":
        if len(p["global_dims"]) < 3:
            rule = "rank 6"
        else:
            p["interleave"], p["swizzle"] = 2, source.choice((0, 2, 3))
            p["global_address"] -= p["global_address"] % 32
            p["global_strides"] = [-(-s // 32) * 32 for s in p["global_strides"]]
    elif rule == "NaN fill of an integer type":
        p["data_type"], p["oob_fill"] = source.choice((0, 1, 2, 3, 4, 5)), 1
        size = DATA_TYPE_BYTES[p["data_type"]]
        if p["interleave"] == 0:  # the other rules kept: the inner row of whole 16-byte units within the swizzle
            span = SWIZZLE_BYTES[p["swizzle"]] or 256 * size
            p["box_dims"][0] = max(16 // size, min(256, span // size))
            p["global_dims"][0] = max(p["global_dims"][0], p["box_dims"][0])
        if p["global_strides"]:
            p["global_strides"] = [s * 8 for s in p["global_strides"]]  # room for the wider element
    if rule == "enum out of range":
        key = source.choice(tuple(ENUMS))
        p[key] = source.choice((ENUMS[key], 15))  # one past its last value, or the largest the validator takes
    if rule == "rank 6":
        p["broken"] = "rank 6"
        for key in ("global_dims", "box_dims", "element_strides"):
            p[key] = (p[key] + [1] * 6)[:6]
        p["global_strides"] = (p["global_strides"] + [p["global_strides"][-1] if p["global_strides"] else 16] * 5)[:5]
