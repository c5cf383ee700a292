"""The base of the GPU targets that compile a generated Gluon kernel per case and run it (``GluonKernelTarget``), what
compiling one takes (``KernelSpec``), and compiling for sm_90a without a device (``compile_for_sm90``)."""

from __future__ import annotations

import os
import threading
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar

from layoutfuzz.generators.case import Case
from layoutfuzz.generators.source import Source, permutation
from layoutfuzz.gpu.direct_ttgir import DirectTtgir, compile_ttgir
from layoutfuzz.gpu.kernel_cache import cache_folder, cached_kernel, through_jit
from layoutfuzz.gpu.prebuilt import CompiledKernel, from_triton, kernel_path, variant_params
from layoutfuzz.gpu.targets.base import GpuTarget, cuda_device_availability, quietly, retain_primary_context
from layoutfuzz.harness.capture import stderr_text
from layoutfuzz.harness.compare import Comparison, compare_values
from layoutfuzz.harness.target import Availability, Unsupported
from layoutfuzz.harness.triton_compat import active_folder, folder_version
from layoutfuzz.harness.triton_compat.gluon_layouts import MISSING_OP
from layoutfuzz.oracles.linear_layout import LinearLayout
from layoutfuzz.reports.signatures import compile_error, normalise

INT_TYPES = {8: "int8", 16: "int16", 32: "int32", 64: "int64"}
# a target whose kernels launch through cuda.core on NumPy's buffers (gpu.device_arrays) needs no torch: its fork server
# is seconds quicker to start without it
PREBUILT_NEEDS = ("triton", "cuda.core")
PREBUILT_PRELOAD = ("numpy", "cuda.core", "cuda.bindings.driver")
POINTERS = {8: "*i8", 16: "*i16", 32: "*i32", 64: "*i64"}  # Triton signature types of the same


class Rejected(Exception):
    """Triton refused to compile a kernel the oracle calls valid."""


@dataclass(frozen=True)
class KernelSpec:
    """What compiling a case's kernel takes: the Gluon function, its pointer types, constexprs, warps."""

    kernel: Any
    signature: dict[str, str]
    constexprs: dict[str, Any]
    num_warps: int
    num_ctas: int = 1


def _torch_on_device() -> None:
    """Device 0's primary context, then torch's CUDA initialised on it (torch waits for a thread initialising it)."""
    retain_primary_context()
    import torch

    torch.cuda.init()


@cache
def cubin_launcher() -> Any:
    """This process's launcher of compiled kernels (``gpu.prebuilt.CubinLauncher``): its stream takes their buffers."""
    from layoutfuzz.gpu.prebuilt import CubinLauncher

    return CubinLauncher()


def single_threaded_mlir() -> None:
    """Triton's MLIR pass managers run on this process's thread alone (``MLIR_DISABLE_MULTITHREADING``, which Triton
    reads at each run; a value the user set is kept). A campaign already compiles in one process per core, and each
    MLIR context's own pool of a thread per core only oversubscribed them (on an H100 machine's 16 cores, 99 against 119
    kernels a second in a campaign's steady part). The passes give the same LLVM IR and PTX either way
    (``tests/test_direct_ttgir.py``)."""
    os.environ.setdefault("MLIR_DISABLE_MULTITHREADING", "1")


