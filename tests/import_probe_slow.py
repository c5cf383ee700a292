"""Imported by a worker for ``tests.worker_import_targets``: slow to import, like torch, so that an import of it on
a second thread is still under way when the worker's first case looks at ``sys.modules``."""

import threading
import time

ON_MAIN_THREAD = threading.current_thread() is threading.main_thread()
IMPORTED_NS = time.perf_counter_ns()
time.sleep(0.5)
READY = True  # absent while the import is under way: a case that reads it then sees a half-initialised module
