"""triton.tma_multicast: the PTX evaluator on PTX worked by hand, the multicast oracle and its verdicts on
planted faults (CPU, no Triton), and Gluon's multicast loads compiled by this Triton and checked in their PTX (Triton
3.7.1 on; 3.6.0's Gluon has no multicast and says so)."""

from __future__ import annotations

import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.gpu.ptx_eval import Kernel, Thread
from layoutfuzz.gpu.targets.triton_tma_multicast import TritonTmaMulticast, deliveries_expected
from layoutfuzz.harness import registry
from layoutfuzz.harness.target import make_case

PTX = """
	mov.u32 	%r11, %tid.x;
	shr.u32 	%r12, %r11, 5;
	elect.sync 	%r18|%p12, -1;
	mov.u32 	%r14, %cluster_ctarank;
	and.b32 	%r19, %r14, 1;
	setp.eq.b32 	%p13, %r19, 0;
	setp.lt.u32 	%p14, %r11, 32;
	and.pred 	%p15, %p14, %p12;
	and.pred 	%p4, %p13, %p15;
	bfe.u32 	%r5, %r14, 1, 1;
	and.b32 	%r20, %r14, 2;
	mov.b16 	%rs2, 3;
	shl.b16 	%rs1, %rs2, %r20;
	mov.b32 	%r3, global_smem;
	add.s32 	%r1, %r3, 1024;
	and.b32 	%r2, %r1, -50331664;
	selp.b32 	%r4, 64, 0, %p13;
	shfl.sync.idx.b32 	%r6, %r11, 0, 31, -1;
	@%p4 cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%r3], [%rd1, {%r4, %r5}], [%r2], %rs1;
"""


def test_the_evaluator_follows_ptx_worked_by_hand():
    kernel = Kernel(PTX)
    # thread 40 of CTA 3: warp 1, lane 8; rank bit 0 set, so it does not issue; bit 1 gives the row
    thread = Thread(40, 3)
    assert kernel.value("%r12", thread) == 1 and kernel.value("%p12", thread) == 0 and kernel.value("%r5", thread) == 1
    assert kernel.value("%rs1", thread) == 0b1100  # 3 << (3 & 2)
    assert kernel.value("%r4", Thread(0, 2)) == 64 and kernel.value("%r4", thread) == 0  # selp on rank bit 0
    assert kernel.value("%r6", thread) == 32  # lane 0 of warp 1 holds tid 32
    # -50331664 is 0xFCFFFFF0: bits 24 and 25 (the CTA's rank in a shared::cluster address) and 0-3 cleared
    assert kernel.value("%r2", Thread(0, 0, {"global_smem": 0x3000000})) == 0x400
    loads = kernel.tensor_loads(64, 4)
    assert [(x.rank, x.tid, x.coords, x.mask) for x in loads] == [(0, 0, (64, 0), 0b0011), (2, 0, (64, 1), 0b1100)]
    with pytest.raises(NotImplementedError, match="does not know"):
        Kernel("\tmad.lo.s32 \t%r7, %r11, 3, 1;\n").value("%r7", thread)


def test_each_cta_expects_the_boxes_of_its_part():
    # 4 CTAs: base 0 copies, base 1 splits the rows; a 2-byte, 64B-swizzled [32, 64] block: parts of [16, 64], each
    # two 32-column boxes of 16 x 64 bytes (1 KiB apart), CTAs 0 and 1 the top half, 2 and 3 the bottom
    p = {"elem_bits": 16, "swizzle": 64, "splits": ["copies", "rows"], "block": [32, 64], "coord": [3, 16], "slot": 1}
    want = deliveries_expected(p)
    assert want[0] == want[1] == [[16, 3, 0], [48, 3, 1024]]
    assert want[2] == want[3] == [[16, 19, 0], [48, 19, 1024]]


def _observed(deliveries):
    return {"deliveries": {str(cta): sorted(boxes) for cta, boxes in deliveries.items()}, "issued": []}


def test_a_box_twice_missing_or_elsewhere_is_a_divergence():
    target = TritonTmaMulticast()
    p = {"elem_bits": 16, "swizzle": 0, "splits": ["copies"], "block": [4, 16], "coord": [0, 0], "slot": 0,
         "buffers": 1, "global_shape": [8, 16], "row_pad": 0, "num_warps": 4}
    case = Case(target.name, 0, 0, p)
    expected = target.expected(case)
    box = [0, 0, 0]
    assert target.compare(case, expected, _observed({0: [box], 1: [box]})).ok
    twice = target.compare(case, expected, _observed({0: [box, box], 1: []}))  # a mask naming CTA 0 twice, CTA 1 never
    assert not twice.ok and twice.signature == "multicast: some CTAs receive a box twice or never"
    moved = target.compare(case, expected, _observed({0: [box], 1: [[0, 1, 0]]}))  # CTA 1 given another row
    assert not moved.ok and moved.signature == "multicast: boxes at the wrong coordinates or offset"
    rejected = target.compare(case, expected, {"rejected": "PassManager::run failed"})
    assert not rejected.ok and rejected.signature.startswith("rejected")


def test_it_draws_triton_tma_clusters_cases():
    target = TritonTmaMulticast()
    assert target.case_model == "triton.tma_cluster"
    cluster = registry.load("triton.tma_cluster")
    assert [make_case(target, 3, i).params for i in range(20)] == [make_case(cluster, 3, i).params for i in range(20)]


def test_gluons_multicast_loads_send_each_cta_its_part():
    pytest.importorskip("triton.experimental.gluon")
    target = TritonTmaMulticast()
    availability = target.availability()
    if not availability.available:
        import triton

        assert "no multicast" in availability.reason and triton.__version__.startswith("3.6")
        pytest.skip(availability.reason)
    for index in range(12):
        case = make_case(target, 11, index)
        verdict = target.compare(case, target.expected(case), target.observed(case))
        assert verdict.ok, (case.params, verdict)
