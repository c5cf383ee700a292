"""Kernels compiled anywhere, run without Triton: a Gluon kernel compiled on a CPU by any Triton release
(Triton ships its own ptxas) is kept as its cubin plus what launching it needs, filed by the content
hash of the case it was compiled for; on the GPU machine a small launcher loads it through cuda.core.
So the GPU machine needs no second Triton, compilation runs ahead on many CPU cores, and one GPU
campaign spans versions.

A folder of prebuilt kernels is ``DIR/triton-VERSION/TARGET/KEY.json``; a campaign uses one version's
folder when ``$LAYOUTFUZZ_KERNELS`` names it."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
import zlib
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

LOADED_MODULES = 64  # CUDA modules a launcher keeps loaded
ABI = 2  # bump when what every key covers changes (the arguments the probes take)
# a target's own revision, in its keys where not 0: bump it when its probe's code changes (the cluster loads' barrier of
# each CTA's own, harness.triton_compat.barriers)
REVISIONS = {"triton.tma_cluster": 1, "triton.tma_cluster_multicast": 1}


@dataclass(frozen=True)
class CompiledKernel:
    """A kernel Triton compiled: the cubin, and the launch facts from its metadata and PTX entry.

    ``params`` is the number of parameters of the PTX entry: the kernel's own pointers first, then
    those Triton appends (global and profile scratch, 3.6.0 to 3.9.0), passed as null when their
    size is 0. ``rejected`` holds the compiler's error where it refused the kernel (then no cubin)."""

    name: str
    triton: str
    num_warps: int = 0
    shared: int = 0
    params: int = 0
    global_scratch: int = 0
    profile_scratch: int = 0
    cubin: bytes = b""
    rejected: str = ""
    num_ctas: int = 1  # CTAs of its cluster (Triton's num_ctas): launched as one cluster of that many
    param_types: tuple[str, ...] = ()  # each parameter of its PTX entry ('u32', 'u64', 'b8[128]'); () in older files
    tensor_maps: tuple[dict[str, Any], ...] = ()  # Triton's tensordesc_meta: one per tensor-descriptor argument

    def to_json(self) -> str:
        data = asdict(self)
        data["cubin"] = base64.b64encode(zlib.compress(self.cubin, 6)).decode()  # 9 takes 3x the time for 1% less
        return json.dumps(data, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CompiledKernel:
        data = json.loads(text)
        data["cubin"] = zlib.decompress(base64.b64decode(data["cubin"])) if data.get("cubin") else b""
        for name in ("param_types", "tensor_maps"):
            data[name] = tuple(data.get(name, ()))
        return cls(**data)


def entry_param_types(ptx: str, name: str) -> tuple[str, ...]:
    """The type of each parameter of kernel ``name``'s ``.entry`` in ``ptx``: a scalar's ('u32', 'u64', 'f32'), or
    'b8[N]' for N bytes passed by value (a tensor map: ``.param .align 64 .b8 p[128]``)."""
    match = re.search(rf"\.entry\s+{re.escape(name)}\s*\((.*?)\)", ptx, re.S)
    if not match:
        raise ValueError(f"no .entry {name} in the PTX")
    types = []
    for declaration in re.split(r",", match[1]):
        if not re.search(r"\.param\b", declaration):
            continue
        array = re.search(r"\.b8\s+\w+\s*\[(\d+)\]", declaration)
        scalar = re.search(r"\.param\s+(?:\.align\s+\d+\s+)?\.([busf]\d+)\b", declaration)
        if array:
            types.append(f"b8[{array[1]}]")
        elif scalar:
            types.append(scalar[1])
        else:
            raise ValueError(f"a parameter of {name} of unknown type: {declaration.strip()}")
    return tuple(types)


def entry_params(ptx: str, name: str) -> int:
    """The number of parameters of kernel ``name``'s ``.entry`` in ``ptx``."""
    return len(entry_param_types(ptx, name))


def from_triton(compiled: Any) -> CompiledKernel:
    """What Triton's ``compile`` returned, as a CompiledKernel (runs on any machine)."""
    md = compiled.metadata
    return CompiledKernel(
        name=md.name, triton=str(getattr(md, "triton_version", "")), num_warps=int(md.num_warps),
        num_ctas=int(getattr(md, "num_ctas", 1) or 1), shared=int(md.shared),
        params=entry_params(compiled.asm["ptx"], md.name), param_types=entry_param_types(compiled.asm["ptx"], md.name),
        tensor_maps=tuple(dict(m) for m in getattr(md, "tensordesc_meta", None) or ()),
        global_scratch=int(getattr(md, "global_scratch_size", 0) or 0),
        profile_scratch=int(getattr(md, "profile_scratch_size", 0) or 0), cubin=bytes(compiled.asm["cubin"]))


def kernel_key(target: str, params: dict[str, Any]) -> str:
    """The content hash a case's kernel is filed under: its target and its parameters (which fix the
    kernel's source, constexprs and warps), never the version that compiles it."""
    revision = {"revision": REVISIONS[target]} if target in REVISIONS else {}
    text = json.dumps({"abi": ABI, "target": target, "params": params, **revision}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def kernel_path(folder: str | Path, target: str, params: dict[str, Any]) -> Path:
    return Path(folder) / target / f"{kernel_key(target, params)}.json"


def variant_params(params: Mapping[str, Any], variant: str) -> dict[str, Any]:
    """What a prebuilt kernel of lowering ``variant`` is filed under: the case's params and the variant."""
    return {**params, "lowering": variant} if variant else dict(params)


class CubinLauncher:
    """Launches prebuilt kernels on the current device through cuda.core (no Triton, no torch); buffers are anything
    with a ``data_ptr()`` (``gpu.device_arrays``, or torch tensors), passed by address."""

    def __init__(self) -> None:
        from cuda.core import Device

        self.device = Device()
        self.device.set_current()
        self.stream = self.device.create_stream()
        self.loaded: OrderedDict[bytes, Any] = OrderedDict()  # the last LOADED_MODULES kernels, oldest first

    def _function(self, kernel: CompiledKernel) -> Any:
        key = hashlib.sha1(kernel.cubin).digest()
        if key in self.loaded:
            self.loaded.move_to_end(key)
        else:
            while len(self.loaded) >= LOADED_MODULES:  # a night loads thousands: the oldest module is unloaded
                self.loaded.popitem(last=False)
            from cuda.core import ObjectCode

            from layoutfuzz.gpu.device import allow_dynamic_shared

            function = ObjectCode.from_cubin(kernel.cubin).get_kernel(kernel.name)
            allow_dynamic_shared(function, kernel.shared)  # past the default, the kernel must ask for it
            self.loaded[key] = function
        return self.loaded[key]

    def launch(self, kernel: CompiledKernel, *arguments: Any) -> None:
        """One cluster of ``num_ctas`` CTAs (one CTA, without a cluster, where it is 1) of ``num_warps`` warps over
        ``arguments`` (the kernel's own arguments, in order: buffers, anything with a ``data_ptr()``, passed by
        address, and ``HostTensorDescriptor``s, expanded as Triton's launcher expands them), waited for. Scratch
        buffers Triton asked for are allocated (one share per CTA, as Triton's launcher sizes them); absent ones are
        null."""
        import numpy as np
        from cuda.core import LaunchConfig, launch

        from layoutfuzz.gpu.device import DeviceFault
        from layoutfuzz.gpu.device_arrays import zeros
        from layoutfuzz.gpu.tensor_descriptors import HostTensorDescriptor, expanded

        values: list[Any] = []
        descriptors = iter(kernel.tensor_maps)
        for argument in arguments:
            if isinstance(argument, HostTensorDescriptor):
                meta = next(descriptors, None)
                if meta is None:
                    raise ValueError(f"{kernel.name} was compiled without a tensor map for each descriptor argument")
                values += expanded(argument, meta)
            else:
                values.append(int(argument.data_ptr()))
        extra = kernel.params - len(values)
        if extra < 0:
            raise ValueError(f"{kernel.name} takes {kernel.params} parameters, {len(values)} given")
        scratch = [zeros(size * kernel.num_ctas, self.stream) if size else None
                   for size in (kernel.global_scratch, kernel.profile_scratch)[:extra]]
        values += [int(s.handle) if s is not None else 0 for s in scratch]
        values += [0] * (kernel.params - len(values))
        torch = sys.modules.get("torch")
        if torch is not None and torch.cuda.is_initialized():
            torch.cuda.synchronize()  # buffers filled through torch's stream
        try:
            if any(isinstance(argument, HostTensorDescriptor) for argument in arguments):
                self._launch_by_value(kernel, values)
            else:
                cluster = {"cluster": kernel.num_ctas} if kernel.num_ctas > 1 else {}
                config = LaunchConfig(grid=kernel.num_ctas, block=32 * kernel.num_warps, shmem_size=kernel.shared, **cluster)
                launch(self.stream, config, self._function(kernel), *(np.uint64(v) for v in values))
            self.stream.sync()
        except Exception as exc:
            raise DeviceFault(f"{type(exc).__name__}: {exc}") from exc

    def _launch_by_value(self, kernel: CompiledKernel, values: list[Any]) -> None:
        """A launch whose parameters are not all pointers (a tensor map by value, 32-bit shapes): each value packed
        at its entry parameter's width, through the driver's ``cuLaunchKernelEx`` (cuda.core takes no structs)."""
        import ctypes

        from cuda.bindings import driver

        if len(kernel.param_types) != len(values):
            raise ValueError(f"{kernel.name}: {len(values)} values for the parameters {kernel.param_types} (a kernel "
                             "file from before parameter types were kept: compile it again)")
        cells = [_packed(kind, value) for kind, value in zip(kernel.param_types, values)]
        pointers = (ctypes.c_void_p * len(cells))(*(ctypes.addressof(c) for c in cells))
        function = self._function(kernel)._handle
        if isinstance(function, driver.CUkernel):  # cuda.core loads a library: its kernel's function in this context
            err, function = driver.cuKernelGetFunction(function)
            _checked(err, "cuKernelGetFunction")
        config = driver.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = kernel.num_ctas, 1, 1
        config.blockDimX, config.blockDimY, config.blockDimZ = 32 * kernel.num_warps, 1, 1
        config.sharedMemBytes = kernel.shared
        config.hStream = self.stream.handle
        attributes = []
        if kernel.num_ctas > 1:
            attribute = driver.CUlaunchAttribute()
            attribute.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            attribute.value.clusterDim.x, attribute.value.clusterDim.y, attribute.value.clusterDim.z = kernel.num_ctas, 1, 1
            attributes.append(attribute)
        config.attrs, config.numAttrs = attributes, len(attributes)
        (err,) = driver.cuLaunchKernelEx(config, function, ctypes.addressof(pointers), 0)
        _checked(err, "cuLaunchKernelEx")


def _packed(kind: str, value: Any) -> Any:
    """``value`` as a ctypes object of PTX parameter type ``kind``: 'b8[N]' takes N bytes (a NumPy array's), an
    integer type its width, wrapped to it as the C launcher's cast does."""
    import ctypes

    if kind.startswith("b8["):
        size = int(kind[3:-1])
        data = bytes(memoryview(value).cast("B"))
        if len(data) != size:
            raise ValueError(f"a by-value parameter of {size} bytes given {len(data)}")
        cell = (ctypes.c_uint64 * ((size + 7) // 8))()  # 8-byte aligned storage: the driver copies it to the parameter
        ctypes.memmove(cell, data, size)
        return cell
    bits = int(kind[1:])
    if kind[0] == "f":
        return {32: ctypes.c_float, 64: ctypes.c_double}[bits](value)
    return {8: ctypes.c_uint8, 16: ctypes.c_uint16, 32: ctypes.c_uint32, 64: ctypes.c_uint64}[bits](int(value) % (1 << bits))


def _checked(err: Any, what: str) -> None:
    from cuda.bindings import driver

    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{what}: {err.name}")
