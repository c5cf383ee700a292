"""Kernels that take tensor descriptors, run without Triton: the PTX entry's parameter types, the values a
descriptor expands to as Triton's launcher expands it, the packing at each parameter's width, and (marked gpu) a
prebuilt cluster kernel of each Triton release on the device."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from layoutfuzz.gpu.prebuilt import CompiledKernel, _packed, entry_param_types
from layoutfuzz.gpu.tensor_descriptors import DEVICE_TO_HOST_DTYPE, HostTensorDescriptor, encoded_maps, tiled_encoding
from layoutfuzz.harness import registry
from layoutfuzz.harness.target import make_case

ENTRY = """
.visible .entry tma_cluster_probe(
	.param .align 64 .b8 tma_cluster_probe_param_0[128],
	.param .u32 tma_cluster_probe_param_1,
	.param .u64 tma_cluster_probe_param_3,
	.param .u64 .ptr .global .align 1 tma_cluster_probe_param_5,
	.param .f32 tma_cluster_probe_param_6
)
.reqntid 128
"""


class _Base:
    def data_ptr(self) -> int:
        return 0x7F0000001000


def test_the_entry_names_each_parameters_type_and_a_tensor_map_passed_by_value():
    assert entry_param_types(ENTRY, "tma_cluster_probe") == ("b8[128]", "u32", "u64", "u64", "f32")
    with pytest.raises(ValueError):
        entry_param_types(ENTRY, "other_kernel")


def test_values_are_packed_at_their_parameters_width():
    words = np.arange(16, dtype=np.uint64)
    cell = _packed("b8[128]", words)
    assert ctypes.sizeof(cell) == 128 and bytes(cell) == words.tobytes()
    assert _packed("u32", 5).value == 5 and ctypes.sizeof(_packed("u32", 5)) == 4
    assert _packed("u32", -1).value == 0xFFFFFFFF  # wrapped as the C launcher's cast wraps it
    assert ctypes.sizeof(_packed("u64", 1 << 40)) == 8 and _packed("u64", 1 << 40).value == 1 << 40
    with pytest.raises(ValueError):
        _packed("b8[128]", np.zeros(15, np.uint64))


def test_a_descriptor_encodes_as_tritons_launcher_encodes_it():
    # triton/backends/nvidia/driver.c fill_tma_descriptor_tiled (3.6.0 to 3.9.0), worked by hand: a [5, 868] int16 tensor
    # of row stride 872 elements, box [2, 256]: dims and box innermost first, the row stride in bytes (872 * 2), element
    # strides 1, no interleave, L2 promotion 128B (2), no fill; 'nan' padding asks for the NaN fill (1)
    meta = {"swizzle": 0, "elem_size": 2, "elem_type": 1, "block_size": [2, 256], "fp4_padded": False}
    e = tiled_encoding(HostTensorDescriptor(_Base(), (5, 868), (872, 1)), meta)
    assert (e.data_type, e.global_address, e.global_dims, e.global_strides) == (1, 0x7F0000001000, (868, 5), (1744,))
    assert (e.box_dims, e.element_strides, e.interleave, e.swizzle, e.l2_promotion, e.oob_fill) == ((256, 2), (1, 1), 0, 0, 2, 0)
    assert tiled_encoding(HostTensorDescriptor(_Base(), (5, 868), (872, 1), "nan"), meta).oob_fill == 1
    # the device enum of the TMA element types differs from the host's at 8, 9 and 10 (driver.py's TMA_DTYPE_DEVICE_TO_HOST)
    assert [DEVICE_TO_HOST_DTYPE[i] for i in (7, 8, 9, 10, 11)] == [7, 10, 8, 9, 11]
    three = tiled_encoding(HostTensorDescriptor(_Base(), (4, 6, 32), (192, 32, 1)), {**meta, "block_size": [1, 2, 16]})
    assert (three.global_dims, three.global_strides, three.box_dims) == ((32, 6, 4), (64, 384), (16, 2, 1))
    with pytest.raises(ValueError):
        tiled_encoding(HostTensorDescriptor(_Base(), (5, 868), (1, 5)), meta)


def test_kernel_files_keep_parameter_types_and_tensor_maps_and_older_files_still_load():
    kernel = CompiledKernel("k", "3.9.0", num_warps=4, params=2, cubin=b"\x7fELF", param_types=("b8[128]", "u64"),
                            tensor_maps=({"swizzle": 3, "block_size": [8, 64]},))
    again = CompiledKernel.from_json(kernel.to_json())
    assert again == kernel and isinstance(again.param_types, tuple) and isinstance(again.tensor_maps, tuple)
    data = json.loads(kernel.to_json())
    del data["param_types"], data["tensor_maps"]  # a file written before they were kept
    assert CompiledKernel.from_json(json.dumps(data)).param_types == ()


def test_a_compiled_cluster_kernel_records_its_parameters_and_tensor_map(tmp_path, monkeypatch):
    pytest.importorskip("triton.experimental.gluon")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    for name in ("triton.tma_cluster", "triton.tma_cluster_store"):
        target = registry.load(name)
        case = make_case(target, 0, 0)
        kernel = target.compile(case)
        assert not kernel.rejected, kernel.rejected
        # the descriptor expands to the tensor map, 2 shape i32 and 2 stride i64; then the other pointer and 2 scratch
        assert kernel.param_types == ("b8[128]", "u32", "u32", "u64", "u64", "u64", "u64", "u64")
        assert kernel.num_ctas == 1 << len(case.params["splits"])
        assert encoded_maps(kernel.tensor_maps) == \
            target.tensor_maps(case.params)


def test_a_folder_without_the_targets_kernels_makes_it_unavailable(tmp_path, monkeypatch):
    (tmp_path / "triton-3.9.0" / "triton.tma_cluster").mkdir(parents=True)
    monkeypatch.setenv("LAYOUTFUZZ_KERNELS", str(tmp_path / "triton-3.9.0"))
    why = registry.load("triton.tma_cluster_store").availability()
    assert not why.available and "no triton.tma_cluster_store kernels in" in why.reason
    present = registry.load("triton.tma_cluster").availability()  # its folder is there: only the device decides
    assert "kernels in" not in (present.reason or "")


def test_kernels_compiles_the_multicast_target_only_where_gluon_has_multicast(tmp_path):
    pytest.importorskip("triton.experimental.gluon")
    import triton

    from layoutfuzz.gpu.targets.triton_tma_multicast import multicast_missing

    done = subprocess.run([sys.executable, "-m", "layoutfuzz.harness.cli", "kernels", "--targets", "triton.tma_cluster_multicast",
                           "--cases", "2", "--jobs", "1", "--out", str(tmp_path), "--quiet"], capture_output=True, text=True,
                          env={**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "cache")}, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    folder = tmp_path / f"triton-{triton.__version__}" / "triton.tma_cluster_multicast"
    if multicast_missing():  # 3.6.0: said, and nothing compiled
        assert "skipped: Gluon's TMA load has no multicast" in done.stderr and not folder.exists()
    else:
        assert len(list(folder.glob("*.json"))) == 2


@pytest.mark.gpu
def test_prebuilt_cluster_kernels_run_on_the_device_as_through_tritons_jit(tmp_path):
    # the cubin path (cuda.core, NumPy buffers, the descriptor rebuilt) against Triton's own JIT and launcher, case by case
    from layoutfuzz.gpu.targets.triton_tma_cluster import copies_below_a_split, slot_misaligned

    env = {**os.environ, "LAYOUTFUZZ_CACHE": str(tmp_path / "cache"), "TRITON_CACHE_DIR": str(tmp_path / "triton")}
    code = ("import json, sys\nfrom layoutfuzz.harness import registry\nfrom layoutfuzz.harness.target import make_case\n"
            "out = {}\nfor name in ('triton.tma_cluster', 'triton.tma_cluster_store'):\n"
            "    target = registry.load(name)\n"
            "    out[name] = [target.observed(make_case(target, 0, i)) for i in map(int, sys.argv[1:])]\n"
            "print(json.dumps(out))\n")
    # not the findings' cases: a fault, and (3.6.0) CTAs storing different parts to one place, whichever lands last
    indices = [str(i) for i in range(16) if not (slot_misaligned(p := make_case(registry.load("triton.tma_cluster"), 0, i).params)
                                                 or copies_below_a_split(p))]
    answers = []
    for jit in ("0", "1"):
        done = subprocess.run([sys.executable, "-c", code, *indices], capture_output=True, text=True,
                              env={**env, "LAYOUTFUZZ_TRITON_JIT": jit}, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        answers.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert len(indices) >= 8
    for name, cubin in answers[0].items():
        for index, a, b in zip(indices, cubin, answers[1][name]):
            differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
            assert not differ, f"{name} case {index}: {differ} differ: {str(a)[:300]} vs {str(b)[:300]}"
