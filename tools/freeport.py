# SPDX-License-Identifier: LGPL-2.1-or-later
"""A free TCP port on loopback for a server txld (or a test) will start:
one below the ephemeral range (32768-60999 on Linux), so that no outgoing
connection takes it between this check and the server's bind.  Shared by
tests/integration/test_txld.py and tools/bench_txld.py."""
import random
import socket

_used = set()


def free_port():
    while True:
        port = random.randrange(20000, 32000)
        if port in _used:
            continue
        s = socket.socket()
        try:
            s.bind(('127.0.0.1', port))
            _used.add(port)
            return port
        except OSError:
            pass
        finally:
            s.close()
