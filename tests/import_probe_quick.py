"""Imported by a worker for ``tests.worker_import_targets``: quick to import; says on which thread and when."""

import threading
import time

ON_MAIN_THREAD = threading.current_thread() is threading.main_thread()
IMPORTED_NS = time.perf_counter_ns()
READY = True
