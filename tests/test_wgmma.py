"""oracles.wgmma against every number in seeds 000, 002 and 003."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutfuzz.oracles.cute import ComposedLayout, Layout, Swizzle, parse_layout
from layoutfuzz.oracles.linear_layout import LayoutError
from layoutfuzz.oracles.wgmma import (
    CanonicalLayout,
    Major,
    MatrixDescriptor,
    SwizzleMode,
    descriptor_base_offset,
    make_gmma_desc,
    matrix_descriptor_encode,
    swizzle_atom,
)

# seed 000 / 003 "Canonical Layouts" examples: (major, mode, bits, exact layout, T, m, k, LBO, SBO, LBO enc, SBO enc)
EXAMPLES = [
    ("k", SwizzleMode.NONE, 32, "((8,2),(4,4)):((4,32),(1,64))", 4, 2, 2, 64 * 4, 32 * 4, 16, 8),
    ("k", SwizzleMode.B32, 32, "((8,2),(4,4)):((8,64),(1,4))", 4, 2, 2, None, 64 * 4, 1, 16),
    ("mn", SwizzleMode.NONE, 16, "((8,1,2),(8,2)):((1,8,64),(8,128))", 8, 2, 2, 128 * 2, 64 * 2, 16, 8),
    ("mn", SwizzleMode.B32, 16, "((8,2,2),(8,2)):((1,8,128),(16,256))", 8, 2, 2, 128 * 2, 256 * 2, 16, 32),
    ("mn", SwizzleMode.B64, 16, "((8,4,2),(8,2)):((1,8,256),(32,512))", 8, 2, 2, 256 * 2, 512 * 2, 32, 64),
]


@pytest.mark.parametrize("major, mode, bits, exact, T, m, k, lbo, sbo, lbo_enc, sbo_enc", EXAMPLES)
def test_canonical_layout_examples(major, mode, bits, exact, T, m, k, lbo, sbo, lbo_enc, sbo_enc):
    layout = CanonicalLayout(major, mode, bits, m, k, lbo or 0, sbo)
    assert layout.T == T
    assert layout.layout() == parse_layout(exact)
    assert str(layout.layout()) == exact
    desc = layout.descriptor()
    assert desc.leading_byte_offset == lbo_enc  # "1 (assumed)" where LBO is NA
    assert desc.stride_byte_offset == sbo_enc
    assert desc.swizzle is mode
    # the swizzle of the table's last column: Swizzle<0..3, 4, 3> on bytes
    assert layout.composed().swizzle == Swizzle({0: 0, 3: 1, 2: 2, 1: 3}[int(mode)], 4, 3)


def test_descriptor_field_positions_and_encode():
    desc = MatrixDescriptor(0x3FFF, 0, 0)
    assert desc.encode() == 0x3FFF  # bits 13-0
    assert MatrixDescriptor(0, 0x3FFF, 0).encode() == 0x3FFF << 16  # bits 29-16
    assert MatrixDescriptor(0, 0, 0x3FFF).encode() == 0x3FFF << 32  # bits 45-32
    assert MatrixDescriptor(0, 0, 0, 7).encode() == 7 << 49  # bits 51-49
    assert MatrixDescriptor(0, 0, 0, 0, SwizzleMode.B32).encode() == 3 << 62  # bits 63-62
    assert [int(m) for m in (SwizzleMode.NONE, SwizzleMode.B128, SwizzleMode.B64, SwizzleMode.B32)] == [0, 1, 2, 3]
    assert matrix_descriptor_encode(0x12345) == (0x12345 & 0x3FFFF) >> 4
    assert matrix_descriptor_encode(0x40000 + 0x400) == 0x40  # only 18 address bits survive
    with pytest.raises(LayoutError):
        MatrixDescriptor.decode(1 << 14)  # a reserved bit


@settings(max_examples=200, deadline=None)
@given(st.integers(0, (1 << 14) - 1), st.integers(0, (1 << 14) - 1), st.integers(0, (1 << 14) - 1), st.integers(0, 7), st.sampled_from(list(SwizzleMode)))
def test_descriptor_decode_inverts_encode(start, lbo, sbo, base, mode):
    desc = MatrixDescriptor(start, lbo, sbo, base, mode)
    assert MatrixDescriptor.decode(desc.encode()) == desc


def test_base_offset_rule():
    # 0 on the 1024/512/256-byte boundary, else (addr >> 7) & 7 (Matrix Descriptor Format)
    assert descriptor_base_offset(0x400, SwizzleMode.B128) == 0
    assert descriptor_base_offset(0x480, SwizzleMode.B128) == 1
    assert descriptor_base_offset(0x780, SwizzleMode.B128) == 7
    assert descriptor_base_offset(0x200, SwizzleMode.B64) == 0
    assert descriptor_base_offset(0x300, SwizzleMode.B64) == 6  # (0x300 >> 7) & 7
    assert descriptor_base_offset(0x100, SwizzleMode.B32) == 0
    assert descriptor_base_offset(0x180, SwizzleMode.B32) == 3
    assert descriptor_base_offset(0x480, SwizzleMode.NONE) == 0


# seed 002: full 128x64 half tiles (the layouts printed before make_gmma_desc) per major/mode
FULL_TILES = {
    ("k", "none"): (Swizzle(0, 4, 3), "((_8,_16),(_8,_8)):((_8,_64),(_1,_1024))"),
    ("k", "32B"): (Swizzle(1, 4, 3), "((_8,_16),(_16,_4)):((_16,_128),(_1,_2048))"),
    ("k", "64B"): (Swizzle(2, 4, 3), "((_8,_16),(_32,_2)):((_32,_256),(_1,_4096))"),
    ("k", "128B"): (Swizzle(3, 4, 3), "((_8,_16),(_64,_1)):((_64,_512),(_1,_0))"),
    ("mn", "none"): (Swizzle(0, 4, 3), "((_8,_16),(_8,_8)):((_1,_64),(_8,_1024))"),
    ("mn", "32B"): (Swizzle(1, 4, 3), "((_16,_8),(_8,_8)):((_1,_128),(_16,_1024))"),
    ("mn", "64B"): (Swizzle(2, 4, 3), "((_32,_4),(_8,_8)):((_1,_256),(_32,_1024))"),
    ("mn", "128B"): (Swizzle(3, 4, 3), "((_64,_2),(_8,_8)):((_1,_512),(_64,_1024))"),
}
PRINTED = json.loads((Path(__file__).parent / "data" / "seed002_descriptors.json").read_text())["descriptors"]


@pytest.mark.parametrize("major, mode", sorted(FULL_TILES))
def test_make_gmma_desc_reproduces_every_printed_descriptor(major, mode):
    swizzle, text = FULL_TILES[(major, mode)]
    full = parse_layout(text)
    inner0, inner1 = full.mode(0).split(64)[0], full.mode(1).split(16)[0]  # one 64x16 wgmma block
    block = Layout((inner0.shape, inner1.shape), (inner0.stride, inner1.stride))
    got = []
    for j in range(4):  # printed K block by K block, the two M blocks in each
        for i in range(2):
            start = 0x400 + 2 * full((64 * i, 16 * j))
            desc = make_gmma_desc(major, ComposedLayout(swizzle, start, block, 16), 16)
            got.append(f"{desc.encode():#018x}")
    assert got == PRINTED[f"{major}/{mode}"]


def test_make_gmma_desc_rejects_non_canonical_layouts():
    with pytest.raises(LayoutError):
        make_gmma_desc("k", ComposedLayout(Swizzle(3, 4, 2), 0, parse_layout("(_64,_16):(_64,_1)"), 16), 16)
    with pytest.raises(LayoutError):  # K-major atoms need stride<0,0> == W
        make_gmma_desc("k", ComposedLayout(Swizzle(3, 4, 3), 0, parse_layout("(_64,_16):(_32,_1)"), 16), 16)


@pytest.mark.parametrize("mode", list(SwizzleMode))
@pytest.mark.parametrize("major", list(Major))
def test_table_38_atoms(major, mode):
    # Table 38: atom shapes in 128-bit elements (MN: W x 8, K: 8 x W), times T on the leading dim
    w = mode.width
    for bits in (8, 16, 32, 64):
        T = 128 // bits
        assert swizzle_atom(major, mode, bits) == ((w * T, 8) if major is Major.MN else (8, w * T))
    # one atom of the canonical layout fills W * 128 contiguous bytes exactly once
    rows, cols = swizzle_atom(major, mode, 16)
    k = max(1, w // 2) if major is Major.K else 1  # K-major repeats 2 units per k
    layout = CanonicalLayout(major, mode, 16, 1, k, lbo=4096, sbo=8192, start=0)
    addresses = {layout.smem_address(r, c) // 2 for r in range(rows) for c in range(cols)}
    assert addresses == set(range(rows * cols))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([SwizzleMode.B32, SwizzleMode.B64, SwizzleMode.B128]), st.sampled_from([8, 16, 32, 64]),
       st.integers(1, 4), st.integers(0, 0x3FFF), st.integers(1, 64))
def test_swizzled_k_major_ignores_lbo(mode, bits, m, lbo_field, sbo_units):
    # "Swizzled layouts: not used, assumed to be 1": the map is the same for every LBO
    k = 1
    ref = CanonicalLayout("k", mode, bits, m, k, 16, sbo_units * 128 * mode.width // 8 * 8, 0x400)
    other = CanonicalLayout("k", mode, bits, m, k, lbo_field * 16, ref.sbo, 0x400)
    assert ref.addresses() == other.addresses()
    assert other.descriptor().leading_byte_offset == 1


def test_affine_form_matches_the_map_when_bits_do_not_carry():
    layout = CanonicalLayout("k", SwizzleMode.B128, 16, 8, 1, 0, 1024, start=0x2000)
    linear, constant = layout.affine_layout()
    table = linear.table()
    rows, _ = layout.shape
    assert all(int(table[r | c * rows]) ^ constant == layout.smem_address(r, c) for r in range(rows) for c in range(16))
    with pytest.raises(LayoutError):  # SBO 0x180 carries into the row bits
        CanonicalLayout("k", SwizzleMode.NONE, 16, 4, 1, 128, 0x180).affine_layout()


TINY_PROBE = ("from layoutfuzz.gpu.device import cached_cubin; "
              "cached_cubin('extern \"C\" __global__ void k(int *p) { p[0] = 1; }', 'tiny_probe.cu')")


def test_the_probe_is_built_before_the_workers_in_a_process_of_its_own(tmp_path, monkeypatch):
    # the fork server runs warm_up: NVRTC through cuda.core initialises the CUDA driver, and a worker forked from a
    # process that has cannot use the GPU; so the build must happen in a child, and leave its cubin in the cache
    pytest.importorskip("cuda.core", reason="NVRTC comes with cuda.core (the cuda extra)")
    from layoutfuzz.gpu import device
    from layoutfuzz.gpu.targets import wgmma_descriptor

    def in_this_process(*args, **kwargs):
        raise AssertionError("the probe was built in the fork server's own process")

    monkeypatch.setenv("LAYOUTFUZZ_CACHE", str(tmp_path))
    monkeypatch.setattr(device, "cached_cubin", in_this_process)
    monkeypatch.setattr(wgmma_descriptor, "BUILD_PROBE", TINY_PROBE)
    wgmma_descriptor.WgmmaDescriptor().warm_up()
    assert [p.name.split("-")[0] for p in (tmp_path / "cubins").glob("*.cubin")] == ["tiny_probe"]
