"""``gpu/guards.py``: the poison values are NaNs of their types by the formats' own definitions, and (with torch, on any
device) a guarded output catches a write past it, byte for byte, while its own bytes stay free to write."""

from __future__ import annotations

import pytest

from layoutfuzz.gpu.guards import CANARY, GUARD_BYTES, INTEGER_POISON, NAN_BYTES

# (exponent bits, mantissa bits) of each IEEE-style format: a NaN is the exponent all ones and a non-zero mantissa
IEEE = {"float16": (5, 10), "bfloat16": (8, 7), "float32": (8, 23), "float64": (11, 52), "float8_e5m2": (5, 2)}


@pytest.mark.parametrize("name", sorted(NAN_BYTES))
def test_each_float_poison_is_a_nan_of_its_format(name):
    raw = int.from_bytes(NAN_BYTES[name], "little")
    if name == "float8_e4m3fn":  # OCP FP8 E4M3: S.1111.111 is its only NaN (no infinities)
        assert raw & 0x7F == 0x7F
        return
    exponent_bits, mantissa_bits = IEEE[name]
    assert len(NAN_BYTES[name]) * 8 == 1 + exponent_bits + mantissa_bits
    exponent = raw >> mantissa_bits & ((1 << exponent_bits) - 1)
    assert exponent == (1 << exponent_bits) - 1 and raw & ((1 << mantissa_bits) - 1) != 0


def test_integer_poison_and_canary_are_not_identities():
    assert len(set(INTEGER_POISON)) == len(INTEGER_POISON) and 0 not in INTEGER_POISON and 1 not in INTEGER_POISON
    assert CANARY not in (0, 0xFF) and GUARD_BYTES % 256 == 0


def test_a_guarded_output_catches_a_write_past_it_and_not_into_it():
    torch = pytest.importorskip("torch", reason="needs torch (the [gpu] extra); CPU tensors are enough")
    from layoutfuzz.gpu.guards import GuardFault, guarded_input, guarded_output

    out = guarded_output(torch.zeros(10, dtype=torch.int32), "d")
    out.tensor[:] = 7  # the tensor's own 40 bytes
    out.check()
    assert out.tensor.data_ptr() % 256 == out.buffer.data_ptr() % 256
    for offset in (GUARD_BYTES + 40, GUARD_BYTES - 1, out.buffer.numel() - 1):  # just past, just before, the far end
        out.buffer[offset] ^= 1
        with pytest.raises(GuardFault, match="wrote past its output d: 1 guard bytes"):
            out.check()
        out.buffer[offset] ^= 1
    half = guarded_input(torch.arange(6, dtype=torch.float16).view(2, 3), "a")
    assert half.tensor.tolist() == [[0, 1, 2], [3, 4, 5]]
    after = half.buffer[GUARD_BYTES + 12:GUARD_BYTES + 16].view(torch.float16)
    assert after.isnan().all()  # a read just past the operand reads NaN


def test_a_guard_image_holds_the_data_between_whole_guards_and_its_check_sees_every_byte_outside_it():
    import numpy as np

    from layoutfuzz.gpu.guards import GuardFault, check_guards, guard_image

    data = np.arange(1, 11, dtype=np.int32)  # 40 bytes: padded with the pattern to 256
    whole = guard_image(data, INTEGER_POISON)
    assert whole.size == GUARD_BYTES + 256 + GUARD_BYTES
    assert whole[GUARD_BYTES:GUARD_BYTES + 40].view(np.int32).tolist() == list(range(1, 11))
    outside = np.concatenate([whole[:GUARD_BYTES], whole[GUARD_BYTES + 40:]])
    assert outside.tolist() == list(INTEGER_POISON) * (outside.size // 2)  # 5A A5 5A A5 ... from either end
    whole[GUARD_BYTES:GUARD_BYTES + 40] = 0  # the data's own bytes are free to change
    check_guards(whole, INTEGER_POISON, 40, "d")
    for offset, where in ((GUARD_BYTES - 1, "1 before"), (GUARD_BYTES + 40, "1 after"), (whole.size - 1, f"{whole.size - GUARD_BYTES - 40} after"),
                          (0, f"{GUARD_BYTES} before")):
        whole[offset] ^= 1
        with pytest.raises(GuardFault, match=f"wrote past its output d: 1 guard bytes changed \\({where} it\\)"):
            check_guards(whole, INTEGER_POISON, 40, "d")
        whole[offset] ^= 1
    half = guard_image(np.arange(6, dtype=np.float16), NAN_BYTES["float16"])
    assert np.isnan(half[GUARD_BYTES + 12:GUARD_BYTES + 16].view(np.float16)).all()  # a read just past it reads NaN


def _shifted_copy():
    """A Triton kernel that copies src[i + 1 - SHIFT] to dst[i + SHIFT]: SHIFT 0 reads one past src, 1 writes one past
    dst."""
    import triton
    import triton.language as tl

    @triton.jit
    def shifted_copy(src, dst, N: tl.constexpr, SHIFT: tl.constexpr):
        i = tl.arange(0, N)
        tl.store(dst + i + SHIFT, tl.load(src + i + 1 - SHIFT))

    return shifted_copy


@pytest.mark.gpu
def test_a_device_array_round_trips_reads_poison_past_an_input_and_catches_a_write_past_an_output():
    import numpy as np
    from cuda.core import Device

    from layoutfuzz.gpu.device_arrays import device_input, device_output
    from layoutfuzz.gpu.guards import GuardFault

    shifted_copy = _shifted_copy()
    device = Device()
    device.set_current()
    stream = device.create_stream()
    src = device_input(np.arange(1, 65, dtype=np.float16), "src", stream)
    assert src.data_ptr() % 256 == 0 and src.read(stream).tolist() == list(range(1, 65))
    dst = device_output(np.zeros(64, np.float16), "dst", stream)
    shifted_copy[(1,)](src, dst, N=64, SHIFT=0)  # Triton's JIT takes a DeviceArray as it takes a tensor
    got = dst.read(stream)  # waits for the device (Triton launched on a stream of its own)
    assert got[:63].tolist() == list(range(2, 65)) and np.isnan(got[63])  # the read past src found its NaN
    dst = device_output(np.zeros(64, np.float16), "dst", stream)
    shifted_copy[(1,)](src, dst, N=64, SHIFT=1)
    with pytest.raises(GuardFault, match="wrote past its output dst: 2 guard bytes changed"):
        dst.read(stream)


@pytest.mark.gpu
def test_a_triton_kernel_reading_past_its_input_reads_poison_and_one_writing_past_its_output_is_caught():
    import torch

    from layoutfuzz.gpu.guards import GuardFault, guarded_input, guarded_output

    shifted_copy = _shifted_copy()
    src = guarded_input(torch.arange(1, 65, dtype=torch.float16, device="cuda"), "src")
    dst = guarded_output(torch.zeros(64, dtype=torch.float16, device="cuda"), "dst")
    shifted_copy[(1,)](src.tensor, dst.tensor, N=64, SHIFT=0)
    torch.cuda.synchronize()
    dst.check()  # nothing written past dst
    got = dst.tensor.cpu()
    assert got[:63].tolist() == list(range(2, 65)) and got[63].isnan()  # the read past src found its NaN, not a lucky value
    dst = guarded_output(torch.zeros(64, dtype=torch.float16, device="cuda"), "dst")
    shifted_copy[(1,)](src.tensor, dst.tensor, N=64, SHIFT=1)
    torch.cuda.synchronize()
    with pytest.raises(GuardFault, match="wrote past its output dst: 2 guard bytes changed"):
        dst.check()
