"""Pieces of the reproducer scripts ``layoutfuzz export`` writes, as script text: running the system's call in a child
process and reading its answer back, and the Gluon kernel compile a Triton script's child runs. A script that uses them
still imports only the system under test (and NumPy)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# the imports the parent half of a script needs for ``RUN_CHILD``
PARENT_IMPORTS = "import json\nimport os\nimport subprocess\nimport sys\nimport tempfile\n"

RUN_CHILD = '''

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
'''

# the environment of a Triton script's child: Triton's cache off, so that the front end runs every time
TRITON_CHILD_ENV = '{**os.environ, "TRITON_ALWAYS_COMPILE": "1", "TRITON_CACHE_DIR": tempfile.mkdtemp()}'

# the head of a Triton script's child (it sits in the script as a r"""...""" string: no triple quotes in it)
GLUON_CHILD_HEAD = '''import contextlib
import io
import json
import re

import triton
from triton.backends.compiler import GPUTarget
from triton.experimental import gluon
from triton.experimental.gluon import language as ttgl
from triton.experimental.gluon._runtime import GluonASTSource


def printed(kernel, constexprs, num_warps):
    # what the kernel's static_print calls print while Triton compiles it for sm_90 on the CPU (its front end runs
    # them), and the compiler's error if a later step refused the kernel
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            triton.compile(GluonASTSource(kernel, {k: "constexpr" for k in constexprs}, constexprs),
                           target=GPUTarget("cuda", 90, 32), options={"num_warps": num_warps})
    except Exception as exc:
        return out.getvalue(), f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"
    return out.getvalue(), ""


def unavailable(build):
    # the layouts build() makes, or an ANSWER saying this release lacks a class or argument they need
    try:
        return build()
    except (TypeError, AttributeError) as exc:
        print("ANSWER", json.dumps({"unavailable": f"{type(exc).__name__}: {exc}"}))
        raise SystemExit(0)
'''


def gluon_constructor(layout: Mapping[str, Any]) -> str:
    """The Gluon constructor call of a legacy layout dict (``oracles.triton_layouts.to_dict``), as a user writes it:
    the oracle's field names are Gluon's keyword arguments; its distributed NVMMA kind is Gluon's nvmma_distributed."""
    from layoutfuzz.harness.targets.triton_gluon_layouts import gluon_source

    def spec(data: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: spec(v) if k == "parent" else v for k, v in data.items()}
        return {**out, "kind": "nvmma_distributed"} if data["kind"] == "nvmma" else out

    return gluon_source(spec(layout))
