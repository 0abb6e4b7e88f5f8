"""The parameter-server baseline: its wire format and the TCP :class:`ParameterServer`.

A worker (:class:`rl.sync.PSSync`) sends ``PS_HELLO`` (its id) once, then per round
``PS_MSG`` (round, version, payload bytes, dtype code) and the payload; the server
answers every worker with the same header and the sum.
"""

from __future__ import annotations

import socket
import struct
import threading

import numpy as np

from rl.sync.rounds import RoundTable
from rl.tcp import TcpServer, recv_exact, recv_struct

PS_HELLO = struct.Struct("!I")
"""First message of a connection: the worker id."""
PS_MSG = struct.Struct("!IIIB")
"""Header of a vector: round, version, payload bytes, dtype code (:data:`PS_DTYPES`)."""
PS_DTYPES = {0: np.dtype("<f4"), 1: np.dtype("<i4")}
"""Payload dtype by code: 0 fp32, 1 int32."""


class ParameterServer:
    """A TCP parameter server: sums the N workers' vectors each round, sends the sum back.

    Each worker holds one connection; per round it sends its whole vector
    (round, version, length, dtype, payload) and the server, once the round
    completes (:class:`RoundTable` semantics), sends the sum to every worker:
    worker → server → worker, four hops per round counting both directions of
    both links, against the switch's two.

    Parameters
    ----------
    world, mode, threshold, staleness
        As for :class:`RoundTable`.
    host : str
        Address to listen on.
    port : int
        TCP port; 0 picks an ephemeral one (see :attr:`address`).
    """

    def __init__(self, world: int, mode: str = "sync", threshold: int = 0, staleness: int = 0,
                 host: str = "127.0.0.1", port: int = 0) -> None:
        self.table = RoundTable(world, mode, threshold, staleness)
        self._lock = threading.Lock()
        self._conns: dict[int, socket.socket] = {}
        self._send_locks: dict[int, threading.Lock] = {}
        self._server = TcpServer(self._serve, host, port, name="ps")
        self.address: tuple[str, int] = self._server.address

    def start(self) -> ParameterServer:
        """Start accepting workers in a background thread."""
        self._server.start()
        return self

    def stop(self) -> None:
        """Close every connection and the listener."""
        self._server.stop()

    def _serve(self, conn: socket.socket) -> None:
        (worker,) = recv_struct(conn, PS_HELLO)
        with self._lock:
            self._conns[worker] = conn
            self._send_locks[worker] = threading.Lock()
        while True:
            round_, version, nbytes, code = recv_struct(conn, PS_MSG)
            values = np.frombuffer(recv_exact(conn, nbytes), dtype=PS_DTYPES[code])
            with self._lock:
                result = self.table.contribute(worker, round_, version, values)
                if result is not None:
                    del self.table.rounds[round_]
                    targets = list(self._conns.items())
            if result is not None:
                msg = PS_MSG.pack(round_, 0, result.nbytes, code) + result.tobytes()
                for w, c in targets:
                    with self._send_locks[w]:
                        c.sendall(msg)
