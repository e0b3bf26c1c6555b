#!/usr/bin/env python
"""py5_driver.py with credentials: the official 5.x Python client signs every call with the account given by
$RMQ_ACCESS_KEY / $RMQ_SECRET_KEY (its `authorization` metadata: HMAC-SHA1 of `x-mq-date-time`). Same commands,
arguments and output as py5_driver.py (integration_tests/test_acl.py runs it in the 5.x client's environment)."""

from __future__ import annotations

import os

import py5_driver
from rocketmq import ClientConfiguration, Credentials


def config(args):  # noqa: ANN001, ANN201 - py5_driver's signature
    credentials = Credentials(os.environ["RMQ_ACCESS_KEY"], os.environ["RMQ_SECRET_KEY"])
    return ClientConfiguration(args.endpoint, credentials, request_timeout=10)


py5_driver.config = config

if __name__ == "__main__":
    py5_driver.main()
