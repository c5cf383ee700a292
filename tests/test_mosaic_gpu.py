"""mosaic.gpu on the CPU: the expected shared-memory images worked by hand from PTX 5.5.7, the products, the judgement
of planted faults, the generator; and on an sm_90 device (skipped without one) Mosaic's kernels against them."""

from __future__ import annotations

import numpy as np
import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.gpu.targets.mosaic_gpu import _data, _store_data, expected_image, expected_store
from layoutfuzz.harness import registry
from layoutfuzz.harness.target import make_case


def _case(params):
    return Case("mosaic.gpu", 0, 0, params)


def test_a_128b_swizzled_window_by_hand():
    p = {"family": "tma", "element_bytes": 2, "swizzle": 128, "rows": 2, "columns": 64, "row_offset": 3, "data_seed": 5}
    source = _data(p)
    image = expected_image(p, source)
    window = source[3:5]
    assert (image[:128] == window[0].view(np.uint8)).all()  # row 0: every 16-byte chunk in place
    for chunk in range(8):  # row 1 of the 128B pattern: chunk c lands in chunk c ^ 1
        got = image[128 + 16 * (chunk ^ 1):128 + 16 * (chunk ^ 1) + 16]
        assert (got == window[1, 8 * chunk:8 * chunk + 8].view(np.uint8)).all()


def test_a_tiled_32b_swizzle_and_an_unswizzled_copy_by_hand():
    p = {"family": "tma_tiled", "element_bytes": 4, "swizzle": 32, "tile": [8, 8], "shape": [16, 16], "data_seed": 1}
    source = _data(p)
    image = expected_image(p, source).view(np.uint32)
    # tiles one after another, row-major over (2, 2) tiles of 8 x 8 (256 bytes each); inside, 32-byte rows whose two
    # 16-byte chunks swap on odd 128-byte lines (rows 4-7 of a tile)
    tile = image[3 * 64:4 * 64].reshape(8, 2, 4)  # tile (1, 1)
    assert (tile[0].ravel() == source[8, 8:16]).all()
    assert (tile[4, 0] == source[12, 12:16]).all() and (tile[4, 1] == source[12, 8:12]).all()
    plain = {"family": "tma", "element_bytes": 1, "swizzle": 0, "rows": 3, "columns": 32, "row_offset": 1, "data_seed": 2}
    assert (expected_image(plain, _data(plain)) == _data(plain)[1:4].ravel()).all()


