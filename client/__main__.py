"""`python -m rocketmq_emulator.client admin|produce|consume ...` (see `rocketmq_emulator.client.cli`)."""

import sys

from .cli import main

sys.exit(main())
