"""``python -m vkdqs`` runs the command-line interface (see :mod:`vkdqs.app.cli`)."""

import sys

from .app.cli import main

sys.exit(main())
