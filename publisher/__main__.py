"""Standalone entry: ``python -m publisher [options]`` (same options as ``icefloe publish``)."""

import sys

from publisher.cli import main

if __name__ == "__main__":
    sys.exit(main())
