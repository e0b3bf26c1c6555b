"""Message filters of the broker beyond tags: SQL92 property filters (`sql92.py`, compiled once per
subscription version by `consumer_filter.py`)."""
