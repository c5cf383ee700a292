"""The reproducer scripts ``layoutfuzz export`` writes for the GPU targets that run a Gluon kernel
(``gpu.targets.gluon_kernel``), as script text: what a Triton user attaches to a bug report.

A script needs Triton, torch, NumPy and a CUDA GPU of compute capability 9.0 (``NEEDS_CUDA_CAPABILITY``, which
``layoutfuzz export --check`` reads to skip it where there is none). The parent half never touches CUDA: it draws the
inputs with NumPy, computes the expected answer from the operation's definition, and runs the kernel in a child
process (the ``@gluon.jit`` source written out, torch tensors on the GPU, ``kernel[(1,)](..., num_warps=, num_ctas=)``
through Triton's own JIT, Triton's cache off) that saves what the kernel left. A device fault, a compile abort or a
hang ends the child, never the script: each is observed-bad (exit 1). A compile error is bad too (exit 1) unless the
target says the release documents the refusal (exit 2, as for a class or argument the release lacks); no GPU here is
exit 2. The answer against the expected one: 1 while they differ, 0 once they agree."""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable, Iterable
from typing import Any

# the marker a GPU script carries (harness.export_check skips such a script where the interpreter sees no such GPU)
CAPABILITY = (9, 0)
MARKER = "NEEDS_CUDA_CAPABILITY"
TIMEOUT_S = 300  # one tile: seconds to compile and run; past this the kernel hangs (or compiles for minutes)

CHILD_HEAD = '''import json
import os
import re
import sys

import numpy as np


def answer(**said):
    # what the kernel did, one line for the parent; then out at once (after a device fault no teardown may hang)
    print("ANSWER", json.dumps(said), flush=True)
    sys.stderr.flush()
    os._exit(0)


try:
    import torch
    import triton
    from triton.experimental import gluon
    from triton.experimental.gluon import language as ttgl
except ImportError as exc:
    answer(no_gpu=f"{exc}")
if not torch.cuda.is_available() or torch.cuda.get_device_capability() < NEEDS:
    answer(no_gpu=f"no CUDA GPU of compute capability {NEEDS[0]}.{NEEDS[1]} here")
FAULT = re.compile(r"CUDA error|CUDA_ERROR|\\[CUDA\\]|illegal (memory access|instruction|address)|misaligned address")


def launch(kernel, *args, **kwargs):
    # kernel[(1,)](...) through Triton's JIT (it compiles first: an error there is a refusal), then a synchronize
    try:
        kernel[(1,)](*args, **kwargs)
    except Exception as exc:
        text = f"{type(exc).__name__}: {exc}"
        lines = [line.strip() for line in str(exc).strip().splitlines() if line.strip()] or [type(exc).__name__]
        if FAULT.search(text):
            answer(fault=lines[-1][:300])
        answer(refused=f"{type(exc).__name__}: {lines[-1][:300]}")
    try:
        torch.cuda.synchronize()
    except Exception as exc:
        answer(fault=(str(exc).strip().splitlines() or [type(exc).__name__])[0][:300])


def on_gpu(array, dtype=None):
    # a NumPy array as a contiguous torch tensor on the GPU (converted to ``dtype`` there, where given)
    tensor = torch.from_numpy(np.ascontiguousarray(array)).cuda()
    return tensor if dtype is None else tensor.to(dtype)
'''

