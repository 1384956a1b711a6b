"""``python -m tsmon``: the ``tsmon`` command (:mod:`tsmon.cli`)."""

import sys

from tsmon.cli import main

sys.exit(main())
