"""Entry: ``python -m loader [run|status] --config FILE``; also a spark-submit script."""

import sys

from loader.cli import main

if __name__ == "__main__":
    sys.exit(main())
