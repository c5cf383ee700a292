"""The Triton GPU targets' kernel cache: compiled once on a miss, filed by content hash, read back after."""

from __future__ import annotations

from pathlib import Path

import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.harness.target import make_case


@pytest.fixture
def cache(tmp_path, monkeypatch):
    pytest.importorskip("triton.experimental.gluon")
    monkeypatch.setenv("LAYOUTFUZZ_CACHE", str(tmp_path))
    return tmp_path


def test_a_kernel_is_compiled_on_a_miss_filed_and_then_read_without_compiling(cache, monkeypatch):
    import triton

    from layoutfuzz.gpu.kernel_cache import cache_folder
    from layoutfuzz.gpu.prebuilt import kernel_path
    from layoutfuzz.gpu.targets.triton_convert_layout import TritonConvertLayout

    target = TritonConvertLayout()
    case = make_case(target, 5, 0)
    folder = cache_folder()
    assert folder.is_relative_to(cache / "kernels" / f"triton-{triton.__version__}")
    kernel = target.cached(case)
    assert kernel.cubin[:4] == b"\x7fELF" and kernel.num_warps == case.params["num_warps"]
    assert kernel_path(folder, target.name, case.params).is_file()

    def no_compile(*_):
        raise AssertionError("compiled again")

    monkeypatch.setattr(TritonConvertLayout, "compile", no_compile)
    assert target.cached(case) == kernel
    # another case with the same parameters (other data: its index) runs the same kernel
    assert target.cached(Case(target.name, 6, 17, case.params)) == kernel
    with pytest.raises(AssertionError, match="compiled again"):
        target.cached(make_case(target, 5, 1))


def test_a_refused_compile_is_filed_as_the_answer_and_a_damaged_file_is_compiled_again(cache, monkeypatch):
    from layoutfuzz.gpu.kernel_cache import cache_folder
    from layoutfuzz.gpu.prebuilt import kernel_path
    from layoutfuzz.gpu.targets.triton_convert_layout import TritonConvertLayout

    target = TritonConvertLayout()
    case = make_case(target, 5, 2)
    bad = Case(target.name, 5, 2, dict(case.params, num_warps=case.params["num_warps"] * 2))  # layouts over fewer warps
    refused = target.cached(bad)
    assert refused.rejected and not refused.cubin
    assert target.cached(bad) == refused
    path = kernel_path(cache_folder(), target.name, case.params)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    assert target.cached(case).cubin[:4] == b"\x7fELF"
    assert path.read_text().startswith("{\"cubin\"")


def test_pruning_keeps_the_most_recently_used_kernels_within_the_limit(tmp_path):
    import os

    from layoutfuzz.gpu.kernel_cache import prune

    for age in range(10):  # kernel-9 is the oldest
        path = tmp_path / f"triton-x/b{age % 2}/t/kernel-{age}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * 100)
        os.utime(path, (1_000_000 - age, 1_000_000 - age))
    (tmp_path / "notes.txt").write_text("not a kernel")
    assert prune(tmp_path, 450) == 6
    assert sorted(p.name for p in tmp_path.rglob("*.json")) == [f"kernel-{age}.json" for age in range(4)]
    assert (tmp_path / "notes.txt").exists()
    assert prune(tmp_path, 10_000) == 0


def test_a_cache_that_cannot_be_written_still_gives_the_kernel(cache, monkeypatch):
    import errno

    from layoutfuzz.gpu import kernel_cache
    from layoutfuzz.gpu.targets.triton_convert_layout import TritonConvertLayout

    def full(*_, **__):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(kernel_cache, "write_atomically", full)  # a full disk (or a read-only cache)
    target = TritonConvertLayout()
    assert target.cached(make_case(target, 5, 3)).cubin[:4] == b"\x7fELF"


def test_a_compile_into_the_kernel_cache_leaves_nothing_in_tritons_own_cache(cache, tmp_path, monkeypatch):
    # Triton's copy of every stage of every distinct kernel, never pruned, filled the disk in a long campaign
    import triton

    from layoutfuzz.gpu.targets.triton_convert_layout import TritonConvertLayout

    triton_dir = tmp_path / "triton-own"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(triton_dir))
    seen = []
    compile_ = TritonConvertLayout.compile
    monkeypatch.setattr(TritonConvertLayout, "compile", lambda self, case, variant="": seen.append(triton.knobs.cache.dir)
                        or compile_(self, case, variant))
    target = TritonConvertLayout()
    kernel = target.cached(make_case(target, 5, 7))
    assert kernel.cubin[:4] == b"\x7fELF"
    assert len(seen) == 1 and seen[0] != str(triton_dir) and "layoutfuzz-triton-" in seen[0]
    assert not triton_dir.exists() or not any(triton_dir.iterdir())
    assert not Path(seen[0]).exists() and triton.knobs.cache.dir == str(triton_dir)
