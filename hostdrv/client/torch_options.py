"""Options of the ``netrl`` torch.distributed backend (``docs/torch.md``, "Options").

:class:`NetrlOptions` is what ``init_process_group("netrl", pg_options=...)`` (and
``new_group(..., pg_options=...)``) takes; every field left ``None`` takes its
``NETRL_*`` environment variable, then the built-in default
(:meth:`NetrlOptions.resolve`). No torch import here: the options can be built and
checked on a machine without torch.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass

from hostdrv.wire.consts import HEADER_OFFSET
from hostdrv.wire.net import SOCKET_BUFFER
from hostdrv.wire.protocol import HEADER_LEN

FALLBACKS = ("gloo", "warn", "error")
"""Fallback policies: what a sum the switch cannot do does. ``gloo``: runs on gloo,
counted in ``stats()``; ``warn``: the same and one :class:`RuntimeWarning` per reason;
``error``: raises ``NetrlUnsupportedError`` (what ``strict=True`` also selects)."""

MAX_BACKOFF = 1.0
"""The largest retransmission timeout (s) a switch call's backoff reaches."""


def _env_int(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        return int(raw, 0)
    except ValueError:
        raise ValueError(f"bad {name}={raw!r}: must be an integer") from None


def _env_seconds(env: Mapping[str, str], name: str) -> float | None:
    raw = env.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"bad {name}={raw!r}: must be seconds") from None
    if not value > 0:
        raise ValueError(f"bad {name}={raw!r}: must be positive")
    return value


def _env_bool(env: Mapping[str, str], name: str) -> bool | None:
    raw = env.get(name, "").strip().lower()
    if not raw:
        return None
    if raw not in ("0", "1", "false", "true", "no", "yes"):
        raise ValueError(f"bad {name}={raw!r}: must be 0 or 1")
    return raw in ("1", "true", "yes")


@dataclass(frozen=True)
class NetrlOptions:
    """How a ``netrl`` group reaches and uses the switch.

    Pass it as ``pg_options`` to ``init_process_group("netrl", ...)`` or
    ``new_group(backend="netrl", ...)``. A field left ``None`` takes the environment
    variable named below, else the default.

    Attributes
    ----------
    switch:
        Switch URL (``NETRL_SWITCH``; default: rank 0 starts an embedded soft switch
        on loopback). Each rank uses its own value; set it on every rank or none.
    timeout:
        Seconds a switch all-reduce retransmits before it fails (``NETRL_TIMEOUT``;
        default: the group's ``timeout``).
    window:
        Chunks in flight per rank (``NETRL_WINDOW``; default :func:`default_window`).
    packet_elems:
        Elements per packet rank 0 configures (``NETRL_ELEMS``; default the switch's
        ``AGG_MAX_ELEMS``).
    slots:
        Slots the group's job asks for and configures (``NETRL_SLOTS``; default its share
        ``AGG_MAX_SLOTS // JOBS``, every slot on a switch of one job;
        :mod:`hostdrv.client.torch_jobs`). Granted best effort: fewer when fewer are free,
        and none sends the group's sums to the hosts.
    lease:
        Seconds of the group's job lease (``JOB_LEASE``), renewed by its heartbeat every
        quarter of it (``NETRL_LEASE``; 60).
    rto:
        First retransmission timeout in seconds (``NETRL_RTO``; 0.05), doubling up to
        :data:`MAX_BACKOFF`.
    fallback:
        One of :data:`FALLBACKS` (``NETRL_FALLBACK``; ``gloo``).
    strict:
        ``True``: a sum the switch cannot do raises (``NETRL_STRICT``; ``False``);
        the same as ``fallback="error"``.
    member_port:
        One-hot switch port of this rank's member entry (``NETRL_MEMBER_PORT``;
        ``1 << rank``).
    leaves:
        Above :data:`~hostdrv.wire.protocol.MAX_MEMBERS` ranks: the URLs of the leaf
        switches under the root ``switch`` (``NETRL_LEAVES``, comma-separated; default:
        rank 0 starts embedded soft switches), up to 7 ranks per leaf
        (:mod:`hostdrv.client.torch_hierarchy`).
    dead_after:
        Seconds after which a rank whose heartbeat stopped is declared dead and every
        survivor's pending and next switch call fails naming it (``NETRL_DEAD_AFTER``;
        5). ``heartbeat`` (``NETRL_HEARTBEAT``; 0.5 s) is how often each rank beats
        and checks the others.
    """

    switch: str | None = None
    timeout: float | None = None
    window: int | None = None
    packet_elems: int | None = None
    slots: int | None = None
    rto: float | None = None
    fallback: str | None = None
    strict: bool | None = None
    member_port: int | None = None
    leaves: tuple[str, ...] | None = None
    dead_after: float | None = None
    heartbeat: float | None = None
    lease: float | None = None

    def __post_init__(self) -> None:
        if self.fallback is not None and self.fallback not in FALLBACKS:
            raise ValueError(f"bad fallback={self.fallback!r}: one of {', '.join(FALLBACKS)}")
        if self.leaves is not None and (isinstance(self.leaves, str) or not self.leaves):
            raise ValueError(f"bad leaves={self.leaves!r}: a non-empty sequence of URLs")
        for name in ("timeout", "rto", "dead_after", "heartbeat", "lease"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"bad {name}={value!r}: must be positive seconds")
        for name in ("window", "packet_elems", "slots", "member_port"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value <= 0):
                raise ValueError(f"bad {name}={value!r}: must be a positive integer")

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> NetrlOptions:
        """The options the ``NETRL_*`` variables give (``env``: :data:`os.environ`).

        Raises
        ------
        ValueError
            A variable that does not parse (named, with its value).
        """
        env = os.environ if env is None else env
        fallback = env.get("NETRL_FALLBACK", "").strip().lower() or None
        return cls(switch=env.get("NETRL_SWITCH", "").strip() or None,
                   timeout=_env_seconds(env, "NETRL_TIMEOUT"),
                   window=_env_int(env, "NETRL_WINDOW"),
                   packet_elems=_env_int(env, "NETRL_ELEMS"),
                   slots=_env_int(env, "NETRL_SLOTS"),
                   rto=_env_seconds(env, "NETRL_RTO"),
                   fallback=fallback, strict=_env_bool(env, "NETRL_STRICT"),
                   member_port=_env_int(env, "NETRL_MEMBER_PORT"),
                   leaves=tuple(u.strip() for u in env.get("NETRL_LEAVES", "").split(",")
                                if u.strip()) or None,
                   dead_after=_env_seconds(env, "NETRL_DEAD_AFTER"),
                   heartbeat=_env_seconds(env, "NETRL_HEARTBEAT"),
                   lease=_env_seconds(env, "NETRL_LEASE"))

    def resolve(self, env: Mapping[str, str] | None = None) -> NetrlOptions:
        """These options with every ``None`` field taken from the environment, then the
        defaults (``timeout``, ``window``, ``packet_elems``, ``slots``, ``switch`` and
        ``member_port`` may stay ``None``: the group decides)."""
        merged = dataclasses.replace(
            NetrlOptions.from_env(env),
            **{f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if getattr(self, f.name) is not None})
        fallback = merged.fallback or "gloo"
        if merged.strict:
            fallback = "error"
        return dataclasses.replace(
            merged, rto=merged.rto or 0.05, fallback=fallback,
            strict=fallback == "error",
            dead_after=merged.dead_after or 5.0, heartbeat=merged.heartbeat or 0.5)


