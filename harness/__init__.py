"""The campaign machinery: target interface, registry, isolated runner and CLI."""

from layoutfuzz.harness.compare import Comparison, compare_values
from layoutfuzz.harness.target import Availability, Outcome, Target, Unsupported

__all__ = ["Availability", "Comparison", "Outcome", "Target", "Unsupported", "compare_values"]
