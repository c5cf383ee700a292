"""Ground truth for layoutfuzz: pure Python/NumPy models of layouts (no Triton, torch or CUDA)."""

from layoutfuzz.oracles.linear_layout import LayoutError, LinearLayout

__all__ = ["LayoutError", "LinearLayout"]
