"""Exact-length reads on a TCP socket (the parameter server's and the replay server's framing)."""

from __future__ import annotations

import socket


def recv_exact(sock: socket.socket, n: int) -> bytearray:
    """Read exactly ``n`` bytes from ``sock``.

    Parameters
    ----------
    sock : socket.socket
        A connected stream socket.
    n : int
        Bytes to read.

    Returns
    -------
    bytearray
        The ``n`` bytes.

    Raises
    ------
    ConnectionError
        When the peer closes the connection first.
    """
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = sock.recv_into(view[got:], n - got)
        if k == 0:
            raise ConnectionError("peer closed the connection")
        got += k
    return buf
