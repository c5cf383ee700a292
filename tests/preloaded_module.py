"""Imported by the fork server for ``tests.faulty_target:PreloadProbe``, never by the probe itself."""

import os

IMPORTED_BY = os.getpid()  # the fork server's pid, where it imported this module: not a worker's