class GluonKernelTarget(GpuTarget):
    """Base of the targets that compile a generated Gluon kernel per case and run it once.

    The kernel is compiled here by this process's Triton into the kernel cache (``gpu.kernel_cache``) and
    launched through cuda.core, or, where ``$LAYOUTFUZZ_KERNELS`` names a folder of prebuilt kernels
    (``layoutfuzz kernels``), taken from there as another Triton compiled it on any machine, with no Triton
    here. Targets whose kernels take tensor descriptors (not ``prebuilt``) launch through Triton's JIT. A compiler failure is an
    answer, not a harness error: ``observed`` returns ``{"rejected": why}`` and ``compare`` calls it a
    divergence. A device fault ends the worker (``on_device``)."""

    needs = ("torch", "triton")
    prebuilt: ClassVar[bool] = False  # whether its kernels can be compiled ahead and run without Triton (kernel_spec)
    variants: ClassVar[tuple[str, ...]] = ("",)  # the lowerings each case runs in ('' is Triton's own)

    def warm_up(self) -> None:
        """Triton's compiler and the probes imported, and this Triton build hashed for the kernel cache and Triton's
        own (0.7 to 1.7 s on an H100 machine): no thread, no CUDA."""
        single_threaded_mlir()
        try:
            import triton.compiler.compiler  # noqa: F401

            from layoutfuzz.gpu import gluon_probes  # noqa: F401
            from layoutfuzz.gpu.kernel_cache import cache_folder
        except ImportError:
            return
        cache_folder()

    def warm_up_worker(self) -> None:
        """The worker's CUDA context, and for kernels launched through Triton's JIT torch's CUDA state too (0.9 s a
        worker on an H100 machine: its device count through NVML, then ``torch._C._cuda_init``), begun on a thread."""
        if self.prebuilt:
            super().warm_up_worker()
            return
        threading.Thread(target=quietly, args=(_torch_on_device,), name="CUDA context", daemon=True).start()

    def availability(self) -> Availability:
        folder = active_folder()
        if folder is None:
            missing = self.compile_support()
            return Availability(False, missing) if missing else super().availability()
        if not self.prebuilt:
            return Availability(False, "its kernels run through Triton's JIT only: none are compiled ahead")
        if not folder.is_dir():
            return Availability(False, f"no prebuilt kernels in {folder}")
        if not (folder / self.name).is_dir():
            return Availability(False, f"no {self.name} kernels in {folder}: compile them with `layoutfuzz kernels`")
        return cuda_device_availability(9, ("cuda.core",))

    def compile_support(self) -> str | None:
        """Why this process's Triton cannot compile the target's kernels (a Gluon operation it lacks), or None."""
        return None

    def versions(self) -> Mapping[str, str]:
        folder = active_folder()
        extra = {"kernels compiled by": f"triton {folder_version(folder)}"} if folder is not None else {}
        return {**super().versions(), **extra}

    def kernel_spec(self, case: Case) -> KernelSpec:
        """The kernel case ``case`` runs (needs Triton)."""
        raise NotImplementedError

    def front_end_spec(self, case: Case) -> KernelSpec:
        """``kernel_spec``, where Gluon's own constructors refusing the case's layouts (an exception raised inside
        Triton) is the front end's answer: ``Rejected``, as a compiler's refusal is."""
        try:
            return self.kernel_spec(case)
        except Exception as exc:
            if not raised_in_triton(exc):
                raise
            raise Rejected(compile_error(exc, "")) from exc

    def compile(self, case: Case, variant: str = "") -> CompiledKernel:
        """The case's kernel compiled for sm_90a by this process's Triton, on any machine, in its own
        lowering or the lowering ``variant`` (``harness.triton_compat.lowering``), or the compiler's
        error (as ``rejected``)."""
        import triton

        from layoutfuzz.harness.triton_compat.lowering import recompile

        single_threaded_mlir()
        try:
            spec = self.front_end_spec(case)
        except Rejected as exc:
            return CompiledKernel("?", triton.__version__, rejected=str(exc))
        written = self.direct_ttgir(case, spec)
        first = _written_compile(spec, written)  # outside the capture: a failed attempt's diagnostics are not the answer
        diagnostics: list[str] = []
        try:
            with stderr_text() as diagnostics:
                compiled = first
                if compiled is None:  # through Gluon's frontend (checking the written TTGIR where there is one)
                    compiled = compile_for_sm90(spec.kernel, spec.signature, spec.constexprs, spec.num_warps, spec.num_ctas)
                    if written is not None:
                        _DIRECT.check(spec.kernel.__name__, written, compiled.asm["ttgir"])
                if variant:
                    compiled = recompile(compiled, variant)
        except Exception as exc:
            return CompiledKernel(getattr(spec.kernel, "__name__", "?"), triton.__version__,
                                  rejected=refusal(exc, "".join(diagnostics)))
        return from_triton(compiled)

    def direct_ttgir(self, case: Case, spec: KernelSpec | None = None) -> str | None:
        """The case's kernel as TTGIR written without Gluon's frontend (``gpu.direct_ttgir``), where this target has
        such a writer (``spec``: its ``kernel_spec`` where the caller has it); None compiles through Gluon."""
        return None

    def kernel_for(self, case: Case, variant: str = "") -> CompiledKernel | None:
        """The case's kernel in Triton's own lowering or the lowering ``variant``: prebuilt (``$LAYOUTFUZZ_KERNELS``),
        else from the kernel cache (compiled by this Triton on a miss) where the target's kernels take only pointers;
        None where Triton's JIT launches it (or with ``$LAYOUTFUZZ_TRITON_JIT=1``). ``Rejected`` where the compiler
        refused it. Asked before any buffer is made, a new worker's first compile overlaps its CUDA context's
        making (``warm_up_worker``)."""
        folder = active_folder()
        if folder is None and not variant and (not self.prebuilt or through_jit()):
            return None
        if folder is None:
            kernel = self.cached(case, variant)
        else:
            path = kernel_path(folder, self.name, variant_params(case.params, variant))
            if not path.is_file():
                raise Unsupported(f"no kernel of this case in {folder}: compile it with `layoutfuzz kernels`")
            kernel = CompiledKernel.from_json(path.read_text())
        if kernel.rejected:
            raise Rejected(kernel.rejected)
        return kernel

    def cached(self, case: Case, variant: str = "") -> CompiledKernel:
        """The case's kernel in lowering ``variant`` from the kernel cache (``gpu.kernel_cache``), compiled by this
        process's Triton on a miss."""
        path = kernel_path(cache_folder(), self.name, variant_params(case.params, variant))
        return cached_kernel(path, lambda: self.compile(case, variant))

    def execute(self, case: Case, *buffers: Any, variant: str = "", kernel: CompiledKernel | None = None) -> None:
        """Runs the case's kernel (``kernel``, else ``kernel_for``'s) once on ``buffers`` (its pointer arguments)."""
        kernel = kernel or self.kernel_for(case, variant)
        if kernel is None:
            spec = self.front_end_spec(case)
            clusters = {"num_ctas": spec.num_ctas} if spec.num_ctas > 1 else {}
            self.launch(spec.kernel, *buffers, **spec.constexprs, num_warps=spec.num_warps, **clusters)
            return
        cubin_launcher().launch(kernel, *buffers)

    def observed(self, case: Case) -> Any:
        try:
            return self.on_device(lambda: self.run(case))
        except Rejected as exc:
            return {"rejected": str(exc)}

    def run(self, case: Case) -> Any:
        """Compile and run case ``case`` on the device; what ``expected`` predicts."""
        raise NotImplementedError

    @staticmethod
    def launch(kernel: Any, *args: Any, **kwargs: Any) -> Any:
        """``kernel[(1,)](*args, **kwargs)`` then a synchronize (one cluster of ``num_ctas`` CTAs, where given); returns
        the compiled kernel."""
        import torch

        from layoutfuzz.gpu.device import DeviceFault

        diagnostics: list[str] = []
        try:
            with stderr_text() as diagnostics:
                compiled = kernel[(1,)](*args, **kwargs)
        except Exception as exc:  # compilation happens before the launch: the device is untouched
            raise Rejected(refusal(exc, "".join(diagnostics))) from exc
        try:
            torch.cuda.synchronize()
        except RuntimeError as exc:
            raise DeviceFault(str(exc)) from exc
        return compiled

    def compare(self, case: Case, expected: Any, observed: Any) -> Comparison:
        if isinstance(observed, dict) and "rejected" in observed:
            why = observed["rejected"]
            # the signature without what varies between cases of one cause (numbers: a crash's basis and dim)
            return Comparison(False, 1, (why,), "rejected: " + normalise(why), "Triton rejected a kernel the oracle calls valid")
        return self.compare_results(case, expected, observed)

    def compare_results(self, case: Case, expected: Any, observed: Any) -> Comparison:
        """Each output of the probe (``data_mismatches``, ``placement``) is its own root cause: mismatches by field."""
        return compare_values(expected, observed, by_field=True)


