"""``python -m vkdqs`` runs the command-line interface (see :mod:`vkdqs.cli`)."""

import sys

from .cli import main

sys.exit(main())
