"""Recorded ground truth shipped with the harness: what an H200 and an H100 did (``python -m layoutfuzz.gpu.record``) and
the worked examples of the seeds. ``layoutfuzz selftest`` and the tests replay them."""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent


def load(name: str) -> dict:
    return json.loads((HERE / name).read_text())


HW_TMA = load("hw_tma_h200.json")  # 400 TMA copies: params and the window's SHA-256 (or the refusal)
HW_WGMMA = load("hw_wgmma_h200.json")  # 400 f16 operand reads: the SHA-256 of the addresses read
HW_WGMMA_TYPES = load("hw_wgmma_types_h200.json")  # 400 reads over every wgmma type
HW_CONVERT = load("hw_convert_h100.json")  # 200 Gluon convert_layouts (H100): which thread held each element
SEED004_TABLES = load("seed004_tma_tables.json")  # 5.5.7's destination tables