PARENT_TAIL = '''

def finish(observed, code):
    print("observed:", observed)
    sys.exit(code)


def main():
    inputs = make_inputs()
    want = expected(inputs)
    print("triton", triton_version(), "| torch", torch_version())
    print("expected:", EXPECTED)
    folder = tempfile.mkdtemp()
    np.savez(os.path.join(folder, "inputs.npz"), **inputs)
    child_file = os.path.join(folder, "kernel.py")  # a file: Gluon reads a kernel's source
    with open(child_file, "w") as file:
        file.write(f"NEEDS = {NEEDS_CUDA_CAPABILITY!r}\\n" + CHILD)
    fresh = {**os.environ, "TRITON_ALWAYS_COMPILE": "1", "TRITON_CACHE_DIR": tempfile.mkdtemp()}  # compile each run
    try:
        child = subprocess.run([sys.executable, child_file, folder], capture_output=True, text=True, env=fresh,
                               timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        finish(f"no answer in {TIMEOUT_S} s (the kernel hangs, or Triton compiles it for minutes)", 1)
    line = next((x[len("ANSWER "):] for x in child.stdout.splitlines() if x.startswith("ANSWER ")), None)
    said = json.loads(line) if line else {}
    tail = [x for x in child.stderr.strip().splitlines() if x.strip()] or [""]
    why = next((x for x in tail if "ssert" in x or "ERROR" in x or "error:" in x), tail[-1]).strip()[:300]
    if line is None:
        died = child.returncode < 0 or child.returncode > 128
        finish(f"the process died (rc {child.returncode}): {why}" if died else f"cannot run here: {why}", 1 if died else 2)
    if "no_gpu" in said:
        finish(f"cannot run here: {said['no_gpu']}", 2)
    if "unavailable" in said:
        finish(f"this release lacks what the case needs: {said['unavailable']}", 2)
    if "fault" in said:
        finish(f"the kernel faulted: {said['fault']}", 1)
    if "refused" in said:
        finish(f"Triton refused the kernel{REFUSAL_NOTE if REFUSAL == 2 else ''}: {said['refused']}"
               + (f" ({why})" if why and why not in said["refused"] else ""), REFUSAL)
    got = dict(np.load(os.path.join(folder, "outputs.npz")))
    wrong = []
    for name, values in want.items():
        w, g = np.asarray(values, np.float64).ravel(), np.asarray(got[name], np.float64).ravel()
        bad = np.flatnonzero(~((w == g) | (np.isnan(w) & np.isnan(g))))
        if bad.size:
            shown = ", ".join(f"{name}{[int(k) for k in np.unravel_index(i, np.shape(values))]} = {g[i]:g} (expected {w[i]:g})"
                              for i in bad[:6])
            wrong.append(f"{bad.size} of {w.size} elements of {name} wrong: {shown}")
    finish("; ".join(wrong) if wrong else "as expected", 1 if wrong else 0)  # @DIAGNOSIS@


def triton_version():
    try:
        return __import__("triton").__version__
    except ImportError:
        return "(not installed)"


def torch_version():
    try:
        return __import__("torch").__version__
    except ImportError:
        return "(not installed)"


if __name__ == "__main__":
    main()
'''


def source_of(*functions: Any) -> str:
    """The source text of ``@gluon.jit`` functions (or plain ones), each as written, one after the other."""
    return "\n\n".join(inspect.getsource(getattr(f, "fn", f)).strip() + "\n" for f in functions)


def literal_block(lines: Iterable[str], indent: int = 4) -> str:
    return textwrap.indent("\n".join(lines), " " * indent)


