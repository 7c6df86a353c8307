"""``python -m vkdqs.app.cli`` runs the command line, as ``python -m vkdqs`` does."""

import sys

from . import main

if __name__ == "__main__":  # not when a worker process of a batch bake re-imports it (spawn)
    sys.exit(main())
