"""triton.tma_cluster_store (stores from clusters): the tiled-store oracle with the granule rule on a worked
example, the verdicts on planted faults, the tensor maps Triton encodes, and (marked gpu) stores on an H100 and the
hardware fact under Triton 3.7.1+'s multi-CTA loads."""

from __future__ import annotations

import numpy as np
import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.gpu.targets.triton_tma_cluster import copies_below_a_split, slot_misaligned
from layoutfuzz.gpu.targets.triton_tma_cluster_store import SENTINEL, TritonTmaClusterStore, stored_block, tensor_before
from layoutfuzz.gpu.tensor_descriptors import encoded_maps
from layoutfuzz.harness.target import make_case

WORKED = {"elem_bits": 8, "swizzle": 0, "splits": ["rows"], "block": [2, 32], "global_shape": [3, 20], "coord": [2, 16],
          "row_pad": 12, "buffers": 2, "slot": 1, "num_warps": 1}


def test_the_store_writes_the_block_inside_the_tensor_and_the_bounds_granule_whole():
    # by hand: a 3 x 20 int8 tensor of row stride 32; the [2, 32] block at (2, 16). Row 3 lies outside the tensor; in
    # row 2 the bound is column 20, inside the 16-byte granule of columns 16-31, which a store writes whole (observed,
    # oracles/tma_copy.py): columns 16-31 take block row 0's first 16 elements, columns 32-47 exist nowhere
    target = TritonTmaClusterStore()
    case = Case(target.name, 0, 3, WORKED)
    target.validate(case)
    block = stored_block(case)
    after = np.frombuffer(bytes.fromhex(target.expected(case)["store"]), np.int8).reshape(3, 32)
    assert after[2, 16:32].tolist() == block[0, :16].tolist()
    assert after[2, 20] == block[0, 4]  # past the bound, inside its granule
    untouched = np.ones((3, 32), bool)
    untouched[2, 16:32] = False
    assert (after[untouched].view(np.uint8) == SENTINEL).all() and tensor_before(case).shape == (3, 32)


def test_a_store_names_what_went_wrong_not_how_much():
    target = TritonTmaClusterStore()
    case = Case(target.name, 0, 3, WORKED)
    expected = target.expected(case)
    assert target.compare(case, expected, expected).ok
    want = np.frombuffer(bytes.fromhex(expected["store"]), np.int8).reshape(3, 32)
    lost = want.copy()
    lost[2, 16:32] = np.int8(SENTINEL)  # the store never landed
    assert target.compare(case, expected, {**expected, "store": lost.tobytes().hex()}).signature == "store: block: not written"
    wrong = want.copy()
    wrong[2, 17] ^= 1
    assert target.compare(case, expected, {**expected, "store": wrong.tobytes().hex()}).signature == "store: block: wrong data"
    spilled = want.copy()
    spilled[0, 0] = 7  # a byte the store must leave alone
    assert target.compare(case, expected, {**expected, "store": spilled.tobytes().hex()}).signature == "store: written outside the block"
    maps = [{**expected["tensor_maps"][0], "block_size": [2, 32]}]  # the whole block, not a CTA's part
    assert target.compare(case, expected, {**expected, "tensor_maps": maps}).signature == "tensor-map"


def test_triton_encodes_a_ctas_part_for_a_store_over_a_cluster(tmp_path, monkeypatch):
    pytest.importorskip("triton.experimental.gluon")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    target = TritonTmaClusterStore()
    seen = set()
    for index in range(200):
        case = make_case(target, 4, index)
        key = ("+".join(case.params["splits"]), case.params["swizzle"])
        if key in seen:
            continue
        seen.add(key)
        kernel = target.compile(case)
        assert not kernel.rejected, kernel.rejected
        assert encoded_maps(kernel.tensor_maps) == \
            target.tensor_maps(case.params), case.params
        if len(seen) >= 8:
            break
    assert len(seen) >= 8


@pytest.mark.gpu
def test_cluster_tma_stores_on_the_gpu_match_the_oracle_outside_the_findings():
    import triton

    from layoutfuzz.harness.triton_compat import parse_version

    target = TritonTmaClusterStore()
    ran = 0
    for index in range(60):
        case = make_case(target, 0, index)
        if slot_misaligned(case.params) or (copies_below_a_split(case.params) and parse_version(triton.__version__) < (3, 7, 1)):
            continue  # docs/findings.md: a buffer off 128 bytes faults; 3.6.0 stores the wrong CTA parts there
        assert target.compare(case, target.expected(case), target.observed(case)).ok, case.params
        ran += 1
    assert ran >= 40


@pytest.mark.gpu
def test_finding_a_copy_never_completes_a_barrier_of_another_cta_on_an_h100():
    # one layer below Triton 3.7.1+'s multi-CTA loads (docs/findings.md): CTA r's shared addresses carry r from bit 24,
    # so clearing it names the lead CTA's barrier; a copy into the CTA's own shared memory delivers its bytes but never
    # completes that barrier, with or without a tensor map, while it completes the CTA's own
    from layoutfuzz.gpu.cluster_barriers import barrier_completion, shared_addresses

    addresses = shared_addresses(4)
    assert [a >> 24 for a in addresses] == [0, 1, 2, 3] and len({a & 0xFFFFFF for a in addresses}) == 1
    for tensor in (False, True):
        own = barrier_completion(tensor, on_lead_barrier=False)
        assert own.completed and own.bytes_right == (1024, 1024)
        lead = barrier_completion(tensor, on_lead_barrier=True)
        assert not lead.completed and lead.bytes_right == (1024, 1024)
