"""Standalone entry: ``python -m icefloe.publisher``, with the options of ``icefloe publish``."""

import sys

from icefloe.publisher.cli import main

if __name__ == "__main__":
    sys.exit(main())
