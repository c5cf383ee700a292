"""Samplers of wgmma canonical layouts and descriptors over the whole valid field space.

Covers what CUTLASS, DeepGEMM and ThunderKittens never produce: pattern starts off the
1024/512/256-byte repeat (base offsets 1-7), start addresses inside a pattern, any LBO where
PTX says it is ignored, repeat counts m and k, and 8- to 64-bit elements.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from layoutfuzz.generators.source import Source, at_edge
from layoutfuzz.oracles.wgmma import (
    ELEMENT_BITS,
    WGMMA_N,
    CanonicalLayout,
    Major,
    MatrixDescriptor,
    SwizzleMode,
    descriptor_base_offset,
)
from layoutfuzz.oracles.wgmma_addresses import canonical_addresses, highest_address

SMEM_BYTES = 1 << 18  # the 18 address bits a descriptor can name


def canonical_layout(source: Source) -> CanonicalLayout:
    """A canonical layout (any major-ness, swizzle, element width, m, k, LBO, SBO, start)."""
    major = source.choice(list(Major))
    mode = source.choice(list(SwizzleMode))
    bits = source.choice([b for b in ELEMENT_BITS if b >= 8])
    W = mode.width
    m = 1 << source.integer(0, 3)
    # K-major swizzled rows hold W units; 2k units per row must fit (k <= W/2)
    k = 1 << source.integer(0, max(0, (W // 2).bit_length() - 1)) if major is Major.K and mode is not SwizzleMode.NONE else 1 << source.integer(0, 2)
    lbo, sbo = strides(source, major, mode, m, k, any_ignored_lbo=True)
    # start: pattern starts on or off the repeat (base offsets 1-7), possibly inside a pattern
    repeat = mode.repeat_bytes or 128
    pattern_start = repeat * source.integer(0, 15) + 128 * source.integer(0, 7) * (mode is not SwizzleMode.NONE)
    inside = 16 * source.integer(0, 7) if source.integer(0, 3) == 0 else 0
    start = (pattern_start + inside) % (SMEM_BYTES // 2)
    base_offset = descriptor_base_offset(pattern_start % (SMEM_BYTES // 2), mode)  # PTX: phase 0 at the pattern start
    return CanonicalLayout(major, mode, bits, m, k, lbo, sbo, start, base_offset)


def strides(source: Source, major: Major, mode: SwizzleMode, m: int, k: int, any_ignored_lbo: bool) -> tuple[int, int]:
    """(LBO, SBO) in bytes that keep the m x k repeats apart, possibly with gaps; where PTX ignores
    LBO (swizzled K-major) it is any 16-byte multiple, or 16 (the field the descriptor then gets is
    the caller's business)."""
    atom = 128 * mode.width  # bytes of one 8 x W-unit swizzle atom (128 bytes of core matrix when W = 1)
    stretch = source.integer(1, 2)  # the outer stride may leave gaps
    if major is Major.K and mode is not SwizzleMode.NONE:  # ((8,m),(T,2k)):((WT,SBO),(1,T))
        lbo = 16 * source.integer(0, (1 << 14) - 1) if any_ignored_lbo else 16  # "not used, assumed to be 1"
        return lbo, atom * stretch
    # one stride steps between neighbouring atoms, the other over all of them
    if major is Major.K:  # none: LBO between the 2k K units, SBO between the m row groups
        counts = {"lbo": 2 * k, "sbo": m}
    elif mode is SwizzleMode.NONE:  # MN none: SBO between MN repeats, LBO between K repeats
        counts = {"sbo": m, "lbo": k}
    else:  # MN swizzled: LBO between MN repeats, SBO between K repeats
        counts = {"lbo": m, "sbo": k}
    inner = source.choice(sorted(counts))
    outer = "sbo" if inner == "lbo" else "lbo"
    result = {inner: atom, outer: atom * counts[inner] * stretch}
    return result["lbo"], result["sbo"]


def descriptor(source: Source) -> MatrixDescriptor:
    """Any 64-bit descriptor with reserved bits clear (all field values)."""
    return MatrixDescriptor(
        source.integer(0, (1 << 14) - 1), source.integer(0, (1 << 14) - 1), source.integer(0, (1 << 14) - 1),
        source.integer(0, 7), source.choice(list(SwizzleMode)),
    )


PROBE_WINDOW = 32 * 1024  # bytes of shared memory the operand under test may touch
# a block's 227 KiB on sm_90 less the probe's 4 KiB identity and 1 KiB alignment: the widest window, and where windows may sit
WIDE_WINDOW = 227 * 1024 - 4096 - 1024
PROBE_WINDOWS = (PROBE_WINDOW, 2 * PROBE_WINDOW, 4 * PROBE_WINDOW, WIDE_WINDOW)  # few sizes: a digit plan each
LBO_FOLKLORE = (0, 1, 16)
MAJORS, SWIZZLE_MODES = tuple(Major), tuple(SwizzleMode)  # in definition order, as list(Major) gives them: the same draws
PROBE_DTYPES = ("f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8")  # what CUTLASS, DeepGEMM, ThunderKittens and JAX write where LBO is ignored
FIELD_MAX = (1 << 14) - 1  # a 14-bit descriptor field, in 16-byte units


def device_case(source: Source) -> dict:
    """One operand of one m64nNk{8,16,32} wgmma, as the GPU probe runs it: element type, which operand, major-ness,
    swizzle, N (every N PTX allows the type, where B is under test), LBO/SBO (one case in eight with a stride over
    most of shared memory), a start address (on or off the pattern repeat), the LBO field where PTX ignores it
    (0, 1, 16 or random) and the base-offset field (the PTX value, 0 as the peers write it, or random). At the edges
    (one case in four) the operand sits as far into shared memory as it fits, or strides as far as it may."""
    edge = source.choice((None, "far start", "far stride")) if at_edge(source) else None
    dtype = source.choice(PROBE_DTYPES)
    bits = 32 if dtype == "tf32" else 16 if dtype in ("f16", "bf16") else 8
    operand = source.choice(("A", "B"))
    major = source.choice(MAJORS) if bits == 16 else Major.K  # only 16-bit operands may be MN-major
    mode = source.choice(SWIZZLE_MODES)
    T = 128 // bits
    # A under test is seen through D = A x I (N columns): N must cover K (32 for 8-bit types)
    n = (16 if bits >= 16 else 64) if operand == "A" else source.choice(WGMMA_N[dtype])
    mn = 64 if operand == "A" else n
    while major is Major.MN and mn % (T * mode.width):  # MN-major: whole swizzle atoms (T x W elements) along MN
        mode = SWIZZLE_NARROWER[mode]
    W = mode.width
    m, k = (mn // 8, 1) if major is Major.K else (mn // (T * W), 2)
    lbo, sbo = strides(source, major, mode, m, k, any_ignored_lbo=False)
    wide = source.integer(0, 7) == 0 or edge is not None
    if wide:
        lbo, sbo = wide_strides(source, CanonicalLayout(major, mode, bits, m, k, lbo, sbo), WIDE_WINDOW,
                                farthest=edge == "far stride")
    # the smallest window that holds the operand (wide N and gaps between repeats may need more than 32 KiB)
    reach = highest_address(CanonicalLayout(major, mode, bits, m, k, lbo, sbo)) + 16
    window = WIDE_WINDOW if wide else next(w for w in PROBE_WINDOWS if w >= reach)
    repeat = mode.repeat_bytes or 128
    start = repeat * source.integer(0, 3) + 128 * source.integer(0, 7) * (mode is not SwizzleMode.NONE)
    if source.integer(0, 3) == 0:
        start += 16 * source.integer(1, 7)  # inside a pattern row
    layout = CanonicalLayout(major, mode, bits, m, k, lbo, sbo, start)
    if highest_address(layout) + 16 > window:
        layout = CanonicalLayout(major, mode, bits, m, k, lbo, sbo, 0)
    deeper = 1024 * source.integer(0, window // 1024 - 1)  # anywhere in the window where the operand still fits
    if edge == "far start":
        deeper = (window - highest_address(layout) - 16) // 1024 * 1024
    if highest_address(layout) + deeper + 16 <= window:
        layout = CanonicalLayout(major, mode, bits, m, k, lbo, sbo, layout.start + deeper)
    lbo_field = None
    if major is Major.K and mode is not SwizzleMode.NONE:
        lbo_field = source.choice((*LBO_FOLKLORE, source.integer(2, (1 << 14) - 1)))
    base_choice = source.choice(("ptx", "ptx", "zero", "random"))
    # one window in four sits anywhere in the block's shared memory (the start-address field over its range)
    window_offset = 1024 * source.integer(0, (WIDE_WINDOW - window) // 1024) if source.integer(0, 3) == 0 else 0
    return {
        "dtype": dtype, "operand": operand, "major": major.value, "swizzle": mode.name, "n": n, "m": m, "k": k,
        "lbo": layout.lbo, "sbo": layout.sbo, "start": layout.start, "lbo_field": lbo_field, "base_offset": base_choice
        if base_choice != "random" else source.integer(0, 7), "window_offset": window_offset,
        "window": window,
    }


def _injective(layout: CanonicalLayout) -> bool:
    """No two elements of the operand at one address."""
    addresses = canonical_addresses([layout])[0]
    return np.unique(addresses).size == addresses.size


SWIZZLE_NARROWER = {SwizzleMode.B128: SwizzleMode.B64, SwizzleMode.B64: SwizzleMode.B32, SwizzleMode.B32: SwizzleMode.NONE}


def wide_strides(source: Source, layout: CanonicalLayout, window: int, farthest: bool = False) -> tuple[int, int]:
    """(LBO, SBO) of ``layout`` with one stride the descriptor uses (SBO, or LBO where PTX reads it) drawn anywhere
    from its own value up to what keeps the operand inside ``window`` (``farthest``: that largest value); a stride
    the layout steps over once at most (a single repeat) is any 14-bit field."""
    uses_lbo = not (layout.major is Major.K and layout.swizzle is not SwizzleMode.NONE)
    name = source.choice(("lbo", "sbo")) if uses_lbo else "sbo"

    def highest(stride: int) -> int:
        return highest_address(replace(layout, **{name: stride}))

    low = getattr(layout, name) // 16
    base, steps = highest(0), (highest(16 * 1024) - highest(0)) // (16 * 1024)  # the stride's repeats less one
    top = FIELD_MAX if steps == 0 else min(FIELD_MAX, (window - 16 - 112 - base) // (16 * steps))  # 112: a swizzle's reach
    top = max(low, top)
    range_ = source.integer(low // 1024, top // 1024)  # each 1024-unit range of the field as likely as the next
    field = top if farthest else source.integer(max(low, 1024 * range_), min(top, 1024 * range_ + 1023))
    while field > low and highest(16 * field) + 16 > window:
        field = max(low, field // 2)
    if not _injective(replace(layout, **{name: 16 * field})):  # its repeats would land on the other stride's
        field = low
    return (16 * field, layout.sbo) if name == "lbo" else (layout.lbo, 16 * field)
