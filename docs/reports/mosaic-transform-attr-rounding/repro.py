"""Mosaic GPU's transform attributes: layouts.from_transform_attr(layouts.to_transform_attr(T)) must give T back (T =
lc.TileTransform((3,), lc.Rounding.DOWN)), so that a transform read back from the IR is the one written.

Found by layoutfuzz (case mosaic.transfers/31/0). Needs only JAX and NumPy; runs on a CPU. Exit 1 while the problem
shows, 0 once it is gone, 2 where this JAX cannot express the case (a class or argument it lacks)."""
import json
import os
import subprocess
import sys
import tempfile

EXPECTED = 'from_transform_attr(to_transform_attr(T)) == T for T = lc.TileTransform((3,), lc.Rounding.DOWN)'
# the transform is built, written as an attribute and read back in a child process (MLIR's C++ can abort it)
CHILD = r"""import json

try:
    import jax
    from jax._src.lib.mlir import ir
    from jax.experimental.mosaic import gpu as mgpu
    from jax.experimental.mosaic.gpu import launch_context as lc
    from jax.experimental.mosaic.gpu import layouts
    transform = lc.TileTransform((3,), lc.Rounding.DOWN)
except (ImportError, AttributeError, TypeError) as exc:  # this JAX lacks the class or argument
    print("ANSWER", json.dumps({"unavailable": f"{type(exc).__name__}: {exc}"}))
    raise SystemExit(0)
with ir.Context() as ctx, ir.Location.unknown():
    mgpu.dialect.register_dialect(ctx)
    try:
        attribute = layouts.to_transform_attr(transform)
        back = layouts.from_transform_attr(attribute)
    except Exception as exc:
        print("ANSWER", json.dumps({"jax": jax.__version__, "raised": f"{type(exc).__name__}: {exc}"[:300]}))
    else:
        print("ANSWER", json.dumps({"jax": jax.__version__, "same": back == transform, "transform": repr(transform),
                                    "attribute": str(attribute), "back": repr(back)}))
"""


def run_child(source, expected, env=None):
    """The answer the child prints as ``ANSWER <json>`` (a dict). Where it printed none, or says the release lacks
    what the case needs ({"unavailable": ...}), prints expected and observed and exits: 1 where the child died by a
    signal (an abort where an answer or a Python error is owed), 2 where it could not run the case here."""
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as file:  # some systems read a function's source
        file.write(source)
    child = subprocess.run([sys.executable, file.name], capture_output=True, text=True, env=env)
    os.unlink(file.name)
    line = next((x[len("ANSWER "):] for x in child.stdout.splitlines() if x.startswith("ANSWER ")), None)
    said = json.loads(line) if line else {}
    if line is not None and "unavailable" not in said:
        return said
    died = child.returncode < 0 or child.returncode > 128
    tail = child.stderr.strip().splitlines() or [""]
    why = next((t for t in tail if "ssert" in t or "ERROR" in t), tail[-1])[:300]
    print("expected:", expected)
    print("observed:", f"the process died (rc {child.returncode}): {why}" if died else
          f"this release lacks what the case needs: {said['unavailable']}" if line else f"cannot run here: {why}")
    sys.exit(1 if died else 2)


answer = run_child(CHILD, EXPECTED)
print("jax", answer.get("jax"))
print("expected:", EXPECTED)
if "raised" in answer:
    print("observed: raised", answer["raised"])
    sys.exit(1)
print("observed:", answer["back"], "read back from", answer["attribute"], "" if answer["same"] else "(not equal)")
sys.exit(0 if answer["same"] else 1)
