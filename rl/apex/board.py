"""The parameter board: the launcher's meeting point of actors and learners
(:class:`ParamBoard`, a TCP server thread) and their connection to it (:class:`BoardClient`)."""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections import deque
from collections.abc import Mapping
from typing import Any

import numpy as np

from rl.tcp import TcpServer, connect, recv_exact, recv_struct

__all__ = ["BoardClient", "ParamBoard"]


_REQ = struct.Struct("!BQd")  # op, integer argument, float argument
_OP_PUT, _OP_GET, _OP_EPISODE, _OP_ACTOR_DONE, _OP_LEARNER_DONE, _OP_RATE = 1, 2, 3, 4, 5, 6
_GET_HDR = struct.Struct("!QIBdIQ")  # version, bytes, stop, window sum, window count, env steps


class ParamBoard:
    """The launcher's meeting point of actors and learners (a TCP server thread).

    Learner 0 puts weights (a version and a float32 vector); actors get the
    newest when theirs is older, report every finished episode and their env
    steps, and say when their budget is spent; learners say when they stop.
    When either side is done the board calls ``release`` (the launcher turns
    the switch's sample-to-insert limit off there) so that the other side
    does not wait on the rate limiter for a partner that is gone. A local replay's process
    reports its limiter's :func:`rate_report` here (:attr:`rate`).

    Parameters
    ----------
    actors : int
        Actors that will report done.
    window : int
        Episode returns in the stop statistic.
    release : callable
        Called once when the actors or the learners are done.
    host : str
        Listen address.
    """

    def __init__(self, actors: int, window: int, release: Any, host: str = "127.0.0.1") -> None:
        self.actors = actors
        self.returns: deque[float] = deque(maxlen=window)
        self.release = release
        self.version = 0
        self.weights = b""
        self.env_steps = 0
        self.actors_done = 0
        self.learners_done = False
        self.rate: dict[str, float] = {}
        self._released = False
        self._lock = threading.Lock()
        self._server = TcpServer(self._serve, host, 0, name="apex-board")
        self.address: tuple[str, int] = self._server.address

    @property
    def stop(self) -> bool:
        """Every actor spent its budget, or the learners stopped."""
        return self.learners_done or self.actors_done >= self.actors

    def start(self) -> ParamBoard:
        """Serve in a background thread."""
        self._server.start()
        return self

    def close(self) -> None:
        """Stop serving."""
        self._server.stop()

    def _serve(self, conn: socket.socket) -> None:
        while True:
            op, arg, val = recv_struct(conn, _REQ)
            payload = b""
            with self._lock:
                if op == _OP_PUT:
                    data = recv_exact(conn, int(val))
                    self.version, self.weights = arg, data
                elif op == _OP_GET:
                    payload = self.weights if self.version > arg else b""
                elif op == _OP_EPISODE:
                    self.returns.append(val)
                    self.env_steps += arg
                elif op == _OP_ACTOR_DONE:
                    self.actors_done += 1
                    self.env_steps += arg
                elif op == _OP_LEARNER_DONE:
                    self.learners_done = True
                elif op == _OP_RATE:
                    self.rate = json.loads(recv_exact(conn, int(val)).decode())
                else:
                    raise ConnectionError(f"unknown board op {op}")
                head = _GET_HDR.pack(self.version, len(payload), int(self.stop),
                                     float(sum(self.returns)), len(self.returns),
                                     self.env_steps)
                fire = self.stop and not self._released
                self._released |= fire
            if fire:
                self.release()
            conn.sendall(head + payload)


class BoardClient:
    """An actor's or learner's connection to the :class:`ParamBoard`."""

    def __init__(self, address: tuple[str, int]) -> None:
        self._sock = connect(address)
        self.version = 0
        self.stop = False
        self.window: tuple[float, int] = (0.0, 0)
        self.env_steps = 0

    def _call(self, op: int, arg: int = 0, val: float = 0.0, data: bytes = b"") -> bytes:
        self._sock.sendall(_REQ.pack(op, arg, val) + data)
        version, n, stop, wsum, wcount, steps = recv_struct(self._sock, _GET_HDR)
        self.stop, self.window, self.env_steps = bool(stop), (wsum, wcount), steps
        body = recv_exact(self._sock, n) if n else b""
        if body:
            self.version = version
        return body

    def put(self, version: int, vec: np.ndarray) -> None:
        """Publish weights ``vec`` (float32) as ``version``."""
        data = np.ascontiguousarray(vec, dtype=np.float32).tobytes()
        self._call(_OP_PUT, version, float(len(data)), data)

    def get(self) -> np.ndarray | None:
        """The newest weights if newer than the last ones fetched, else None."""
        body = self._call(_OP_GET, self.version)
        return np.frombuffer(body, dtype=np.float32) if body else None

    def poll(self) -> None:
        """Refresh :attr:`stop`, :attr:`window` and :attr:`env_steps` (no weights)."""
        self._call(_OP_GET, 1 << 62)

    def episode(self, ret: float, steps: int) -> None:
        """Report a finished episode and the env steps since the last report."""
        self._call(_OP_EPISODE, steps, ret)

    def actor_done(self, steps: int) -> None:
        """This actor spent its budget (with its last unreported env steps)."""
        self._call(_OP_ACTOR_DONE, steps)

    def learner_done(self) -> None:
        """The learners stopped."""
        self._call(_OP_LEARNER_DONE)

    def rate(self, report: Mapping[str, float]) -> None:
        """Hand the launcher a local replay's :func:`rate_report`."""
        data = json.dumps(dict(report)).encode()
        self._call(_OP_RATE, 0, float(len(data)), data)

    def close(self) -> None:
        """Close the connection."""
        self._sock.close()
