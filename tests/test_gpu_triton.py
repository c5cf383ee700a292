"""GPU targets over generated Triton/Gluon kernels: CPU-side oracle and compilation, and (marked
gpu) the hardware run."""

from __future__ import annotations

import collections

import pytest

from gpu.triton_targets import TritonConvertLayout, gluon_layout, holders
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