def test_a_store_reads_each_element_where_a_load_puts_it_and_writes_nothing_else():
    # PTX 5.5.7 gives one placement for both directions: a load's image, stored back, is the window again; a 64B
    # store by hand: row r's 16-byte chunk c is read from chunk c ^ ((r // 2) % 4) of its 64-byte shared row
    p = {"family": "tma", "element_bytes": 2, "swizzle": 64, "rows": 5, "columns": 32, "row_offset": 3, "data_seed": 4,
         "direction": "store"}
    image, initial = _store_data(p)
    assert image.shape == (5, 32) and initial.shape == (10, 32)
    out = expected_store(p, image, initial).view(np.uint16).reshape(10, 32)
    assert (out[:3] == initial[:3]).all() and (out[8:] == initial[8:]).all()  # the rows around the window are kept
    raw = image.view(np.uint8).reshape(5, 64)
    for r in range(5):
        for chunk in range(4):
            source = chunk ^ ((r // 2) % 4)
            assert (out[3 + r, 8 * chunk:8 * chunk + 8].view(np.uint8) == raw[r, 16 * source:16 * source + 16]).all()
    for q in ({**p, "swizzle": 128, "columns": 64, "element_bytes": 2, "rows": 13},
              {"family": "tma_tiled", "element_bytes": 4, "swizzle": 32, "tile": [8, 8], "shape": [16, 24], "data_seed": 1,
               "direction": "store"}):
        window = _store_data(q)[1]  # any array: loaded into shared memory, then stored back over other values
        elsewhere = window ^ np.array(0x5A, window.dtype)
        back = expected_store(q, expected_image(q, window), elsewhere).view(window.dtype).reshape(window.shape)
        if q["family"] == "tma":
            rows = slice(q["row_offset"], q["row_offset"] + q["rows"])
            assert (back[rows] == window[rows]).all()
            assert (np.delete(back, range(rows.start, rows.stop), axis=0) == np.delete(elsewhere, range(rows.start, rows.stop), axis=0)).all()
        else:
            assert (back == window).all()  # the tiles cover the whole array


def test_a_multicast_load_expects_the_whole_window_in_every_cta_and_only_window_loads_multicast():
    target = registry.load("mosaic.gpu")
    p = {"family": "tma", "element_bytes": 1, "swizzle": 32, "rows": 16, "columns": 32, "row_offset": 2, "data_seed": 6,
         "direction": "load", "ctas": 4}
    single = expected_image({**p, "ctas": 1}, _data(p))
    assert (target.expected(_case(p)) == np.concatenate([single] * 4)).all()
    target.validate(_case(p))
    for bad in ({"rows": 13}, {"ctas": 3}, {"direction": "store"}, {"rows": 4}):  # rows 4: 32-byte shares
        with pytest.raises(ValueError):
            target.validate(_case({**p, **bad}))
    cases = [make_case(target, 4, i).params for i in range(600)]
    loads = [q for q in cases if q["family"] == "tma" and q["direction"] == "load"]
    assert {q["ctas"] for q in loads} == {1, 2, 4}
    for q in loads:  # the rows split evenly, into shares of whole 128-byte units (a TMA destination's alignment)
        assert q["ctas"] == 1 or (q["rows"] % q["ctas"] == 0 and q["rows"] // q["ctas"] * q["columns"] * q["element_bytes"] % 128 == 0)
    assert all(q.get("ctas", 1) == 1 for q in cases if q["family"] != "tma" or q["direction"] == "store")


def test_a_device_fault_reported_by_xla_ends_the_worker_and_other_errors_stay_errors():
    # a faulted kernel loses the CUDA context: XLA then fails every later call of the process, so the worker must end
    # (a crash of that case) rather than turn each later case into an error
    from layoutfuzz.gpu.device import DeviceFault
    from layoutfuzz.gpu.targets.mosaic_gpu import _faults_as_device_faults

    def raising(message):
        def observe(case):
            raise RuntimeError(message)
        return observe

    fault = "INTERNAL: CUDA error: Error recording CUDA event: CUDA_ERROR_MISALIGNED_ADDRESS: misaligned address"
    with pytest.raises(DeviceFault, match="misaligned address"):
        _faults_as_device_faults(raising(fault), None)
    with pytest.raises(DeviceFault):
        _faults_as_device_faults(raising("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered"), None)
    with pytest.raises(RuntimeError) as refused:
        _faults_as_device_faults(raising("ValueError: last dimension to be divisible by 128"), None)
    assert not isinstance(refused.value, DeviceFault)
    assert _faults_as_device_faults(lambda case: 7, None) == 7


def test_the_target_finds_a_moved_byte_and_a_wrong_product():
    target = registry.load("mosaic.gpu")
    case = _case({"family": "tma", "element_bytes": 2, "swizzle": 64, "rows": 5, "columns": 32, "row_offset": 0, "data_seed": 9})
    expected = target.expected(case)
    assert target.compare(case, expected, expected.copy()).ok
    moved = expected.copy()
    moved[[0, 200]] = moved[[200, 0]]
    verdict = target.compare(case, expected, moved)
    assert not verdict.ok and verdict.signature == "tma 64B: shared-memory bytes elsewhere" and verdict.mismatch_count == 2
    product = _case({"family": "wgmma", "dtype": "bf16", "swizzle": 32, "m": 64, "k": 16, "n": 64, "data_seed": 3})
    d = target.expected(product)
    a, b = _data(product.params)[:64, :16], _data(product.params)[64:80, :64]
    assert (d == a @ b).all() and np.abs(d).max() <= 16 * 9  # |a|, |b| <= 3: exact in every type
    wrong = d.copy()
    wrong[5, 7] += 1
    assert target.compare(product, d, wrong).signature == "wgmma 32B: a wrong product"


def test_generated_cases_are_valid_and_draw_every_value():
    target = registry.load("mosaic.gpu")
    cases = [make_case(target, 4, i) for i in range(1500)]
    for case in cases[:400] + [c for c in cases if c.params["family"] == "wgmma"]:  # the TMA families' checks are slow
        target.validate(case)
    families = {target.family(c) for c in cases}
    assert {f"{f} {s} swizzle" for f in ("tma", "tma store", "tma_tiled", "tma_tiled store") for s in ("no", 32, 64, 128)} <= families
    wgmma = [c.params for c in cases if c.params["family"] == "wgmma"]
    drawn = {(p["dtype"], p["swizzle"], p["b_major"], p["a_from"]) for p in wgmma}
    for dtype in ("f16", "bf16", "tf32", "e4m3", "e5m2", "s8"):
        for swizzle in (32, 64, 128):
            assert (dtype, swizzle, "k", "smem") in drawn  # every type and swizzle with a K-major B
    assert {("f16", 128, "mn", "smem"), ("bf16", 64, "mn", "registers"), ("s8", 64, "k", "registers")} <= drawn
    assert all(p["b_major"] == "k" for p in wgmma if p["dtype"] not in ("f16", "bf16"))  # PTX: no transposed 8/32-bit
    assert all(p["a_from"] == "smem" for p in wgmma if p["dtype"] == "tf32" or (p["dtype"], p["swizzle"]) == ("s8", 32))
    transposed_a = {(p["dtype"], p["swizzle"], p["b_major"]) for p in wgmma if p["a_major"] == "mn"}
    assert {(t, s) for t, s, _ in transposed_a} == {(t, s) for t in ("f16", "bf16") for s in (32, 64, 128)}
    assert all(p["a_from"] == "smem" and p["dtype"] in ("f16", "bf16") for p in wgmma if p["a_major"] == "mn")
    assert {p["n"] for p in wgmma if p["b_major"] == "k"} >= {8, 24, 40}  # N below a swizzle row, and odd multiples of 8
    assert all(p["n"] in (8, 16, 24, *range(32, 257, 16)) for p in wgmma if p["dtype"] == "s8")  # s8 shapes: n24, then 16s
    base = {"family": "wgmma", "dtype": "f16", "swizzle": 128, "b_major": "mn", "a_from": "smem", "a_major": "k", "m": 64,
            "k": 64, "n": 64, "data_seed": 0}
    target.validate(_case({**base, "a_major": "mn"}))
    target.validate(_case(base))
    for bad in ({"k": 48}, {"dtype": "tf32"}, {"dtype": "e4m3", "b_major": "mn"}, {"dtype": "tf32", "b_major": "k",
                "a_from": "registers"}, {"dtype": "s8", "swizzle": 32, "b_major": "k", "a_from": "registers", "k": 32},
                {"dtype": "s8", "b_major": "k", "k": 128, "n": 40}, {"n": 72}, {"a_major": "mn", "a_from": "registers"},
                {"dtype": "e5m2", "b_major": "k", "k": 128, "a_major": "mn"}):
        with pytest.raises(ValueError):
            target.validate(_case({**base, **bad}))


def test_an_s8_product_is_exact_over_the_whole_byte_range():
    # s8 operands take all of [-128, 127]; the s32 accumulator holds their products exactly (|sum| <= 512 * 2^14)
    target = registry.load("mosaic.gpu")
    case = _case({"family": "wgmma", "dtype": "s8", "swizzle": 128, "b_major": "k", "a_from": "registers", "m": 64,
                  "k": 256, "n": 24, "data_seed": 8})
    data = _data(case.params)
    a, b = data[:64, :256].astype(int), data[64:320, :24].astype(int)
    assert a.min() == -128 and a.max() == 127
    d = target.expected(case)
    assert d.dtype == np.int32 and d.shape == (64, 24)
    assert d[5, 17] == sum(int(a[5, i]) * int(b[i, 17]) for i in range(256))
    tf32 = _case({**case.params, "dtype": "tf32", "swizzle": 64, "a_from": "smem", "k": 32, "n": 8})
    assert target.expected(tf32).dtype == np.float32 and np.abs(_data(tf32.params)).max() <= 3


def test_without_a_device_the_target_says_why():
    availability = registry.load("mosaic.gpu").availability()
    if availability.available:
        pytest.skip("a CUDA device with jax's Mosaic GPU is here")
    assert availability.reason