def retries_for(timeout: float, rto: float, max_backoff: float = MAX_BACKOFF) -> int:
    """Retransmissions after which an :class:`~hostdrv.Aggregator` gives up no sooner
    than ``timeout`` seconds (its timer starts at ``rto`` and doubles up to
    ``max_backoff``)."""
    waited, k = rto, 0
    while waited < timeout:
        k += 1
        waited += min(rto * (1 << min(k, 30)), max(max_backoff, rto))
    return k


SKB_OVERHEAD = 256
"""Bytes of kernel memory a received datagram (or IP fragment) costs besides its data
buffer: the ``sk_buff`` itself (its ``truesize`` minus the buffer; measured on the rack's
veths, see :func:`datagram_truesize`)."""
SKB_SHARED_INFO = 320
"""Bytes the kernel adds to every data buffer (``skb_shared_info``) before rounding the
allocation up to a power of two."""
FRAME_HEADERS = HEADER_OFFSET
"""Ethernet, IPv4 and UDP headers in front of a datagram's payload (the generated
:data:`~hostdrv.wire.consts.HEADER_OFFSET`)."""
INFLIGHT_BYTES = 128 << 10
"""Gradient bytes one rank keeps in flight at most by default: the bandwidth-delay product
of a 10 Gbit/s link at a 100 µs round trip (the rack's host-switch round trip at no link
delay is 47-100 µs, ``docs/rack.md``). More only queues in front of the link: on the
1 Gbit/s rack, 4 ranks, 8 KB chunks, a window of 64 took 60.7 ms per 4 MB call against
40.0 ms with 16 and 41.6 ms with 8 (interleaved, no datagram dropped anywhere)."""


def datagram_truesize(nbytes: int, mtu: int = 9000) -> int:
    """Kernel memory (``truesize``) a UDP datagram of ``nbytes`` payload holds in the
    receiving socket's buffer: per IP fragment one :data:`SKB_OVERHEAD` plus its frame and
    :data:`SKB_SHARED_INFO` rounded up to a power of two. Measured in the rack's switch
    namespace (``/proc/net/udp`` ``rx_queue`` over 20 datagrams, MTU 9000): 1436 bytes ->
    2304, 8228 -> 16640, 65444 (8 fragments) -> 120832, exactly this rule."""
    ip_payload = nbytes + 8
    frag = (mtu - 20) // 8 * 8
    total = 0
    while True:
        part = min(ip_payload, frag)
        frame = part + FRAME_HEADERS - 8 + SKB_SHARED_INFO  # the UDP header is in ``part``
        total += SKB_OVERHEAD + (1 << (frame - 1).bit_length())
        ip_payload -= part
        if ip_payload <= 0:
            return total


def default_window(packet_elems: int, slots: int, members: int,
                   buffer: int = SOCKET_BUFFER) -> int:
    """Chunks each rank keeps in flight unless ``window`` says: at most ``slots``; few
    enough that every member's whole window at once fits the soft switch's receive buffer
    (the kernel grants ``2 * buffer`` for ``SO_RCVBUF = buffer``,
    :data:`hostdrv.wire.net.SOCKET_BUFFER`, and charges each datagram its
    :func:`datagram_truesize`, about twice its payload), since a burst above it is dropped
    and costs a retransmission timeout; and at most :data:`INFLIGHT_BYTES` of payload per
    rank (the bandwidth-delay product: a deeper window only queues in front of the link,
    and the queue is time a starved switch adds to every chunk's round trip before the
    retransmission timer fires)."""
    payload = HEADER_LEN + 4 * packet_elems
    by_buffer = 2 * buffer // (members * datagram_truesize(payload))
    return max(1, min(slots, by_buffer, INFLIGHT_BYTES // (4 * packet_elems)))


__all__ = ["FALLBACKS", "FRAME_HEADERS", "INFLIGHT_BYTES", "MAX_BACKOFF", "NetrlOptions",
           "SKB_OVERHEAD", "SKB_SHARED_INFO", "datagram_truesize", "default_window", "retries_for"]
