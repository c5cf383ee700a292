"""The TMA driver: CPU-side parameters and kernel compilation, and (marked gpu) the hardware run."""

from __future__ import annotations

import numpy as np
import pytest

from layoutfuzz.generators.source import RandomSource
from layoutfuzz.generators.tma import MAX_BOX_BYTES, MAX_DST_OFFSET, device_box
from layoutfuzz.gpu.targets.tma_swizzle import WINDOW, TmaSwizzle, compare_windows
from layoutfuzz.oracles.tma import SwizzleMode, TiledBox
from layoutfuzz.oracles.tma_windows import FILL, box_encoding, expected_window, global_bytes


def test_box_encodings_follow_the_driver_rules():
    for i in range(300):
        box = device_box(RandomSource(f"p/{i}"))
        params = box_encoding(box)
        assert params.swizzle == box.swizzle.spec.cuda and params.rank == len(box.box_dims)
        assert all(s % 16 == 0 for s in params.global_strides)  # global strides: multiples of 16 bytes
        assert list(params.global_strides) == sorted(params.global_strides)
        assert all(1 <= b <= 256 for b in params.box_dims) and all(1 <= s <= 8 for s in params.element_strides)
        assert box.footprint_bytes <= MAX_BOX_BYTES and box.dst % 128 == 0 and box.dst < MAX_DST_OFFSET
        assert box.dst + box.footprint_bytes <= WINDOW
    assert box_encoding(TiledBox((8,), 2, (1,), SwizzleMode.B128_ATOM_64B, 0)).swizzle == 6
    with pytest.raises(ValueError):
        box_encoding(TiledBox((6,), 16, (1,), SwizzleMode.B96, 0))  # no CUDA value for 96B


def test_expected_window_of_an_unswizzled_box_is_the_global_rows():
    box = TiledBox((32, 3), 2, (1, 1), SwizzleMode.NONE, 256)
    params = box_encoding(box)
    window = expected_window(box, 1024)
    data = global_bytes(params)
    assert params.global_strides == (64,)
    assert window[256 : 256 + 192].tobytes() == data[:192].tobytes()
    assert (window[:256] == FILL).all() and (window[448:] == FILL).all()


def test_expected_window_of_a_128b_box_follows_the_table():
    box = TiledBox((64, 8), 2, (1, 1), SwizzleMode.B128, 128)  # starts on line 1: base offset 1
    window = expected_window(box, 2048)
    data = global_bytes(box_encoding(box))
    for row in range(8):
        for cell in range(8):
            phase = (1 + row) % 8
            dst = 128 + row * 128 + (cell ^ phase) * 16
            assert window[dst : dst + 16].tobytes() == data[row * 128 + cell * 16 : row * 128 + cell * 16 + 16].tobytes()


def test_narrow_rows_are_padded_to_the_swizzle_span():
    # seen on an H200: a 48-byte inner row under the 64B swizzle starts every 64 bytes
    box = TiledBox((12, 2), 4, (1, 1), SwizzleMode.B64, 3968)
    assert box.row_bytes == 64 and box.footprint_bytes == 128
    assert box.address((0, 1)) == SwizzleMode.B64(3968 + 64)


def test_compare_windows_reports_cells():
    want = bytes(64)
    got = bytearray(want)
    got[17] = 1
    verdict = compare_windows(want, bytes(got))
    assert not verdict.ok and verdict.mismatch_count == 1 and verdict.mismatches[0].startswith("cell 0x00010")


def test_kernel_compiles_for_sm_90a_without_a_gpu():
    pytest.importorskip("cuda.core", reason="needs cuda.core (the [cuda] or [gpu] extra; CI installs it)")
    from layoutfuzz.gpu.device import compile_kernel

    try:
        code = compile_kernel("tma_copy.cu")
    except Exception as exc:  # NVRTC missing is an environment problem, not a pass
        pytest.skip(f"NVRTC unavailable: {exc}")
    assert code.code and len(code.code) > 1000


