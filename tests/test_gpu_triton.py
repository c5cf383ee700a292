"""GPU targets over generated Triton/Gluon kernels: CPU-side oracle and compilation, and (marked
gpu) the hardware run."""

from __future__ import annotations

import collections

import pytest

from gpu.triton_targets import TritonConvertLayout, TritonSharedMemory, gluon_layout, holders
from harness.runner import make_case
from oracles.linear_layout import LinearLayout


def test_holders_are_the_first_copy_of_each_element():
    # 8 elements over 2 registers and 32 lanes of which lanes 4, 8, 16 broadcast: thread 0..3 hold them
    layout = LinearLayout.from_bases({"register": [[1]], "lane": [[2], [4], [0], [0], [0]], "warp": []}, [("dim0", 8)])
    assert holders(layout, [8]) == [0, 0, 1, 1, 2, 2, 3, 3]


def test_generated_pairs_cover_every_conversion_kind():
    target = TritonConvertLayout()
    kinds = collections.Counter(target.family(make_case(target, 0, i)).split(":")[0] for i in range(150))
    assert {"register", "shuffle", "shared"} <= set(kinds)
    for i in range(30):
        target.validate(make_case(target, 0, i))


def test_a_sample_of_the_probe_kernels_compiles_for_sm_90():
    triton = pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    from gpu.gluon_probes import CONVERT_PROBES

    target = TritonConvertLayout()
    for index in range(3):
        p = make_case(target, 1, index).params
        shape = p["shape"]
        constexprs = {"A": gluon_layout(LinearLayout.from_dict(p["a"]), shape), "B": gluon_layout(LinearLayout.from_dict(p["b"]), shape)}
        constexprs |= {f"S{i}": s for i, s in enumerate(shape)}
        pointer = {8: "*i8", 16: "*i16", 32: "*i32", 64: "*i64"}[p["elem_bits"]]
        signature = {"src": pointer, "dst": pointer, "tid_a": "*i32", "tid_b": "*i32", **{k: "constexpr" for k in constexprs}}
        kernel = triton.compile(GluonASTSource(CONVERT_PROBES[len(shape)], signature, constexprs),
                                target=GPUTarget("cuda", 90, 32), options={"num_warps": p["num_warps"]})
        assert "%tid.x" in kernel.asm["ptx"]


@pytest.mark.gpu
def test_conversions_on_the_gpu_match_the_oracle():
    target = TritonConvertLayout()
    for index in range(40):
        case = make_case(target, 0, index)
        assert target.compare(case, target.expected(case), target.observed(case)).ok, case.params


def test_shared_memory_cases_are_memory_layouts_and_placements_are_permutations():
    target = TritonSharedMemory()
    kinds = collections.Counter()
    for index in range(60):
        case = make_case(target, 0, index)
        target.validate(case)
        placement = target.expected(case)["placement"]
        assert sorted(placement) == list(range(len(placement)))
        assert len(placement) <= 1 << case.params["elem_bits"]
        kinds[case.params["kind"]] += 1
    assert set(kinds) == {"swizzled_shared", "nvmma_shared", "linear"}


def test_a_sample_of_the_shared_probe_kernels_compiles_for_sm_90():
    triton = pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon import language as ttgl
    from triton.experimental.gluon._runtime import GluonASTSource

    from gpu.gluon_probes import shared_probe_2d
    from harness.targets.gluon import shared_linear, to_gluon
    from oracles import triton_layouts as tl

    target = TritonSharedMemory()
    seen = set()
    for index in range(40):
        p = make_case(target, 2, index).params
        if p["kind"] in seen:
            continue
        seen.add(p["kind"])
        shape = p["shape"]
        shared = shared_linear(p["offset_bases"]) if "offset_bases" in p else to_gluon(tl.from_dict(p["shared"]))
        constexprs = {"A": gluon_layout(LinearLayout.from_dict(p["a"]), shape), "B": gluon_layout(LinearLayout.from_dict(p["b"]), shape),
                      "S": shared, "F": ttgl.BlockedLayout([1], [32], [p["num_warps"]], [0]), "S0": shape[0], "S1": shape[1]}
        pointer = {8: "*i8", 16: "*i16", 32: "*i32", 64: "*i64"}[p["elem_bits"]]
        signature = {"src": pointer, "dst": pointer, "raw": pointer, **{k: "constexpr" for k in constexprs}}
        kernel = triton.compile(GluonASTSource(shared_probe_2d, signature, constexprs), target=GPUTarget("cuda", 90, 32),
                                options={"num_warps": p["num_warps"]})
        assert "st.shared" in kernel.asm["ptx"] or "stmatrix" in kernel.asm["ptx"]
    assert seen == {"swizzled_shared", "nvmma_shared", "linear"}


@pytest.mark.gpu
def test_shared_memory_round_trips_on_the_gpu_match_the_oracle():
    target = TritonSharedMemory()
    for index in range(30):
        case = make_case(target, 0, index)
        assert target.compare(case, target.expected(case), target.observed(case)).ok, case.params
