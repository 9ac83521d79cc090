"""``python -m mqbalance.cli ARGS``: the same as the ``mqbalance`` command."""

import sys

from mqbalance.cli import main

if __name__ == "__main__":
    sys.exit(main())
