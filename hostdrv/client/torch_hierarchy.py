"""More ranks than one switch aggregates: the leaf/root hierarchy of a ``netrl`` group.

Above :data:`~hostdrv.wire.protocol.MAX_MEMBERS` ranks the ``netrl`` backend puts
the ranks on leaf switches of at most :data:`LEAF_MEMBERS` members each (rank ``r``
on leaf ``r // per_leaf``, member id ``r % per_leaf``), and the leaves under one
root switch whose members are the leaves (``docs/protocol.md``, the leaf/root roles):
each leaf adds its members' chunks and sends the partial sum up as one
contribution, the root adds the leaves' and multicasts the sum down, and each leaf
relays it to its members. A leaf keeps one of its eight ports (``0x80``) for the
uplink, hence seven members. No torch import here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hostdrv.wire.protocol import MAX_MEMBERS

LEAF_MEMBERS = MAX_MEMBERS - 1
"""Ranks per leaf switch: one of a leaf's eight ports is its uplink."""
UPLINK_PORT = 1 << (MAX_MEMBERS - 1)
"""The leaf's one-hot port towards the root."""
MAX_RANKS = LEAF_MEMBERS * MAX_MEMBERS
"""The most ranks a two-level hierarchy holds (8 leaves of 7)."""


@dataclass(frozen=True)
class Plan:
    """Which rank sits on which leaf.

    Attributes
    ----------
    size:
        Ranks in the group.
    leaves:
        Number of leaf switches.
    per_leaf:
        Ranks per leaf (the last leaf may hold fewer).
    """

    size: int
    leaves: int
    per_leaf: int

    @classmethod
    def for_size(cls, size: int, leaves: int | None = None) -> Plan:
        """The plan for ``size`` ranks on ``leaves`` leaves (default: as few as hold them).

        Raises
        ------
        ValueError
            ``size`` above :data:`MAX_RANKS`, or ``leaves`` that cannot hold it (or more
            than the root's :data:`~hostdrv.wire.protocol.MAX_MEMBERS` members).
        """
        if size > MAX_RANKS:
            raise ValueError(
                f"netrl: world_size={size} is above the {MAX_RANKS} ranks a two-level "
                f"hierarchy holds ({MAX_MEMBERS} leaves of {LEAF_MEMBERS} ranks; "
                "hostdrv.wire.protocol.MAX_MEMBERS per switch): use the gloo backend")
        n = leaves if leaves is not None else -(-size // LEAF_MEMBERS)
        if not 1 <= n <= MAX_MEMBERS:
            raise ValueError(f"netrl: {n} leaf switches: the root aggregates 1..{MAX_MEMBERS}")
        per_leaf = -(-size // n)
        if per_leaf > LEAF_MEMBERS:
            raise ValueError(f"netrl: {size} ranks on {n} leaf switches is {per_leaf} per "
                             f"leaf; a leaf holds {LEAF_MEMBERS} (one port is its uplink)")
        return cls(size, n, per_leaf)

    def leaf_of(self, rank: int) -> tuple[int, int]:
        """(leaf index, member id on that leaf) of ``rank``."""
        return rank // self.per_leaf, rank % self.per_leaf

    def members(self, leaf: int) -> int:
        """Ranks on ``leaf``."""
        return max(0, min(self.per_leaf, self.size - leaf * self.per_leaf))


def configure(root_url: str, leaf_urls: Sequence[str], plan: Plan, *, slots: int | None,
              packet_elems: int | None) -> list[int]:
    """Configure the root and every leaf for ``plan``; returns each leaf's ``JOB_ID``.

    The root's members are the leaves (member ``k`` = leaf ``k``'s address, role
    leaf); each leaf is configured with its ranks as members, the uplink
    :data:`UPLINK_PORT`, the root as parent and ``k`` as its id there. ``slots`` and
    ``packet_elems`` default to the smallest ``AGG_MAX_*`` of the switches.
    """
    from hostdrv.client.control import SwitchControl
    from hostdrv.client.transport import switch_address

    if len(leaf_urls) != plan.leaves:
        raise ValueError(f"netrl: {len(leaf_urls)} leaf switch URLs for {plan.leaves} leaves")
    root_addr = switch_address(root_url)
    controls = [SwitchControl(u) for u in (root_url, *leaf_urls)]
    try:
        slots = slots or min(c.read("AGG_MAX_SLOTS") for c in controls)
        packet_elems = packet_elems or min(c.read("AGG_MAX_ELEMS") for c in controls)
        root, leaves = controls[0], controls[1:]
        root.configure_aggregation(members=plan.leaves, slots=slots, packet_elems=packet_elems,
                                   dtype="fp32", mode="sync")
        jobs = []
        for k, (url, ctl) in enumerate(zip(leaf_urls, leaves, strict=True)):
            host, port = switch_address(url)
            root.set_member(k, port=1 << k, ip=host, udp=port, role=1)
            ctl.configure_aggregation(members=plan.members(k), slots=slots, packet_elems=packet_elems,
                                      dtype="fp32", mode="sync", role="leaf",
                                      uplink_port=UPLINK_PORT, parent=root_addr, leaf_id=k)
            jobs.append(ctl.read("JOB_ID"))
        return jobs
    finally:
        for c in controls:
            c.close()


__all__ = ["LEAF_MEMBERS", "MAX_RANKS", "UPLINK_PORT", "Plan", "configure"]
