"""``python -m ndflow``: the ``ndflow`` command (:func:`ndflow.cli.main`)."""

import sys

from .cli import main

sys.exit(main())
