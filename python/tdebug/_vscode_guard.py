"""Admit only our own user to debugpy's listening sockets, for
_vscode_run.py ('tdebug vscode --compound').

debugpy 1.6's listen() takes no token from its clients: any local user who
connects to the adapter's port first gets the program (and evaluates code
as its owner).  The kernel knows who connected: the other end of a
loopback connection is a socket of /proc/net/tcp{,6}, with its owner's uid.
guard(create_server) wraps debugpy's sockets.create_server so that every
listener it makes accepts only connections whose other end belongs to our
uid, and closes the rest (a client of another machine too: the kernel does
not say whose it is).

Run as a program, it is the adapter that debugpy.listen() starts
(debugpy.configure(python=...) names a wrapper that runs this file):

    python _vscode_guard.py ADAPTER_DIR ARG...

guards the adapter's own listeners, then runs ADAPTER_DIR as
'python ADAPTER_DIR ARG...' would.  Only the standard library is imported
here; debugpy after the guard is in place.
"""
import os
import runpy
import socket
import sys


def _table_addr(text):
    """'0100007F:1F90' -> (bytes of the address in network order, port)."""
    addr, port = text.split(":")
    raw = bytes.fromhex(addr)
    # The kernel prints each 32-bit word as a host-order (little-endian) number.
    return b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4)), int(port, 16)


def _sock_addr(family, addr):
    return socket.inet_pton(family, addr[0]), addr[1]


def peer_uid(conn):
    """The uid owning the other end of the connected TCP socket CONN, or
    None when it is not a socket of this machine's network namespace."""
    family = conn.family
    me = _sock_addr(family, conn.getsockname())
    peer = _sock_addr(family, conn.getpeername())
    table = "/proc/net/tcp6" if family == socket.AF_INET6 else "/proc/net/tcp"
    try:
        with open(table) as f:
            next(f)
            for line in f:
                fields = line.split()
                if _table_addr(fields[1]) == peer and _table_addr(fields[2]) == me:
                    return int(fields[7])
    except (OSError, ValueError, IndexError):
        pass
    return None


class _Guarded(socket.socket):
    __slots__ = ()

    def accept(self):
        # Refused quietly: the adapter has no stderr left to say it on.
        while True:
            conn, addr = super().accept()
            if peer_uid(conn) == os.geteuid():
                return conn, addr
            conn.close()


def guard(sockets_module):
    """Make SOCKETS_MODULE.create_server (debugpy.common.sockets) return
    listeners that admit only our uid."""
    create_server = sockets_module.create_server
    if getattr(create_server, "tdebug_guarded", False):
        return

    def guarded(*args, **kwargs):
        server = create_server(*args, **kwargs)
        server.__class__ = _Guarded
        return server

    guarded.tdebug_guarded = True
    sockets_module.create_server = guarded


def main():
    adapter_dir = sys.argv[1]
    # As 'python ADAPTER_DIR': the adapter fixes sys.path[0] itself.
    del sys.path[0]
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(os.path.dirname(adapter_dir)))
    from debugpy.common import sockets
    del sys.path[0]
    guard(sockets)
    runpy.run_path(adapter_dir, run_name="__main__")


if __name__ == "__main__":
    main()
