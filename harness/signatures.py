"""Root-cause signatures moved to ``reports.signatures``, beside the bucket keys they make."""

from layoutfuzz.reports.signatures import (  # noqa: F401  re-exported: moved to reports.signatures
    compile_error,
    crash_signature,
    divergence_signature,
    first_error,
    native_fatal_lines,
    normalise,
    root_cause,
    top_frames,
)
