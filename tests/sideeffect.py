"""Test-only: a module whose import leaves a mark (``SIDEEFFECT_MARK``), as any installed module with
import-time effects could; a report or a store naming it must never get it imported."""

import os
from pathlib import Path

Path(os.environ.get("SIDEEFFECT_MARK", "sideeffect.imported")).write_text("imported\n")

