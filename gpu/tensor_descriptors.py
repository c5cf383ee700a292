"""Host-side tensor descriptors for prebuilt kernels: what Triton's launcher passes for a ``TensorDescriptor``
argument, rebuilt without Triton, so that kernels taking descriptors, compiled on a CPU by any Triton, run on the GPU
machine (which has only one Triton).

Triton 3.6.0 to 3.9.0 expand a descriptor the same way (``backends/nvidia/driver.py``, ``make_tensordesc_arg`` and
``expand_signature``): the 128-byte ``CUtensorMap`` by value, then the shape as ``i32`` and the strides (in
elements) as ``i64``. The tensor map is ``fill_tma_descriptor_tiled``'s encoding (``driver.c``): the kernel's
``tensordesc_meta`` gives the swizzle, element type and box; dims and strides are reversed to innermost first, every
element stride is 1, no interleave, L2 promotion 128B, and the out-of-bound fill NaN for ``padding="nan"``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# triton/backends/nvidia/driver.py (3.6.0 to 3.9.0): the TMA element-type enum differs between device and host
DEVICE_TO_HOST_DTYPE = {**{i: i for i in range(16)}, 8: 10, 9: 8, 10: 9}
L2_PROMOTION_128B = 2  # CU_TENSOR_MAP_L2_PROMOTION_L2_128B, as driver.c encodes
NAN_FILL = 1  # CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA


@dataclass(frozen=True)
class HostTensorDescriptor:
    """A tensor in device memory as a kernel's descriptor argument: its base (anything with ``data_ptr()``), its
    shape and its strides in elements (outermost first, as Triton's ``TensorDescriptor``), and the padding of reads
    past its bounds ("zero" or "nan")."""

    base: Any
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    padding: str = "zero"


def tiled_encoding(descriptor: HostTensorDescriptor, meta: Mapping[str, Any]) -> Any:
    """The ``cuTensorMapEncodeTiled`` arguments Triton's launcher would pass for ``descriptor`` in a kernel whose
    metadata for it is ``meta`` (one entry of ``tensordesc_meta``)."""
    from layoutfuzz.oracles.tensor_map import TiledEncoding

    if meta.get("is_im2col") or meta.get("fp4_padded"):
        raise NotImplementedError("im2col and padded fp4 descriptors are not rebuilt without Triton")
    if descriptor.strides[-1] != 1:
        raise ValueError("the innermost stride of a tensor descriptor is 1")
    size = int(meta["elem_size"])
    dims = tuple(reversed(descriptor.shape))
    strides = tuple(size * s for s in reversed(descriptor.strides[:-1]))
    box = tuple(reversed(meta["block_size"]))
    return TiledEncoding(DEVICE_TO_HOST_DTYPE[int(meta["elem_type"])], int(descriptor.base.data_ptr()), dims, strides, box,
                         (1,) * len(dims), interleave=0, swizzle=int(meta["swizzle"]), l2_promotion=L2_PROMOTION_128B,
                         oob_fill=NAN_FILL if descriptor.padding == "nan" else 0)


def expanded(descriptor: HostTensorDescriptor, meta: Mapping[str, Any]) -> list[Any]:
    """The kernel parameters of one descriptor argument: the tensor map (16 uint64 words, from the driver), then the
    shape and the strides as Python ints (their widths are the kernel's entry's)."""
    from layoutfuzz.gpu.tma_driver import encode_tensor_map

    return [encode_tensor_map(tiled_encoding(descriptor, meta)), *descriptor.shape, *descriptor.strides]


def encoded_maps(metas: Any) -> list[dict[str, Any]]:
    """What a kernel's ``tensordesc_meta`` says Triton encodes for each descriptor: the swizzle mode and the box, as the
    targets compare them with their oracles."""
    return [{"swizzle": m["swizzle"], "block_size": list(m["block_size"])} for m in metas]
