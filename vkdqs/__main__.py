"""``python -m vkdqs`` runs the command-line interface (see :mod:`vkdqs.app.cli`)."""

import sys

from .app.cli import main

if __name__ == "__main__":  # not when a worker process of a batch bake re-imports it (spawn)
    sys.exit(main())
