"""tma.encode on the device (marked gpu): the driver's answers through cuda.bindings and one layer down (ctypes on
libcuda), and the documented refusals the driver keeps."""

from __future__ import annotations

import pytest

from layoutfuzz.generators.source import source_for
from layoutfuzz.generators.tensor_map import tiled_encoding


@pytest.mark.gpu
def test_the_bindings_give_the_drivers_answer_from_rank_2():
    # cuda.bindings answers as the driver does (ctypes on libcuda, every array a real pointer) from rank 2; at rank 1 it
    # refuses what the driver accepts (docs/findings.md), which is why tma.encode asks the driver through ctypes
    from layoutfuzz.gpu.targets.tma_encode import encode, encode_raw

    cases = [tiled_encoding(source_for("tma.encode", 9, i)) for i in range(800)]
    answers = [(len(p["global_dims"]), encode(p) == "", encode_raw(p) == "") for p in cases]
    assert all(bindings == driver for rank, bindings, driver in answers if rank >= 2)
    assert 100 < sum(driver for _, _, driver in answers) < 700  # both answers occur
    rank1 = [(bindings, driver) for rank, bindings, driver in answers if rank == 1]
    assert rank1 and not any(bindings for bindings, _ in rank1) and any(driver for _, driver in rank1)


@pytest.mark.gpu
def test_the_driver_refuses_every_documented_refusal_but_one():
    # every rule broken on purpose is refused, except interleave 32B without swizzle 32B, which this driver accepts
    # (docs/results/tensor-maps.md): that disagreement is tma.encode's finding, not a pass
    from layoutfuzz.gpu.device import compute_capability
    from layoutfuzz.gpu.targets.tma_encode import encode, encoding_of
    from layoutfuzz.oracles.tensor_map import encoding_problems

    accepted = {}
    for i in range(3000):
        p = tiled_encoding(source_for("tma.encode", 4, i))
        if p["broken"]:
            assert encoding_problems(encoding_of(p), compute_capability())
            accepted.setdefault(p["broken"], []).append(encode(p) == "")
    assert len(accepted) == 16
    for broken, answers in accepted.items():
        if broken == "interleave 32B without swizzle 32B":
            assert any(answers)
        else:
            assert not any(answers), broken


@pytest.mark.gpu
def test_the_oracle_gives_the_drivers_answer_on_every_unbroken_encoding():
    # with its two observed rules (the sm_100 swizzles; a box of at most 228 KiB) the oracle predicts the driver on
    # every encoding drawn without a broken rule: both answers occur, and none differs
    from layoutfuzz.gpu.device import compute_capability
    from layoutfuzz.gpu.targets.tma_encode import encode_raw, encoding_of
    from layoutfuzz.oracles.tensor_map import encoding_problems

    answers = []
    for i in range(4000):
        p = tiled_encoding(source_for("tma.encode", 6, i))
        if not p["broken"]:
            predicted = not encoding_problems(encoding_of(p), compute_capability())
            answers.append((predicted, encode_raw(p) == ""))
    assert all(predicted == driver for predicted, driver in answers)
    assert any(driver for _, driver in answers) and not all(driver for _, driver in answers)
