"""Test-only targets whose code raises what ``except Exception`` does not catch."""

from __future__ import annotations

import os
import sys

from layoutfuzz.harness.target import Target


class Custom(BaseException):
    """A BaseException subclass of the target's own."""


# index % 5: SystemExit(0) in the system under test, KeyboardInterrupt there, a custom BaseException
# there, SystemExit in the oracle, a pass
RAISES = (lambda: sys.exit(0), lambda: (_ for _ in ()).throw(KeyboardInterrupt()), lambda: (_ for _ in ()).throw(Custom("x")))


class ValueTarget(Target):
    """A case is a number; the oracle says it back. Subclasses misbehave in ``observed``."""

    def generate(self, source):
        return {"value": source.integer(0, 1 << 20)}

    def expected(self, case):
        return case.params["value"]


class ExitingTarget(ValueTarget):
    name = "test.exiting"

    def family(self, case):
        return ("exit", "interrupt", "custom", "oracle-exit", "pass")[case.index % 5]

    def expected(self, case):
        if case.index % 5 == 3:
            sys.exit(3)
        return case.params["value"]

    def observed(self, case):
        if case.index % 5 < 3:
            RAISES[case.index % 5]()
        return case.params["value"]


class AbortingTarget(ValueTarget):
    """Every other case aborts its worker: workers die back to back."""

    name = "test.aborting"

    def observed(self, case):
        if case.index % 2:
            os.abort()
        return case.params["value"]


class HugeTarget(ValueTarget):
    """Even cases: a 20-million-character observed value (and mismatch); odd: 30 MB of output, then abort."""

    name = "test.huge"

    def expected(self, case):
        return "x"

    def observed(self, case):
        if case.index % 2:
            for _ in range(30):
                sys.stderr.write("spam " * 200_000 + "\n")
            sys.stderr.flush()
            os.abort()
        return "y" * 20_000_000


class ForkingTarget(ValueTarget):
    """Starts a long ``sleep`` child, then crashes (odd cases) or hangs (even cases)."""

    name = "test.forking"

    def observed(self, case):
        import subprocess
        import time

        subprocess.Popen(["sleep", os.environ.get("FORKING_SLEEP", "987")])
        if case.index % 2:
            os.abort()
        time.sleep(3600)


class DriftingTarget(ValueTarget):
    """Draws from the global random state, not from its source: the same id, another case each time."""

    name = "test.drifting"

    def generate(self, source):
        import random

        return {"value": random.getrandbits(30)}

    def observed(self, case):
        return case.params["value"]


class HungryTarget(ValueTarget):
    """Its system under test takes a gibibyte."""

    name = "test.hungry"

    def observed(self, case):
        block = bytearray(1 << 30)
        return case.params["value"] + block[-1]


class QuittingTarget(ValueTarget):
    """Its system under test ends the worker process with exit status 0, mid-case."""

    name = "test.quitting"

    def observed(self, case):
        os._exit(0)


class BatchedTarget(ValueTarget):
    """Batch methods over many cases at once; ``index % 6``: 0 pass, 1 the oracle raises for that case alone,
    2 the whole observed call aborts (any batch holding it crashes), 3 diverges, 4 unsupported, 5 hangs."""

    name = "test.batched"
    max_batch = 64

    def family(self, case):
        return ("pass", "oracle-error", "abort", "diverge", "unsupported", "hang")[case.index % 6]

    def expected(self, case):
        if case.index % 6 == 1:
            raise ValueError("the oracle refuses this case")
        return case.params["value"]

    def observed(self, case):
        from layoutfuzz.harness.target import Unsupported

        behaviour = self.family(case)
        if behaviour == "abort":
            os.abort()
        if behaviour == "hang":
            import time

            time.sleep(3600)
        if behaviour == "unsupported":
            raise Unsupported("not on this machine")
        return case.params["value"] ^ (behaviour == "diverge")

    def expected_batch(self, cases):
        out = []
        for case in cases:
            try:
                out.append(self.expected(case))
            except ValueError as exc:
                out.append(exc)
        return out

    def observed_batch(self, cases):
        from layoutfuzz.harness.target import Unsupported

        if any(self.family(c) in ("abort", "hang") for c in cases):  # one launch for all: one bad case ends it
            for c in cases:
                if self.family(c) in ("abort", "hang"):
                    self.observed(c)
        return [Unsupported("not on this machine") if self.family(c) == "unsupported" else self.observed(c) for c in cases]


