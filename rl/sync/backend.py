"""Launcher side: start and stop the shared piece of a strategy (:class:`SyncBackend`)."""

from __future__ import annotations

from hostdrv.wire.regmap import REGISTERS
from rl.sync.ps import ParameterServer
from rl.sync.rounds import ReferenceHub
from rl.sync.spec import SyncSpec


def switch_url(host: str, port: int, key_file: str | None = None) -> str:
    """``soft://host:port``, with ``?key=key_file`` when the switch checks a control key."""
    return f"soft://{host}:{port}" + (f"?key={key_file}" if key_file else "")


class SyncBackend:
    """Starts and stops what a strategy needs outside the workers.

    ``inswitch``: a soft switch when no URL is given, then the aggregation job
    is configured (members, slots, elements per packet, dtype, mode,
    threshold, staleness). ``ps``: a :class:`ParameterServer` thread.
    ``allreduce``: the TCPStore the gloo ranks rendezvous through (also for
    ``inswitch`` through the ``netrl`` backend, ``spec.backend``).
    ``reference``: a :class:`ReferenceHub`.

    Parameters
    ----------
    spec : SyncSpec
        The strategy; its ``url``/``address``/``hub`` are filled by :meth:`start`.
    packet_elems : int or None
        Elements per switch packet (P); ``None`` takes the switch's largest,
        ``AGG_MAX_ELEMS`` (a soft switch started here takes jumbo datagrams,
        :data:`hostdrv.wire.protocol.MAX_JUMBO_ELEMS`, as it runs on loopback).
    slots : int
        Switch slots (S); by default the RTL's slot memory depth (``AGG_MAX_SLOTS``, 64).
    capacity : int
        Replay records of a soft switch this backend starts (the RTL default,
        ``RPL_CAPACITY`` = 16384, so that in-network replay on the same switch has room).
    record_bytes : int
        Record size R of a soft switch this backend starts (the in-network replay's, when it
        shares the switch: 7104 for Atari frames).
    host : str
        Address the soft switch, parameter server or TCPStore started here listens
        on (default loopback; torchrun's rank 0 binds the address other hosts
        reach it at).
    advertise : str or None
        Address the workers are given for them (default ``host``).
    key_file : str or None
        Control key file of a soft switch started here (its URL then carries
        ``?key=key_file``): needed when workers register from other hosts, as a
        switch executes unsigned control requests from loopback only.
    """

    def __init__(self, spec: SyncSpec, *, packet_elems: int | None = None,
                 slots: int = REGISTERS["AGG_MAX_SLOTS"].reset,
                 capacity: int = REGISTERS["RPL_CAPACITY"].reset, host: str = "127.0.0.1",
                 advertise: str | None = None, key_file: str | None = None,
                 record_bytes: int = REGISTERS["RPL_RECORD_BYTES"].reset) -> None:
        self.spec = spec
        self.host = host
        self.advertise = advertise or host
        self.key_file = key_file
        self.packet_elems = packet_elems
        self.slots = slots
        self.capacity = capacity
        self.record_bytes = record_bytes
        self.switch: object | None = None
        self.server: ParameterServer | None = None
        self.store: object | None = None
        self.own_switch = False

    def start(self) -> SyncSpec:
        """Bring the shared piece up and return the spec the workers use."""
        s = self.spec
        if s.kind == "inswitch":
            import hostdrv
            from hostdrv.wire.protocol import MAX_JUMBO_ELEMS

            if s.url is None:
                self.switch = hostdrv.SoftSwitch((self.host, 0), capacity=self.capacity,
                                                 record_bytes=self.record_bytes,
                                                 max_elems=MAX_JUMBO_ELEMS,
                                                 control_key=self.key_file)
                self.switch.start()
                self.own_switch = True
                s.url = switch_url(self.advertise, self.switch.address[1], self.key_file)
            ctl = hostdrv.SwitchControl(s.url)
            if self.packet_elems is None:
                self.packet_elems = ctl.read("AGG_MAX_ELEMS")
            ctl.configure_aggregation(
                members=s.world, slots=self.slots, packet_elems=self.packet_elems, dtype=s.dtype,
                mode=s.mode, threshold=s.threshold if s.mode == "async" else None,
                staleness=s.staleness)
            ctl.close()
            if s.backend == "netrl":
                self._start_store()
        elif s.kind == "ps":
            self.server = ParameterServer(s.world, s.mode, s.threshold, s.staleness,
                                          host=self.host).start()
            s.address = (self.advertise, self.server.address[1])
        elif s.kind == "allreduce":
            self._start_store()
        else:
            s.hub = ReferenceHub(s.world, s.mode, s.threshold, s.staleness)
        return s

    def _start_store(self) -> None:
        import torch.distributed as dist

        self.store = dist.TCPStore(self.host, 0, None, is_master=True, wait_for_workers=False)
        self.spec.address = (self.advertise, self.store.port)

    def stop(self) -> None:
        """Tear down what :meth:`start` brought up."""
        if self.server is not None:
            self.server.stop()
        if self.own_switch and self.switch is not None:
            self.switch.stop()
        self.store = None

