"""Whether one given process is the one listening on a loopback port.

A port from ``free_ports`` is free when it is picked, not when the server started on
it binds it: another process (a parallel test run, another job on the machine) can
take it in between. A connect, a PING or an HTTP request then succeeds against that
other process, and the test talks to a server that is not its own (a Redis that
aborts an HTTP request as a cross-protocol attack, for one). So readiness checks ask
the kernel who holds the listening socket: ``/proc/net/tcp`` gives the socket's inode,
``/proc/<pid>/fd`` the sockets the process holds.

Where ``/proc`` is missing (not Linux), ``listens`` cannot tell and says yes.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["listens"]

_TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))
_LISTEN = "0A"


def listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` holds a socket listening on TCP ``port``."""
    if not _TABLES[0].exists():
        return True
    sockets = set()
    for table in _TABLES:
        if not table.exists():
            continue
        for line in table.read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == _LISTEN and int(local.rsplit(":", 1)[1], 16) == port:
                sockets.add(f"socket:[{inode}]")
    if not sockets:
        return False
    try:
        descriptors = os.listdir(f"/proc/{pid}/fd")
    except (FileNotFoundError, ProcessLookupError):
        return False  # the process has exited
    for descriptor in descriptors:
        try:
            if os.readlink(f"/proc/{pid}/fd/{descriptor}") in sockets:
                return True
        except OSError:
            continue  # closed meanwhile
    return False