class PreloadProbe(ValueTarget):
    """Passes only where the module it names in ``preload`` was imported before its case ran, by another process: in a
    worker forked from the fork server that imported it (a worker imports it too, where the server did not)."""

    name = "test.preload"
    preload = ("tests.preloaded_module",)

    def observed(self, case):
        module = sys.modules.get("tests.preloaded_module")
        return case.params["value"] if module is not None and module.IMPORTED_BY != os.getpid() else -1


class LeanMainProbe(ValueTarget):
    """Passes only where its worker never ran layoutfuzz's command line as its main module (``cli.triage`` is imported
    by the command line alone): a campaign's fork server marks that main module as run instead of importing it."""

    name = "test.lean_main"

    def observed(self, case):
        return case.params["value"] if "layoutfuzz.harness.cli.triage" not in sys.modules else -1


class CoreProbe(ValueTarget):
    """Passes only where its worker may write no core file (RLIMIT_CORE 0): a target that aborts on many cases must
    not fill the disk, nor spend seconds a crash, with core dumps."""

    name = "test.core"

    def observed(self, case):
        import resource

        return case.params["value"] if resource.getrlimit(resource.RLIMIT_CORE)[0] == 0 else -1


class FrozenProbe(ValueTarget):
    """Passes only where its worker starts with the fork server's objects frozen (``gc.freeze``): a worker's collections
    then leave the imported libraries alone."""

    name = "test.frozen"

    def observed(self, case):
        import gc

        return case.params["value"] if gc.get_freeze_count() > 10_000 else -1


READ_PAST = r"""
extern "C" __global__ void read_past(int* out, int n, int extra) {
  for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = 3 * i + 1;
  __syncthreads();
  if (extra > 0 && threadIdx.x == 0) {
    volatile int* p = out;
    if (p[n - 1 + extra] == 0x7fffffff) out[0] = -1;  // a read past the allocation that leaves the result as it is
  }
}
"""


class ReadPastAllocation(ValueTarget):
    """A GPU kernel fills ``out[0..n)`` with 3 i + 1, and in one case of seven also reads ``extra`` ints past the
    allocation without changing what it writes: every case passes, unless compute-sanitizer watches (``--sanitize``)."""

    name = "test.read_past_allocation"
    requires = ("cuda device sm_90", "cuda.core")
    max_batch = 16

    def availability(self):
        from layoutfuzz.gpu.targets.base import cuda_device_availability

        return cuda_device_availability(9, needs=("cuda.core",))

    def generate(self, source):
        index = source.integer(0, 6)
        return {"n": 256, "extra": 64 if index == 3 else 0}

    def expected(self, case):
        return [3 * i + 1 for i in range(case.params["n"])]

    def observed(self, case):
        import numpy as np
        from cuda.bindings import driver
        from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch

        device = Device()
        device.set_current()
        kernel = Program(READ_PAST, code_type="c++", options=ProgramOptions(arch="sm_90")).compile("cubin").get_kernel("read_past")
        n = case.params["n"]
        stream = device.create_stream()
        buffer = device.allocate(4 * n, stream=stream)  # cuMemAlloc'd: its bounds are what compute-sanitizer checks
        launch(stream, LaunchConfig(grid=1, block=128), kernel, np.uint64(int(buffer.handle)), np.int32(n), np.int32(case.params["extra"]))
        stream.sync()
        host = np.empty(n, dtype=np.int32)
        (err,) = driver.cuMemcpyDtoH(host.ctypes.data, int(buffer.handle), 4 * n)
        buffer.close(stream)
        stream.sync()
        return host.tolist()
