"""`python -m client admin|produce|consume ...` (see `client.cli`)."""

import sys

from .cli import main

sys.exit(main())