def gpu_script(*, doc: str, kernel: str, layouts: Iterable[str], launch: Iterable[str], inputs: Iterable[str],
               expected: Iterable[str], expected_text: str, child_imports: str = "", refusal_exit: int = 1,
               refusal_note: str = "", diagnosis: str = "", problem: str | None = None) -> str:
    """The whole script. ``kernel``: the ``@gluon.jit`` source; ``layouts``: lines that build the constexpr layouts
    (a ``TypeError``/``AttributeError`` there is a release that lacks them: exit 2); ``launch``: child lines with
    ``inputs`` (the parent's NumPy arrays) that call ``launch(kernel, ...)`` and set ``outputs`` (NumPy arrays);
    ``inputs``/``expected``: the parent's function bodies (NumPy only) returning a dict of arrays, the second from the
    first's; ``expected_text``: the expected line; ``refusal_exit``: the exit code of a compile error (1: a refusal
    of a valid kernel; 2: the release documents the refusal, ``refusal_note`` says so); ``diagnosis``: the parent's
    source of ``diagnose(inputs, got)``, which names how a wrong answer came about (None: no way it knows), and
    ``problem`` the name this script's report is about: where the answer is wrong another way, that problem is gone
    (exit 0, saying how the answer is wrong now)."""
    child = "\n".join([CHILD_HEAD.rstrip(), child_imports.rstrip(), "", "", kernel.rstrip(), "", "",
                       'inputs = dict(np.load(os.path.join(sys.argv[1], "inputs.npz")))', "try:",
                       literal_block(layouts), "except (TypeError, AttributeError) as exc:  # a class or argument this release lacks",
                       '    answer(unavailable=f"{type(exc).__name__}: {exc}")', *launch,
                       'np.savez(os.path.join(sys.argv[1], "outputs.npz"), **outputs)', "answer(done=True)", ""])
    if "'''" in child:
        raise ValueError("the child's source holds a triple quote")
    return (f'"""{doc.strip()}\n\nNeeds Triton, torch, NumPy and a CUDA GPU of compute capability '
            f'{CAPABILITY[0]}.{CAPABILITY[1]} (Hopper). Exits 1 while the problem shows, 0 once it is gone, 2 where it '
            f'cannot run here."""\n'
            + ("from __future__ import annotations  # the diagnosis' type hints stay text\n\n" if diagnosis else "")
            + "import json\nimport os\nimport subprocess\nimport sys\nimport tempfile\n\nimport numpy as np\n\n"
            f"{MARKER} = {CAPABILITY!r}  # Hopper (sm_90a)\n"
            f"TIMEOUT_S = {TIMEOUT_S}  # one tile: seconds to compile and run; past this the kernel hangs\n"
            f"REFUSAL = {refusal_exit}  # the exit code where Triton refuses to compile the kernel\n"
            f"REFUSAL_NOTE = {refusal_note!r}\n"
            f"EXPECTED = {expected_text!r}\n\n"
            f"CHILD = r'''\n{child}'''\n\n\n"
            "def make_inputs():\n" + literal_block(inputs) + "\n\n\n"
            "def expected(inputs):\n" + literal_block(expected) + "\n" + _diagnosed(PARENT_TAIL, diagnosis, problem))


def _diagnosed(tail: str, diagnosis: str, problem: str | None) -> str:
    """The parent's tail, with ``diagnosis`` (see ``gpu_script``) judged before the verdict where one is given."""
    plain = "  # @DIAGNOSIS@"
    if not diagnosis:
        return tail.replace(plain, "")
    verdict = textwrap.indent(textwrap.dedent('''
        seen = diagnose(inputs, got) if wrong else None
        if seen is not None:
            wrong.append(f"exactly the answer of {seen}")
        if wrong and PROBLEM is not None and seen != PROBLEM:
            finish("; ".join(wrong) + f"; this report's problem ({PROBLEM}) is gone: the answer is wrong another way", 0)
        finish("; ".join(wrong) if wrong else "as expected", 1 if wrong else 0)''').strip("\n"), "    ")
    head, rest = tail.split("    finish(\"; \".join(wrong) if wrong else \"as expected\", 1 if wrong else 0)" + plain)
    return (f"\n\nPROBLEM = {problem!r}  # what this report is about (diagnose's name for it)\n\n\n"
            + diagnosis.strip() + "\n" + head + verdict + rest)


def needs_gpu(script: str) -> bool:
    """Whether a reproducer's text is a GPU script of this module."""
    return f"\n{MARKER} = " in script


def constexpr_kwargs(names: Iterable[str], value: Callable[[str], str] | None = None) -> str:
    """``NAME=NAME, ...`` for a launch's keyword arguments."""
    return ", ".join(f"{n}={value(n) if value else n}" for n in names)
