"""The dashboard (`serve --dashboard-port`): pages and a JSON API over the brokers of this process, in the optional
extra `[dashboard]` (aiohttp), imported only when enabled."""
