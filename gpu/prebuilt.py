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
    launch_pdl: bool = False  # Triton's metadata: launched with programmatic stream serialization
    launch_cooperative_grid: bool = False  # Triton's metadata: launched as a cooperative grid

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
        launch_pdl=bool(getattr(md, "launch_pdl", False)), launch_cooperative_grid=bool(getattr(md, "launch_cooperative_grid", False)),
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


SHARED_OPT_IN = 49152  # past this, Triton's loadBinary opts the function in to more dynamic shared memory
SPREAD = 1  # CU_CLUSTER_SCHEDULING_POLICY_SPREAD


@dataclass(frozen=True)
class LaunchSettings:
    """What Triton's launcher sets to launch a kernel once (one program, ``grid = (1,)``), as 3.6.0 to 3.9.0 write it
    (``backends/nvidia/driver.c``: ``loadBinary`` for the function, ``_launch`` for ``cuLaunchKernelEx``): the grid of
    ``num_ctas`` CTAs of ``32 * num_warps`` threads, the kernel's shared memory as dynamic shared memory, the launch
    attributes in Triton's order (programmatic stream serialization and a cooperative grid where the metadata asks;
    the cluster's dimension and SPREAD scheduling over a cluster), and the function's attributes: past 48 KiB of
    shared memory the shared-memory cache preference and all the dynamic shared memory the device opts in to, less the
    function's static part; a cluster of 16 CTAs allowed past the portable size. (3.9.0 first asks for the driver's
    oversized-shared-memory mode, which needs more than an H100's 227 KiB, and falls back to the same opt-in.)"""

    grid: int
    block: int
    shared: int
    attributes: tuple[tuple[str, int], ...]  # CU_LAUNCH_ATTRIBUTE_<name>, value
    function_attributes: tuple[tuple[str, int], ...]  # CU_FUNC_ATTRIBUTE_<name>, value
    prefer_shared: bool  # cuFuncSetCacheConfig(CU_FUNC_CACHE_PREFER_SHARED)


