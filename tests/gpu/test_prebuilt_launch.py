"""On a device: a kernel compiled ahead (or cached) and launched through cuda.core gives what Triton's own JIT launch of
it gives, byte for byte, and its function is set up as Triton's loadBinary sets it up; wgmma's guard zones poison the
products of an MMA that reads them. The machine's own Triton (3.6.0 on the GPU machines) is the reference."""

from __future__ import annotations

import pytest

from layoutfuzz.harness import registry
from layoutfuzz.harness.target import make_case

pytestmark = pytest.mark.gpu

SKIP = {  # cases whose outcome is not one launch's bytes: a fault ends the process, racing stores land either way
    "triton.tma": lambda p: min(p["coord"]) < 0,  # traps the device (docs/findings.md)
    "triton.tma_cluster": lambda p: _cluster_finding(p),
    "triton.tma_cluster_store": lambda p: _cluster_finding(p),
}


def _cluster_finding(p) -> bool:
    from layoutfuzz.gpu.targets.triton_tma_cluster import copies_below_a_split, slot_misaligned

    return copies_below_a_split(p) or slot_misaligned(p)


@pytest.fixture(autouse=True)
def _fresh_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYOUTFUZZ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.delenv("LAYOUTFUZZ_KERNELS", raising=False)


@pytest.mark.parametrize("name, cases", [("triton.tma", 20), ("triton.wgmma", 16), ("triton.tma_cluster", 12),
                                         ("triton.tma_cluster_store", 12)])
def test_cuda_core_launches_give_what_tritons_jit_gives_byte_for_byte(name, cases, monkeypatch):
    from layoutfuzz.gpu.targets.gluon_kernel import Rejected

    target = registry.load(name)
    if not target.availability().available:
        pytest.skip(target.availability().reason)
    compared = 0
    for index in range(cases):
        case = make_case(target, 0, index)
        if SKIP.get(name, lambda p: False)(case.params):
            continue
        monkeypatch.setenv("LAYOUTFUZZ_TRITON_JIT", "1")
        try:
            jit = target.run(case)
        except Rejected:
            continue
        monkeypatch.delenv("LAYOUTFUZZ_TRITON_JIT")
        assert target.run(case) == jit, case.params
        compared += 1
    assert compared >= cases // 2


def test_a_large_shared_memory_kernel_is_set_up_as_tritons_load_binary_sets_it_up():
    import numpy as np
    import torch
    from cuda.bindings import driver

    from layoutfuzz.gpu.prebuilt import from_triton
    from layoutfuzz.gpu.targets.gluon_kernel import GluonKernelTarget, cubin_launcher

    target = registry.load("triton.wgmma")
    case = next(c for c in (make_case(target, 0, i) for i in range(400))
                if c.params["M"] * c.params["K"] + c.params["K"] * c.params["N"] >= 12288 and c.params["mma"] == "f16"
                and not c.params["a_in_regs"])  # 3 x (A + B) of 16-bit elements: past 48 KiB of shared memory
    spec = target.kernel_spec(case)
    p = case.params
    tensors = [torch.zeros(shape, dtype=dtype, device="cuda") for shape, dtype in
               (((p["M"], p["K"]), torch.float16), ((p["K"], p["N"]), torch.float16), ((p["M"], p["N"]), torch.float32),
                ((p["M"], p["N"]), torch.float32))]
    compiled = GluonKernelTarget.launch(spec.kernel, *tensors, num_warps=spec.num_warps, **spec.constexprs)
    assert compiled.metadata.shared > 49152
    kernel = from_triton(compiled)
    ours = cubin_launcher().function(kernel)
    attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    (err, theirs_value), (err2, ours_value) = (driver.cuFuncGetAttribute(attribute, driver.CUfunction(compiled.function)),
                                               driver.cuFuncGetAttribute(attribute, ours))
    assert err == err2 == driver.CUresult.CUDA_SUCCESS
    assert ours_value == theirs_value > 49152
    settings = cubin_launcher().settings(kernel, ours)
    assert dict(settings.function_attributes)["MAX_DYNAMIC_SHARED_SIZE_BYTES"] == theirs_value and settings.prefer_shared
    assert np.isfinite(np.asarray(target.run(case), dtype=float)).all()


@pytest.mark.parametrize("mma", ["f16", "bf16", "tf32", "e4m3", "e5m2"])
def test_an_mma_that_reads_a_guard_zone_computes_nan(mma):
    # the guard zones' poison is a NaN of the MMA type: wgmma over the zone after B gives NaN products; over B itself the
    # same kernel is exact
    import torch
    from triton.experimental import gluon
    from triton.experimental.gluon import language as ttgl
    from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, warpgroup_mma

    from layoutfuzz.gpu.gluon_probes import _guarded_operand, _offsets_2d, _to_mma
    from layoutfuzz.gpu.targets.triton_wgmma import MMA_BITS, STORAGE, TritonWgmma

    @gluon.jit
    def kernel(a_ptr, b_ptr, d_ptr, M: ttgl.constexpr, N: ttgl.constexpr, K: ttgl.constexpr, MMA: ttgl.constexpr,
               ROUND: ttgl.constexpr, ACC: ttgl.constexpr, LOAD: ttgl.constexpr, A_SMEM: ttgl.constexpr,
               B_SMEM: ttgl.constexpr, POISON: ttgl.constexpr, POISON_INT: ttgl.constexpr, AT: ttgl.constexpr):
        a = _to_mma(ttgl.load(a_ptr + _offsets_2d(LOAD, M, K)), MMA, ROUND)
        a_op = _guarded_operand(a, MMA, A_SMEM, POISON, POISON_INT)
        b = _to_mma(ttgl.load(b_ptr + _offsets_2d(LOAD, K, N)), MMA, ROUND)
        b_op = _guarded_operand(ttgl.permute(b, (1, 0)), MMA, B_SMEM, POISON, POISON_INT, AT).permute((1, 0))
        fence_async_shared()
        oc = _offsets_2d(ACC, M, N)
        d = warpgroup_mma(a_op, b_op, ttgl.full([M, N], 0.0, ttgl.float32, ACC), use_acc=False)
        ttgl.store(d_ptr + oc, d)

    bits = MMA_BITS[mma]
    p = {"a_dtype": "f32", "b_dtype": "f32", "mma": mma, "acc": "f32", "M": 64, "N": 64, "K": 256 // bits, "num_warps": 4,
         "warps_per_cta": [4, 1], "instr_n": 64, "a_swizzle": 32, "b_swizzle": 32, "a_in_regs": False, "a_mn_major": False,
         "b_k_major": True, "use_acc": False}
    constexprs = {k: v for k, v in TritonWgmma().constexprs(p).items() if k not in ("A_IN_REGS", "K_WIDTH", "A_MN_MAJOR",
                                                                                     "B_K_MAJOR", "USE_ACC", "C")}
    a = torch.ones(p["M"], p["K"], device="cuda", dtype=getattr(torch, STORAGE["f32"][0]))
    b = torch.ones(p["K"], p["N"], device="cuda", dtype=a.dtype)
    results = {}
    for at in (1, 2):
        d = torch.zeros(p["M"], p["N"], device="cuda")
        kernel[(1,)](a, b, d, AT=at, num_warps=4, **constexprs)
        torch.cuda.synchronize()
        results[at] = d.cpu()
    assert torch.equal(results[1], torch.full_like(results[1], p["K"]))
    assert torch.isnan(results[2]).all()
