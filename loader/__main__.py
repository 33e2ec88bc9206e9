"""Entry: ``python -m icefloe.loader [run|status] --config FILE``; also a spark-submit script."""

import sys

from icefloe.loader.cli import main

if __name__ == "__main__":
    sys.exit(main())