def launch_settings(kernel: CompiledKernel, shared_opt_in: int, shared_static: int) -> LaunchSettings:
    """Triton's launch of ``kernel`` on a device that opts a function in to ``shared_opt_in`` bytes of shared memory per
    block, the function holding ``shared_static`` bytes of static shared memory."""
    attributes = []
    if kernel.launch_pdl:
        attributes.append(("PROGRAMMATIC_STREAM_SERIALIZATION", 1))
    if kernel.launch_cooperative_grid:
        attributes.append(("COOPERATIVE", 1))
    if kernel.num_ctas != 1:
        attributes += [("CLUSTER_DIMENSION", kernel.num_ctas), ("CLUSTER_SCHEDULING_POLICY_PREFERENCE", SPREAD)]
    opt_in = kernel.shared > SHARED_OPT_IN and shared_opt_in > SHARED_OPT_IN
    function = [("MAX_DYNAMIC_SHARED_SIZE_BYTES", shared_opt_in - shared_static)] if opt_in else []
    if kernel.num_ctas == 16:
        function.append(("NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1))
    return LaunchSettings(kernel.num_ctas, 32 * kernel.num_warps, kernel.shared, tuple(attributes), tuple(function), opt_in)


class CubinLauncher:
    """Launches prebuilt kernels on the current device as Triton's launcher does (``launch_settings``), without Triton
    or torch: the cubin loaded through cuda.core, the launch through the driver's ``cuLaunchKernelEx`` (cuda.core takes
    no structs, and no scheduling policy). Buffers are anything with a ``data_ptr()`` (``gpu.device_arrays``, or torch
    tensors), passed by address; ``HostTensorDescriptor``s as Triton's launcher expands them."""

    def __init__(self) -> None:
        from cuda.core import Device

        self.device = Device()
        self.device.set_current()
        self.stream = self.device.create_stream()
        self.loaded: OrderedDict[bytes, Any] = OrderedDict()  # the last LOADED_MODULES functions, oldest first

    def function(self, kernel: CompiledKernel) -> Any:
        """The kernel's ``CUfunction`` in this context, loaded and set up as Triton's ``loadBinary`` sets it up."""
        key = hashlib.sha1(kernel.cubin).digest()
        if key in self.loaded:
            self.loaded.move_to_end(key)
            return self.loaded[key][1]
        while len(self.loaded) >= LOADED_MODULES:  # a night loads thousands: the oldest module is unloaded
            self.loaded.popitem(last=False)
        from cuda.bindings import driver
        from cuda.core import ObjectCode

        code = ObjectCode.from_cubin(kernel.cubin).get_kernel(kernel.name)  # held: the function lives in its library
        function = code._handle
        if isinstance(function, driver.CUkernel):  # cuda.core loads a library: its kernel's function in this context
            err, function = driver.cuKernelGetFunction(function)
            _checked(err, "cuKernelGetFunction")
        settings = self.settings(kernel, function)
        for name, value in settings.function_attributes:
            (err,) = driver.cuFuncSetAttribute(function, getattr(driver.CUfunction_attribute, f"CU_FUNC_ATTRIBUTE_{name}"), value)
            _checked(err, f"cuFuncSetAttribute {name}")
        if settings.prefer_shared:
            (err,) = driver.cuFuncSetCacheConfig(function, driver.CUfunc_cache.CU_FUNC_CACHE_PREFER_SHARED)
            _checked(err, "cuFuncSetCacheConfig")
        self.loaded[key] = (code, function)
        return function

    def settings(self, kernel: CompiledKernel, function: Any) -> LaunchSettings:
        """``launch_settings`` for this device and ``function``'s static shared memory."""
        from cuda.bindings import driver

        err, opt_in = driver.cuDeviceGetAttribute(
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, self.device.device_id)
        _checked(err, "cuDeviceGetAttribute")
        err, static = driver.cuFuncGetAttribute(driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function)
        _checked(err, "cuFuncGetAttribute")
        return launch_settings(kernel, opt_in, static)

    def launch(self, kernel: CompiledKernel, *arguments: Any) -> None:
        """One program of ``kernel`` (a cluster of ``num_ctas`` CTAs, or one CTA) over ``arguments`` (the kernel's own
        arguments, in order: buffers, anything with a ``data_ptr()``, passed by address, and ``HostTensorDescriptor``s,
        expanded as Triton's launcher expands them), waited for. Scratch buffers Triton asked for are allocated (one
        share per CTA, as Triton's launcher sizes them); absent ones are null."""
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
            self._launch(kernel, values)
            self.stream.sync()
        except Exception as exc:
            raise DeviceFault(f"{type(exc).__name__}: {exc}") from exc

    def _launch(self, kernel: CompiledKernel, values: list[Any]) -> None:
        """``cuLaunchKernelEx`` with ``launch_settings``, each value packed at its entry parameter's width (a kernel
        file from before parameter types were kept takes only pointers)."""
        import ctypes

        from cuda.bindings import driver

        types = kernel.param_types or ("u64",) * kernel.params
        if len(types) != len(values):
            raise ValueError(f"{kernel.name}: {len(values)} values for the parameters {types} (a kernel file from before "
                             "parameter types were kept: compile it again)")
        cells = [_packed(kind, value) for kind, value in zip(types, values)]
        pointers = (ctypes.c_void_p * len(cells))(*(ctypes.addressof(c) for c in cells))
        function = self.function(kernel)
        settings = self.settings(kernel, function)
        config = driver.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = settings.grid, 1, 1
        config.blockDimX, config.blockDimY, config.blockDimZ = settings.block, 1, 1
        config.sharedMemBytes = settings.shared
        config.hStream = self.stream.handle
        attributes = [_attribute(name, value) for name, value in settings.attributes]
        config.attrs, config.numAttrs = attributes, len(attributes)
        (err,) = driver.cuLaunchKernelEx(config, function, ctypes.addressof(pointers), 0)
        _checked(err, "cuLaunchKernelEx")


def _attribute(name: str, value: int) -> Any:
    """A ``CUlaunchAttribute`` of ``launch_settings``: the cluster's dimension along x, or a scalar value."""
    from cuda.bindings import driver

    attribute = driver.CUlaunchAttribute()
    attribute.id = getattr(driver.CUlaunchAttributeID, f"CU_LAUNCH_ATTRIBUTE_{name}")
    if name == "CLUSTER_DIMENSION":
        attribute.value.clusterDim.x, attribute.value.clusterDim.y, attribute.value.clusterDim.z = value, 1, 1
    elif name == "CLUSTER_SCHEDULING_POLICY_PREFERENCE":
        attribute.value.clusterSchedulingPolicyPreference = driver.CUclusterSchedulingPolicy(value)
    elif name == "PROGRAMMATIC_STREAM_SERIALIZATION":
        attribute.value.programmaticStreamSerializationAllowed = value
    else:
        attribute.value.cooperative = value
    return attribute


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