_DIRECT = DirectTtgir()  # this process's trust in each probe's written TTGIR


def _written_compile(spec: KernelSpec, written: str | None) -> Any:
    """The kernel compiled from its written TTGIR where that is trusted for its probe (``gpu.direct_ttgir``);
    None where it goes through Gluon: no written TTGIR, not yet or no longer trusted, a check due, or a compile
    that failed (Gluon's own compile then gives the error, with its source locations)."""
    if written is None or not _DIRECT.wanted(spec.kernel.__name__):
        return None
    try:
        return compile_ttgir(written, spec.kernel.__name__, spec.num_warps, spec.num_ctas)
    except Exception:
        return None


def refusal(exc: BaseException, diagnostics: str) -> str:
    """Why the compiler refused a kernel (``compile_error``), or, where the kernel calls an operation this release's
    Gluon lacks, that ``AttributeError``'s line from anywhere in the exception's chain: a function the kernel calls
    fails as a ``CompilationError`` of the call, whose last line is only the caret under it."""
    chain: list[BaseException] = []
    link: BaseException | None = exc
    while link is not None and link not in chain and len(chain) < 16:
        chain.append(link)
        missing = [line.strip() for line in str(link).splitlines() if MISSING_OP.search(line)]
        if missing:
            return f"{type(link).__name__}: {missing[-1]}"
        link = link.__cause__ or link.__context__
    return compile_error(exc, diagnostics)


