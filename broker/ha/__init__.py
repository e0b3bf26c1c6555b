"""Master-slave replication over 4.9.8's HA protocol (byte-compatible with a real 4.9.8 master or slave):
``HAServer`` on a master (its haListenPort), ``HAClient`` on a slave; the frames are in ``wire``. The store's side
(appending and dispatching the master's bytes, reading them for a transfer) is store/replication.py."""

from .client import HAClient
from .server import HAServer

__all__ = ["HAClient", "HAServer"]
