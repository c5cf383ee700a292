"""Samplers of wgmma canonical layouts and descriptors over the whole valid field space.

Covers what CUTLASS, DeepGEMM and ThunderKittens never produce: pattern starts off the
1024/512/256-byte repeat (base offsets 1-7), start addresses inside a pattern, any LBO where
PTX says it is ignored, repeat counts m and k, and 8- to 64-bit elements.
"""

from __future__ import annotations

from layoutfuzz.generators.source import Source
from layoutfuzz.oracles.wgmma import (
    ELEMENT_BITS,
    CanonicalLayout,
    Major,
    MatrixDescriptor,
    SwizzleMode,
    descriptor_base_offset,
)
from layoutfuzz.oracles.wgmma_addresses import highest_address

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
# where the window may sit: a block's 227 KiB on sm_90, less the window, the probe's 4 KiB identity and 1 KiB alignment
MAX_WINDOW_OFFSET = 227 * 1024 - PROBE_WINDOW - 4096 - 1024
LBO_FOLKLORE = (0, 1, 16)
PROBE_DTYPES = ("f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8")  # what CUTLASS, DeepGEMM, ThunderKittens and JAX write where LBO is ignored


def device_case(source: Source) -> dict:
    """One operand of one m64nNk{8,16,32} wgmma, as the GPU probe runs it: element type, which operand, major-ness,
    swizzle, N, LBO/SBO, a start address (on or off the pattern repeat), the LBO field where PTX
    ignores it (0, 1, 16 or random) and the base-offset field (the PTX value, 0 as the peers write
    it, or random)."""
    dtype = source.choice(PROBE_DTYPES)
    bits = 32 if dtype == "tf32" else 16 if dtype in ("f16", "bf16") else 8
    operand = source.choice(("A", "B"))
    major = source.choice(list(Major)) if bits == 16 else Major.K  # only 16-bit operands may be MN-major
    mode = source.choice(list(SwizzleMode))
    W, T = mode.width, 128 // bits
    # A under test is seen through D = A x I (N columns): N must cover K (32 for 8-bit types)
    n = (16 if bits >= 16 else 64) if operand == "A" else source.choice((16, 64))
    mn = 64 if operand == "A" else n
    if major is Major.MN and mn < T * W:
        mode = SwizzleMode.B32 if mn >= 16 else SwizzleMode.NONE
        W = mode.width
    m, k = (mn // 8, 1) if major is Major.K else (mn // (T * W), 2)
    lbo, sbo = strides(source, major, mode, m, k, any_ignored_lbo=False)
    repeat = mode.repeat_bytes or 128
    start = repeat * source.integer(0, 3) + 128 * source.integer(0, 7) * (mode is not SwizzleMode.NONE)
    if source.integer(0, 3) == 0:
        start += 16 * source.integer(1, 7)  # inside a pattern row
    layout = CanonicalLayout(major, mode, bits, m, k, lbo, sbo, start)
    if highest_address(layout) + 16 > PROBE_WINDOW:
        layout = CanonicalLayout(major, mode, bits, m, k, lbo, sbo, 0)
    deeper = 1024 * source.integer(0, PROBE_WINDOW // 1024 - 1)  # anywhere in the window where the operand still fits
    if highest_address(layout) + deeper + 16 <= PROBE_WINDOW:
        layout = CanonicalLayout(major, mode, bits, m, k, lbo, sbo, layout.start + deeper)
    lbo_field = None
    if major is Major.K and mode is not SwizzleMode.NONE:
        lbo_field = source.choice((*LBO_FOLKLORE, source.integer(2, (1 << 14) - 1)))
    base_choice = source.choice(("ptx", "ptx", "zero", "random"))
    # one window in four sits anywhere in the block's shared memory (the start-address field over its range)
    window_offset = 1024 * source.integer(0, MAX_WINDOW_OFFSET // 1024) if source.integer(0, 3) == 0 else 0
    return {
        "dtype": dtype, "operand": operand, "major": major.value, "swizzle": mode.name, "n": n, "m": m, "k": k,
        "lbo": layout.lbo, "sbo": layout.sbo, "start": layout.start, "lbo_field": lbo_field, "base_offset": base_choice
        if base_choice != "random" else source.integer(0, 7), "window_offset": window_offset,
    }
