"""``python -m tsmon.cli``: the ``tsmon`` command."""

import sys

from tsmon.cli import main

sys.exit(main())
