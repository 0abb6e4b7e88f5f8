"""The TCP plumbing of the host baselines: one threaded server (:class:`TcpServer`, behind
:class:`rl.replay.ReplayServer`, :class:`rl.sync.ps.ParameterServer` and
:class:`rl.apex.ParamBoard`), its client connection (:func:`connect`) and length framing
(:func:`recv_exact`, :func:`recv_struct`)."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Callable
from typing import Any


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


def recv_struct(sock: socket.socket, st: struct.Struct) -> tuple[Any, ...]:
    """Read one ``st``-sized message from ``sock`` and unpack it (ConnectionError on close)."""
    return st.unpack(recv_exact(sock, st.size))


def connect(address: tuple[str, int]) -> socket.socket:
    """A client connection to a :class:`TcpServer` (``TCP_NODELAY``: small requests)."""
    sock = socket.create_connection(address)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class TcpServer:
    """A threaded TCP server: an accept loop and one thread per connection.

    ``handler(conn)`` serves one connection until it returns; the connection is
    closed then. A :class:`ConnectionError` or :class:`OSError` in the handler
    (the peer left, or :meth:`stop` closed the socket) ends it quietly; any other
    exception is kept in :attr:`errors` (the peer sees the connection close,
    never a hang).

    Parameters
    ----------
    handler : callable
        ``handler(conn: socket.socket) -> None``.
    host, port : listen address (port 0: ephemeral, see :attr:`address`).
    name : str
        Thread name prefix.
    """

    def __init__(self, handler: Callable[[socket.socket], None], host: str = "127.0.0.1",
                 port: int = 0, name: str = "tcp") -> None:
        self.handler = handler
        self.name = name
        self.errors: list[BaseException] = []
        self._listener = socket.create_server((host, port))
        self.address: tuple[str, int] = self._listener.getsockname()[:2]
        self._conns: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stopped = False

    def start(self) -> TcpServer:
        """Accept connections in a background thread."""
        threading.Thread(target=self._accept_loop, name=f"{self.name}-accept",
                         daemon=True).start()
        return self

    def stop(self) -> None:
        """Close the listener and every connection (their handlers end with OSError)."""
        with self._lock:
            self._stopped = True
            conns = list(self._conns)
        try:
            self._listener.close()
        except OSError:
            pass
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()

    def _accept_loop(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                if self._stopped:
                    conn.close()
                    return
                self._conns.add(conn)
            threading.Thread(target=self._serve, args=(conn,), name=f"{self.name}-conn",
                             daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            self.handler(conn)
        except (ConnectionError, OSError):
            pass
        except Exception as e:  # noqa: BLE001 - kept for the owner, the peer sees a close
            self.errors.append(e)
        finally:
            with self._lock:
                self._conns.discard(conn)
            conn.close()
