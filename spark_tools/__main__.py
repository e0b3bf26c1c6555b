"""`python -m rocketmq_emulator.spark_tools seed ...` (also `rocketmq-emulator seed ...`)."""

import sys

from .cli import main

sys.exit(main())
