"""The learning switch's MAC table (ordinary traffic), mirroring ``hw/rtl/nrl_l2_learn.v``."""

from __future__ import annotations

from hostdrv.wire import consts as C
from hostdrv.wire import regmap

__all__ = ["MAC_PORTS", "L2Table"]

MAC_PORTS = C.MAC_PORTS
"""SUME port bitmap of the four 10G MAC ports (even bits; odd bits are DMA)."""

_ETH_LEN = C.ETH_LEN  # shorter frames neither teach the MAC table nor are looked up in it


class L2Table:
    """MAC table of the learning switch (ordinary, non-protocol traffic).

    The switch learns like the SUME reference ``output_port_lookup``
    (``mac_cam_lut``): the source MAC of every received frame is bound to the
    port it came in on, and an ordinary frame to a learned unicast MAC goes to
    that port only. ``docs/architecture.md`` (L2 switching) is the prose of
    these rules; the RTL (``hw/rtl/nrl_l2_learn.v``) and the native engine
    implement them bit for bit. Per frame, in this order:

    1. **Lookup** (:meth:`egress`, only ordinary frames use it): a frame
       shorter than an Ethernet header (14 bytes), a broadcast or multicast
       destination (bit 0 of byte 0) and an unknown destination are flooded
       to the MAC ports but the source (``MAC_PORTS & ~src``); a learned
       destination goes to its port, and to no port at all (filtered, as the
       reference's ``rd_oq & ~src_port``) when it was learned on the frame's
       own source port.
    2. **Learning** (:meth:`learn`): a frame of at least 14 bytes whose source
       MAC is unicast teaches the table, protocol frames included. A known
       MAC takes the new port (a station that moved); an unknown one takes
       the entry at the replacement pointer, free or not, which then
       advances (round robin modulo the table size: the reference's
       ``pointer_add_cam``, so entries are replaced in the order they were
       taken). Either way the entry is marked active.
    3. **Aging** (:meth:`tick`): every received frame counts one towards the
       aging period of ``L2_AGE_FRAMES`` frames (0: no aging). The frame that
       ends a period sweeps the table: entries not marked active during the
       period are removed, then every mark is cleared. An entry thus lives
       between one and two periods after its last frame. Writing
       ``L2_AGE_FRAMES`` restarts the period.

    Parameters
    ----------
    entries:
        Table size (``L2_ENTRIES`` in the switch).
    age_frames:
        Initial aging period in frames (``L2_AGE_FRAMES``'s reset value).
    """

    __slots__ = ("active", "age", "left", "macs", "ports", "size", "victim", "_index")

    def __init__(self, entries: int = C.L2_ENTRIES,
                 age_frames: int = regmap.REGISTERS["L2_AGE_FRAMES"].reset) -> None:
        if entries < 1:
            raise ValueError(f"entries={entries!r} is invalid: must be at least 1")
        self.size = entries
        self.macs: list[bytes | None] = [None] * entries  # None: free entry
        self.ports = [0] * entries
        self.active = [False] * entries
        self.victim = 0  # replacement pointer: the entry the next new MAC takes
        self._index: dict[bytes, int] = {}
        self.age = age_frames
        self.left = age_frames  # frames until the end of the aging period

    def set_age(self, age_frames: int) -> None:
        """Set the aging period (``L2_AGE_FRAMES``) and restart it."""
        self.age = self.left = age_frames

    def egress(self, frame: bytes, src_port: int) -> int:
        """SUME egress bitmap of an ordinary frame (0: filtered), before it teaches the table."""
        if len(frame) < _ETH_LEN or frame[0] & 1:
            return MAC_PORTS & ~src_port
        i = self._index.get(bytes(frame[0:6]))
        if i is None:
            return MAC_PORTS & ~src_port
        return self.ports[i] & ~src_port

    def learn(self, frame: bytes, src_port: int) -> None:
        """Bind the frame's source MAC to ``src_port`` (rule 2)."""
        if len(frame) < _ETH_LEN or frame[6] & 1:
            return
        mac = bytes(frame[6:12])
        i = self._index.get(mac)
        if i is None:
            i = self.victim
            self.victim = (i + 1) % self.size
            old = self.macs[i]
            if old is not None:
                del self._index[old]
            self.macs[i] = mac
            self._index[mac] = i
        self.ports[i] = src_port
        self.active[i] = True

    def tick(self) -> None:
        """Count one received frame towards the aging period (rule 3)."""
        if not self.age:
            return
        if self.left > 1:
            self.left -= 1
            return
        self.left = self.age
        for i, mac in enumerate(self.macs):
            if mac is not None and not self.active[i]:
                del self._index[mac]
                self.macs[i] = None
            self.active[i] = False

    def entries(self) -> dict[bytes, int]:
        """The learned MACs and their ports (a snapshot)."""
        return {mac: self.ports[i] for mac, i in self._index.items()}
