"""Memory-backed scratch folders: files that live for a moment (a worker's log and a batch's progress file, a compile's
intermediate stages) are created and removed thousands of times a campaign, and on a disk each removal costs about a
millisecond of the process that waits for it."""

from __future__ import annotations

import os

MEMORY_ROOTS = ("/dev/shm",)  # memory-backed folders, used where one is writable with the room asked for


def memory_root(room: int) -> str | None:
    """A writable memory-backed folder with ``room`` bytes free, else None (the system's temporary folder)."""
    for root in MEMORY_ROOTS:
        try:
            usage = os.statvfs(root)
        except OSError:
            continue
        if os.access(root, os.W_OK) and usage.f_bavail * usage.f_frsize >= room:
            return root
    return None
