"""Picking a strategy by name: :func:`make_replay` (a worker's handle) and
:class:`ReplayBackend` (what the strategy needs outside the workers)."""

from __future__ import annotations

from hostdrv.wire.consts import MAX_RECORD_BYTES
from rl.replay.base import Replay, ReplaySpec
from rl.replay.innet import InNetReplay
from rl.replay.layout import RecordLayout
from rl.replay.server import ReplayServer, ServerReplay
from rl.replay.store import LocalReplay

__all__ = ["ReplayBackend", "innet_refusal", "make_replay"]


def innet_refusal(spec: ReplaySpec, switch_record_bytes: int | None, url: str | None) -> str:
    """Why the switch cannot hold ``spec``'s records ('' when it can): ``spec.record_bytes``
    (what the layout needs) against the protocol's ``MAX_RECORD_BYTES`` and, for a switch
    already running at ``url``, its ``RPL_RECORD_BYTES`` (``switch_record_bytes``), with the
    option that fixes it."""
    what = ("frame records" if spec.frames else "transition records")
    need = spec.record_bytes
    if need > MAX_RECORD_BYTES:
        return (f"in-network replay: {what} of {need} bytes are more than a switch record holds "
                f"(MAX_RECORD_BYTES = {MAX_RECORD_BYTES}); use --replay local or --replay server")
    if switch_record_bytes is not None and switch_record_bytes < need:
        return (f"in-network replay: {what} of {need} bytes do not fit the switch at {url}, "
                f"whose records are RPL_RECORD_BYTES = {switch_record_bytes} bytes; start it "
                f"with `netfpga-softswitch --record-bytes {need}` (or leave out --switch: netrl "
                "then starts a soft switch sized for them), or use --replay local or server")
    return ""


def make_replay(spec: ReplaySpec, rank: int, layout: RecordLayout) -> Replay:
    """Build worker ``rank``'s replay handle for the strategy named by ``spec.kind``."""
    if spec.kind == "local":
        return LocalReplay(layout, spec.capacity, spec.seed + rank, spec.rate_limiter)
    if spec.kind == "server":
        assert spec.address is not None, "server replay needs the server address"
        if spec.rate_timeout is None:
            return ServerReplay(layout, spec.address)
        return ServerReplay(layout, spec.address, rate_timeout=spec.rate_timeout)
    assert spec.url is not None, "innet replay needs the switch URL"
    return InNetReplay(layout, spec.url, rank + spec.member_offset,
                       rate_timeout=spec.rate_timeout)


class ReplayBackend:
    """Starts what a replay strategy needs outside the workers.

    ``server``: a :class:`ReplayServer` thread. ``innet``: a soft switch when
    no URL is given (or the one the gradient sync uses) with ``spec.capacity`` records of
    ``spec.record_bytes``, then the replay engine
    is configured and seeded (and its rate limiter, given ``spec.rate_limiter``), and
    ``capacity`` and ``record_bytes`` are read from the switch (``ValueError``,
    :func:`innet_refusal`, when its records are too small). ``local``: nothing.

    Parameters
    ----------
    spec : ReplaySpec
        The strategy; its ``address`` or ``url`` is filled by :meth:`start`.
    host : str
        Address the replay server or a soft switch started here listens on.
    advertise : str or None
        Address the workers are given for them (default ``host``).
    key_file : str or None
        Control key file of a soft switch started here (as for
        :class:`rl.sync.SyncBackend`).
    """

    def __init__(self, spec: ReplaySpec, *, host: str = "127.0.0.1",
                 advertise: str | None = None, key_file: str | None = None) -> None:
        self.spec = spec
        self.host = host
        self.advertise = advertise or host
        self.key_file = key_file
        self.server: ReplayServer | None = None
        self.switch: object | None = None

    def start(self) -> ReplaySpec:
        """Bring the shared piece up and return the spec the workers use."""
        s = self.spec
        if s.kind == "server":
            self.server = ReplayServer(s.capacity, s.record_bytes, s.seed, host=self.host,
                                       limiter=s.rate_limiter).start()
            s.address = (self.advertise, self.server.address[1])
        elif s.kind == "innet":
            import hostdrv
            from rl.sync.backend import switch_url

            if s.url is None:
                switch = hostdrv.SoftSwitch((self.host, 0), capacity=s.capacity,
                                            record_bytes=s.record_bytes,
                                            control_key=self.key_file)
                self.switch = switch.start()
                s.url = switch_url(self.advertise, switch.address[1], self.key_file)
            ctl = hostdrv.SwitchControl(s.url)
            ctl.configure_replay(seed=s.seed)
            if s.rate_limiter is not None:
                lim = s.rate_limiter
                ctl.configure_rate_limiter(lim.min_size, lim.samples_per_insert,
                                           lim.error_buffer)
            s.capacity = ctl.read("RPL_CAPACITY")
            have = ctl.read("RPL_RECORD_BYTES")
            ctl.close()
            why = innet_refusal(s, have, s.url)
            if why:
                raise ValueError(why)
            s.record_bytes = have
        return s

    def stop(self) -> None:
        """Tear down what :meth:`start` brought up."""
        if self.server is not None:
            self.server.stop()
        if self.switch is not None:
            self.switch.stop()
