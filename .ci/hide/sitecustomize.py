"""CI only: make the extras named in ``NDFLOW_HIDE`` (comma-separated import names, e.g. ``numba,torch``)
unimportable, as on a machine where they are not installed. Put this folder on ``PYTHONPATH``."""

import os
import sys

for _name in filter(None, (part.strip() for part in os.environ.get("NDFLOW_HIDE", "").split(","))):
    sys.modules[_name] = None  # `import name` now raises ImportError