def raised_in_triton(exc: BaseException) -> bool:
    """Whether ``exc`` was raised inside the triton package (its innermost frame)."""
    frames = traceback.extract_tb(exc.__traceback__)
    return bool(frames) and f"{os.sep}triton{os.sep}" in frames[-1].filename


def compile_for_sm90(kernel: Any, signature: Mapping[str, str], constexprs: Mapping[str, Any], num_warps: int,
                     num_ctas: int = 1) -> Any:
    """Compile a Gluon kernel for sm_90a without a device, as a launch with 16-byte aligned buffers
    compiles it (pointer arguments marked ``tt.divisibility`` 16, as Triton's JIT marks torch tensors), for a
    cluster of ``num_ctas`` CTAs."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    names = list(getattr(kernel, "arg_names", [])) or [*signature, *constexprs]
    signature = {**signature, **{name: "constexpr" for name in constexprs}}
    signature = {name: signature[name] for name in names if name in signature}
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(signature) if signature[name].startswith("*")}
    return triton.compile(GluonASTSource(kernel, signature, dict(constexprs), attrs), target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": num_warps, "num_ctas": num_ctas})


def gluon_layout(layout: LinearLayout, shape: list[int]):
    from triton.experimental.gluon import language as ttgl

    bases = {n: [list(b) for b in bs] for n, bs in layout.in_dims}
    return ttgl.DistributedLinearLayout(bases.get("register", []), bases.get("lane", []), bases.get("warp", []),
                                        bases.get("block", []), list(shape))


def _permuted(source: Source, layout: LinearLayout, dims: tuple[str, ...]) -> LinearLayout:
    """``layout`` with the bases of ``dims`` shuffled among those dims (sizes kept)."""
    bases = {n: list(bs) for n, bs in layout.in_dims}
    pool = [b for d in dims for b in bases[d]]
    order = permutation(source, len(pool))
    shuffled = [pool[i] for i in order]
    for d in dims:
        count = len(bases[d])
        bases[d], shuffled = shuffled[:count], shuffled[count:]
    return LinearLayout(tuple((n, tuple(bases[n])) for n, _ in layout.in_dims), layout.out_dims)