@pytest.mark.gpu
def test_hardware_copies_match_the_oracle_for_a_batch():
    from layoutfuzz.gpu.tma_driver import TmaRunner

    runner = TmaRunner()
    boxes = [device_box(RandomSource(f"gpu/{i}")) for i in range(400)]
    results = runner.run(boxes, WINDOW)
    refused = [r for r in results if isinstance(r, str)]
    assert len(refused) < len(boxes)
    wrong = [
        (box, compare_windows(expected_window(box, WINDOW).tobytes(), r.tobytes()).note)
        for box, r in zip(boxes, results)
        if not isinstance(r, str) and not np.array_equal(expected_window(box, WINDOW), r)
    ]
    assert not wrong, wrong[:3]


@pytest.mark.gpu
def test_target_passes_one_case():
    target = TmaSwizzle()
    from layoutfuzz.harness.target import make_case

    case = make_case(target, 0, 0)
    assert target.compare(case, target.expected(case), target.observed(case)).ok


@pytest.mark.gpu
@pytest.mark.parametrize("mode", [SwizzleMode.NONE, SwizzleMode.B64])
def test_raw_copies_from_negative_16_byte_aligned_coordinates_zero_fill(mode):
    # docs/findings.md: without Triton, a load at (-4, -4) (int32: the inner start 16-byte aligned,
    # the box entirely out of bounds) zero-fills and does not trap
    from layoutfuzz.gpu.tma_driver import TmaRunner

    box = TiledBox((16, 4), 4, (1, 1), mode, 0)
    (window,) = TmaRunner().run([box], 4096, coord=-4)
    assert not isinstance(window, str) and not window[: box.footprint_bytes].any()
    assert (window[box.footprint_bytes:] == FILL).all()


@pytest.mark.gpu
def test_raw_copy_from_a_misaligned_inner_coordinate_traps():
    # docs/findings.md: an inner start of -4 bytes (int32 at -1) ends in an illegal instruction
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "from layoutfuzz.gpu.tma_driver import TmaRunner\n"
        "from layoutfuzz.oracles.tma import SwizzleMode, TiledBox\n"
        "TmaRunner().run([TiledBox((16, 4), 4, (1, 1), SwizzleMode.NONE, 0)], 4096, coord=-1)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode != 0 and "ILLEGAL_INSTRUCTION" in done.stderr


def _store_params(inner: int, row_stride_elems: int, rows: int, box: tuple[int, int]):
    from layoutfuzz.oracles.tensor_map import TiledEncoding
    from layoutfuzz.oracles.tma_windows import DTYPE_BY_BYTES

    return TiledEncoding(DTYPE_BY_BYTES[4], 0, (inner, rows), (row_stride_elems * 4,), box, (1, 1))


@pytest.mark.gpu
def test_raw_store_writes_the_whole_granule_past_an_unaligned_inner_bound():
    # docs/findings.md, one layer below Triton: int32 rows of 21 elements (84 bytes) padded to 32;
    # an 8-element box at x = 16 covers 16..23: 16..20 are in bounds, 21..23 lie past the bound but
    # inside the 16-byte granule [80, 96) that holds it; 24..31 lie beyond that granule
    from layoutfuzz.gpu.tma_driver import TmaStoreRunner, stored_pattern

    params = _store_params(21, 32, 2, (8, 1))
    out = TmaStoreRunner().store(params, (16, 0), 0x5A).view("<u4").reshape(2, 32)
    pattern = stored_pattern(32).view("<u4")
    assert (out[0, 16:21] == pattern[:5]).all()  # the in-bound elements
    assert (out[0, 24:] == 0x5A5A5A5A).all() and (out[1] == 0x5A5A5A5A).all()  # nothing beyond the granule
    assert (out[0, 21:24] == pattern[5:8]).all()  # the hardware writes the rest of the granule: the finding


@pytest.mark.gpu
def test_raw_store_at_a_negative_coordinate_traps():
    # docs/findings.md: without Triton, a TMA store whose box starts at x = -4 (int32, 16-byte aligned)
    # ends in an illegal instruction, as Triton's kernels did; a load there zero-fills (above)
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "from layoutfuzz.gpu.tma_driver import DTYPE_BY_BYTES, TmaStoreRunner\n"
        "from layoutfuzz.oracles.tensor_map import TiledEncoding\n"
        "p = TiledEncoding(DTYPE_BY_BYTES[4], 0, (16, 4), (64,), (8, 1), (1, 1))\n"
        "TmaStoreRunner().store(p, (-4, 0), 0x5A)\n"
        "print('no trap')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode != 0 and "ILLEGAL_INSTRUCTION" in done.stderr, done.stdout + done.stderr[-2000:]


