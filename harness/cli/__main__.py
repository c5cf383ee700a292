"""``python -m layoutfuzz.harness.cli``: the command line."""

import sys

from layoutfuzz.harness.cli import main

if __name__ == "__main__":
    sys.exit(main())
