"""Interleaved TMA copies (CU_TENSOR_MAP_INTERLEAVE_16B/32B): the oracle's observed rules (``oracles.tma_copy``) against
every window and store an H100 produced in the exploration that found them (tests/data/interleave-h100.npz: 512 copies,
driver 580.159.04, recorded 2026-11-25 with .whl-style probes: 394 loads on a grid of box sizes, strides, bounds and
swizzles, 84 random loads and 34 random stores of rank 3-5)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from layoutfuzz.generators.case import Case
from layoutfuzz.harness.target import make_case
from layoutfuzz.oracles.linear_layout import LayoutError
from layoutfuzz.oracles.tma import SwizzleMode, TiledBox
from layoutfuzz.oracles.tma_copy import TensorCopy, loaded_window, stored_tensor

DATA = Path(__file__).parent / "data" / "interleave-h100.npz"
GUARD = 16384  # the probes' bytes before each tensor
FILL = 0xA5  # the probes' untouched shared-memory byte


def _words(size: int, mark: int = 0) -> np.ndarray:
    """The probes' data: every 4-byte word its own offset (or'ed with ``mark``)."""
    return (np.arange(size // 4, dtype=np.uint32) * 4 | np.uint32(mark)).view(np.uint8).copy()


def _copies():
    data = np.load(DATA)
    for k, p in enumerate(json.loads(data["params"].tobytes())):
        box = TiledBox(tuple(p["box_dims"]), p["element_bytes"], tuple(p["element_strides"]), SwizzleMode.from_cuda(p["swizzle"]),
                       p["dst"], p["interleave"])
        yield p, TensorCopy(box, tuple(p["global_dims"]), tuple(p["global_strides"]), tuple(p["coords"]), p["direction"]), data[f"c{k}"]


def test_the_oracle_gives_every_window_and_store_the_h100_made():
    counts = {"load": 0, "store": 0}
    for p, copy, observed in _copies():
        tensor_bytes = copy.global_bytes
        if copy.direction == "load":
            region = _words(GUARD + tensor_bytes + GUARD)
            expected = loaded_window(copy, region[GUARD:], 32768, FILL)
            assert np.array_equal(expected[:observed.size], observed), p
            assert not (expected[observed.size:] != FILL).any(), p  # nothing past what the device wrote
            assert int((expected != FILL).sum()) == copy.box.size_bytes, p  # the transaction count: every byte written
        else:
            # the tensor (with rows whose strides overlap, past its end) and 256 guard bytes each side
            before = np.full(observed.size, FILL, np.uint8)
            after = before.copy()
            after[256:] = stored_tensor(copy, _words(32768, 0x80000000), before[256:])
            assert np.array_equal(after, observed), p
        counts[copy.direction] += 1
    assert counts == {"load": 478, "store": 34}


def test_dim_0_counts_slices_and_dim_rank_minus_2_is_not_traversed():
    # worked by hand from the device's windows: a [4, 2, 2] box of 4-byte elements, 16B interleave, moves 2 rows of
    # 4 slices (16 bytes each): dim 1 (rank - 2) stays at its start, dim 2 steps
    box = TiledBox((4, 2, 2), 4, (1, 1, 1), SwizzleMode.NONE, 0, 1)
    assert box.loaded_dims == (4, 1, 2) and box.unit_bytes == 16 and box.size_bytes == 128
    copy = TensorCopy(box, (64, 16, 16), (2048, 32768), (0, 0, 0))
    window = loaded_window(copy, _words(32768 * 16), 256, FILL).view(np.uint32)
    assert window[::4][:8].tolist() == [0, 16, 32, 48, 32768, 32784, 32800, 32816]
    assert TiledBox((4, 2, 2), 4, (1, 1, 1), SwizzleMode.B32, 0, 2).unit_bytes == 32


def test_interleaved_boxes_keep_the_drivers_rules():
    with pytest.raises(LayoutError, match="16-byte units"):  # observed: the driver refuses the others
        TiledBox((6, 2, 2), 2, (1, 1, 1), SwizzleMode.NONE, 0, 1)
    with pytest.raises(LayoutError, match="rank"):  # cuda.h: interleave needs rank 3 or more
        TiledBox((8, 2), 2, (1, 1), SwizzleMode.NONE, 0, 1)
    with pytest.raises(LayoutError, match="32B"):  # cuda.h: interleave 32B needs swizzle 32B
        TiledBox((8, 2, 2), 2, (1, 1, 1), SwizzleMode.B64, 0, 2)
    TiledBox((8, 2, 2), 2, (3, 1, 1), SwizzleMode.B128, 0, 1)  # dim 0's element stride is allowed with interleave


def test_tma_copy_draws_interleaved_copies_its_validate_and_oracle_accept():
    from layoutfuzz.gpu.targets.tma_copy import TmaCopy, _refusal, copy_from_params, expected_result

    target = TmaCopy()
    kinds = set()
    for i in range(800):
        case = make_case(target, 0, i)
        if not case.params.get("interleave"):
            continue
        target.validate(case)
        copy = copy_from_params(case.params)
        assert not _refusal(copy), case.params  # a map the driver accepts (cuda.h and the observed rule)
        expected_result(copy)
        kinds.add((case.params["interleave"], case.params["direction"], len(case.params["box_dims"])))
        for smaller in target.shrink(case):  # a reduction's candidates are cases or refused, never a crash
            try:
                target.validate(Case(target.name, 0, 0, smaller))
            except ValueError:
                pass
    assert kinds == {(i, d, r) for i in (1, 2) for d in ("load", "store") for r in (3, 4, 5)}