@pytest.mark.gpu
def test_one_launch_for_many_boxes_gives_each_case_its_own_verdict():
    # observed_batch (one launch, one source buffer for every map) and compare_batch (the oracle over
    # arrays) against the same cases one by one; a planted wrong byte is found in its case alone
    from layoutfuzz.gpu.targets.tma_swizzle import Refused, TmaSwizzle, _Window
    from layoutfuzz.harness.target import make_case

    target = TmaSwizzle()
    cases = [make_case(target, 11, i) for i in range(300)]
    observed = target.observed_batch(cases)
    live = [i for i, o in enumerate(observed) if not isinstance(o, Refused)]
    assert 100 < len(live) < 300  # the sm_100 sub-modes' tensor maps are refused on an H100
    refused = [i for i in range(300) if i not in live]  # and each refusal is the one the validity oracle predicts
    expected = target.expected_batch(cases)
    assert all(v.ok for v in target.compare_batch([cases[i] for i in refused], [expected[i] for i in refused],
                                                  [observed[i] for i in refused]))
    assert {cases[i].params["swizzle"] for i in refused} <= {"B128_ATOM_32B", "B128_ATOM_32B_FLIP_8B", "B128_ATOM_64B"}
    for i in live[:40]:
        assert observed[i].__json__() == target.observed(cases[i])
    chosen = [cases[i] for i in live]
    verdicts = target.compare_batch(chosen, [expected[i] for i in live], [observed[i] for i in live])
    assert all(v.ok for v in verdicts)
    planted = observed[live[5]].window.copy()
    first = int(np.flatnonzero(planted != 0xA5)[0])
    planted[first] ^= 1
    observed[live[5]] = _Window(planted)
    verdicts = target.compare_batch(chosen, [expected[i] for i in live], [observed[i] for i in live])
    assert [k for k, v in enumerate(verdicts) if not v.ok] == [5] and verdicts[5].signature == "misplaced data"


@pytest.mark.gpu
def test_the_device_finds_the_windows_the_host_finds():
    # the comparison on the device (DeviceWindows.mismatches) against oracles.tma_windows.window_mismatches
    # on the host copies of the same windows; wrong data in a placed granule, and a byte written outside the box,
    # each planted on the device in a case of its own, are found in that case alone, both ways
    from layoutfuzz.gpu.targets.tma_swizzle import WINDOW, TmaSwizzle, _DeviceWindow
    from layoutfuzz.harness.target import make_case
    from layoutfuzz.oracles.tma import box_from_params
    from layoutfuzz.oracles.tma_windows import FILL, placements, source_words, window_mismatches

    target = TmaSwizzle()
    cases = [make_case(target, 12, i) for i in range(400)]
    observed = target.observed_batch(cases)
    live = [i for i, o in enumerate(observed) if isinstance(o, _DeviceWindow)]
    windows = observed[live[0]].windows
    boxes = [box_from_params(cases[i].params) for i in live]
    placed, rows = placements(boxes), np.array([observed[i].row for i in live])
    assert not windows.mismatches(rows, placed, FILL).any()
    data_row, outside_row = observed[live[3]].row, observed[live[7]].row
    host = windows.out.cpu().numpy()
    inside = int(np.flatnonzero(host[data_row] != FILL)[0])
    outside = int(np.flatnonzero(host[outside_row] == FILL)[-1])
    windows.out[data_row, inside] ^= 1
    windows.out[outside_row, outside] = 0
    on_device = windows.mismatches(rows, placed, FILL)
    on_host = window_mismatches(placed, source_words(boxes), windows.out.cpu().numpy()[rows], FILL)
    assert list(np.flatnonzero(on_device)) == list(np.flatnonzero(on_host)) == [3, 7]
    verdicts = target.compare_batch([cases[i] for i in live], target.expected_batch([cases[i] for i in live]),
                                    [observed[i] for i in live])
    assert [k for k, v in enumerate(verdicts) if not v.ok] == [3, 7]
    assert verdicts[7].signature == "written outside the box" and WINDOW == host.shape[1]
