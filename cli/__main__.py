"""`python -m rocketmq_emulator.cli ...`: the same program as the `rocketmq-emulator` script."""

import sys

from .main import main

sys.exit(main())
