"""The tma_boxes case model: one 2-D TMA box through the raw driver, Triton and Mosaic GPU. On the CPU:
the three draw the same cases, every box is valid for each oracle, Triton's API limit is the only unsupported case,
and planted faults are seen; on an sm_90 device (marked gpu) the three systems against the oracle."""

from __future__ import annotations

import numpy as np
import pytest

from layoutfuzz.harness import registry
from layoutfuzz.harness.target import Unsupported, make_case

NAMES = ("tma.boxes", "triton.tma_boxes", "mosaic.tma_boxes")


def _targets():
    return [registry.load(name) for name in NAMES]


def test_the_three_systems_draw_the_same_boxes():
    targets = _targets()
    assert {t.case_model for t in targets} == {"tma_boxes"}
    for index in range(100):
        params = [make_case(t, 5, index).params for t in targets]
        assert params[0] == params[1] == params[2]


def test_every_box_is_valid_for_each_oracle_and_triton_refuses_only_blocks_not_powers_of_two():
    raw, triton, mosaic = _targets()
    refused = 0
    for index in range(150):
        case = make_case(raw, 5, index)
        p = case.params
        box = raw.box(p)
        assert box.box_dims == (p["columns"], p["rows"]) and box.inner_bytes == p["columns"] * p["element_bytes"]
        assert raw.compare(case, raw.expected(case), raw.expected(case)).ok
        assert mosaic.compare(case, mosaic.expected(case), mosaic.expected(case)).ok
        try:
            triton.expected(case)
        except Unsupported as exc:
            refused += 1
            # only a block Triton's power-of-two blocks cannot take: a row count or a row width (in elements)
            assert p["rows"] & (p["rows"] - 1) or p["columns"] & (p["columns"] - 1), p
            assert "power" in str(exc)
    assert 0 < refused < 100


def test_the_targets_see_a_planted_swizzle():
    raw, triton, mosaic = _targets()
    case = next(c for c in (make_case(raw, 5, i) for i in range(200))
                if c.params["swizzle"] == 128 and c.params["rows"] >= 8 and not c.params["rows"] & (c.params["rows"] - 1))
    plain = type(case)(case.target, case.seed, case.index, {**case.params, "swizzle": 0})  # the box without its swizzle
    for target in (raw, mosaic):
        verdict = target.compare(case, target.expected(case), target.expected(plain))
        assert not verdict.ok and verdict.mismatch_count > 0, target.name
    wrong = triton.expected(case)
    wrong["tensor_maps"] = triton.expected(plain)["tensor_maps"]  # Triton encoding no swizzle for a swizzled layout
    assert triton.compare(case, triton.expected(case), wrong).signature == "tensor-map"


def test_finding_triton_cannot_load_a_swizzled_box_of_fewer_than_8_rows():
    # docs/findings.md: the hardware (raw driver) and Mosaic load 1- and 2-row swizzled boxes; Triton 3.6.0 to 3.9.0
    # refuse an NVMMA layout below its swizzle tile ("Illegal shared layout") when lowering to LLVM (compiled here)
    pytest.importorskip("triton.experimental.gluon")
    from layoutfuzz.generators.case import Case
    from tests.gpu.test_triton import _python

    case = Case("triton.tma_boxes", 0, 0, {"element_bytes": 2, "swizzle": 128, "rows": 2, "columns": 64, "row_offset": 0,
                                           "data_seed": 1})
    assert registry.load("triton.tma_boxes").triton_case(case).params["block"] == [2, 64]  # what the campaign loads

    def compile_rows(rows: int):
        return _python(
            "from layoutfuzz.gpu.gluon_probes import tma_probe\n"
            "from layoutfuzz.gpu.targets.gluon_kernel import compile_for_sm90\n"
            "from tests.gpu.test_triton import _tma_signature\n"
            f"p = {{'elem_bits': 16, 'swizzle': 128, 'block': [{rows}, 64], 'coord': [0, 0], 'num_warps': 4}}\n"
            "compile_for_sm90(tma_probe, *_tma_signature(p), 4)\n")

    assert compile_rows(8).returncode == 0  # the same kernel with the swizzle tile's 8 rows compiles
    refused = compile_rows(2)
    assert refused.returncode != 0 and "Illegal shared layout" in refused.stderr, refused.stderr[-2000:]


@pytest.mark.gpu
def test_the_three_systems_on_the_device():
    pytest.importorskip("jax._src.lib.mosaic_gpu", reason="needs jaxlib with Mosaic GPU")
    targets = _targets()
    for target in targets:
        assert target.availability().available, (target.name, target.availability().reason)
    for index in range(24):
        for target in targets:
            case = make_case(target, 9, index)
            try:
                expected = target.expected(case)
            except Unsupported:
                assert target.name == "triton.tma_boxes"
                continue
            verdict = target.compare(case, expected, target.observed(case))
            p = case.params
            if target.name == "triton.tma_boxes" and p["swizzle"] and p["rows"] < 8:  # the finding above
                assert verdict.signature == "rejected: LLVM ERROR: Illegal shared layout", (case.params, verdict)
                continue
            assert verdict.ok, (target.name, case.params, verdict)
    raw = targets[0]
    case = make_case(raw, 9, 0)
    observed = raw.observed(case)
    moved = bytearray(bytes.fromhex(observed["window"]))
    moved[0], moved[16] = moved[16] ^ 0xFF, moved[0]
    assert not raw.compare(case, raw.expected(case), {"window": bytes(moved).hex()}).ok
    assert np.frombuffer(bytes.fromhex(observed["window"]), np.uint8).size > 0
