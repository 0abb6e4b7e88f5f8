"""Clients: in-network all-reduce (:class:`Aggregator`) and replay (:class:`ReplayClient`).

Both speak the protocol of ``docs/protocol.md`` over a
:class:`~hostdrv.transport.DatagramTransport` and read the switch
configuration through :class:`~hostdrv.control.SwitchControl`; the URL picks
the backend (soft switch, simulation, board).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from hostdrv import regmap
from hostdrv.control import ROLE_ACTOR, ROLE_LEARNER, ROLE_WORKER, SwitchControl
from hostdrv.net import ip_to_int
from hostdrv.protocol import (
    AUX_COUNT_MASK,
    BLOCK,
    DESCRIPTOR,
    HEADER,
    HEADER_LEN,
    MAX_BATCH,
    MAX_JUMBO_ELEMS,
    MAX_MEMBERS,
    MAX_PUSH_RECORDS,
    MAX_UPDATE_PAIRS,
    VERSION,
    Flags,
    Opcode,
)
from hostdrv.protocol_consts import EPOCH_ROUNDS
from hostdrv.transport import (
    Backend,
    DatagramTransport,
    SwitchTimeoutError,
    open_datagram,
)

_RESULT = int(Opcode.RESULT)
_GRADIENT = int(Opcode.GRADIENT)
_PUSH_ACK = int(Opcode.PUSH_ACK)
_SAMPLE_RESP = int(Opcode.SAMPLE_RESP)
_INT32 = int(Flags.INT32)
_RESEND = int(Flags.RESEND)
_ERROR = int(Flags.ERROR)
_PRIORITIZED = int(Flags.PRIORITIZED)
_M32 = 0xFFFFFFFF
_RECV_BYTES = 65536
_EPOCH_MASK = _M32 & ~(EPOCH_ROUNDS - 1)
_WHY_NO_RESULT = tuple(n for n in regmap.COUNTERS if n.startswith("CNT_DROP_")
                       and n not in ("CNT_DROP_EMPTY", "CNT_DROP_BAD_INDEX"))
"""Counters that can explain a chunk that got no RESULT: every drop reason but the replay-only
ones (section 6 of the protocol)."""


def _newer(a: int, b: int) -> bool:
    """Whether round ``a`` is newer than round ``b`` (mod 2**32, half-range window)."""
    return 0 < ((a - b) & _M32) < 1 << 31


class AllreduceError(RuntimeError):
    """An all-reduce call failed; the next call restarts the rounds (protocol section 4)."""


class AllreduceTimeoutError(SwitchTimeoutError):
    """No RESULT for a chunk after every retransmission.

    The next :meth:`Aggregator.allreduce` restarts the rounds in a new epoch,
    so a job carries on once every member is back (protocol section 4,
    "Epochs, failures and rejoin").

    Attributes
    ----------
    slot, round, chunk:
        The slot and round that got no answer, and the chunk of the tensor.
    counters:
        Nonzero counters of :data:`_WHY_NO_RESULT` read when the call gave up
        (empty when the switch's registers could not be read).
    """

    def __init__(self, url: str, slot: int, round_: int, chunk: int, tries: int,
                 counters: Mapping[str, int] | None = None) -> None:
        self.slot = slot
        self.round = round_
        self.chunk = chunk
        self.counters = dict(counters or {})
        seen = ", ".join(f"{k}={v}" for k, v in self.counters.items())
        super().__init__(url, f"GRADIENT for slot {slot} round {round_} (chunk {chunk})", tries,
                         "check that every member runs, is registered and all-reduces the "
                         "same tensors; the switch counts why it dropped a GRADIENT in "
                         + ", ".join(_WHY_NO_RESULT)
                         + (f" (now: {seen})" if seen else ""))


class TensorMismatchError(AllreduceError, ValueError):
    """Members all-reduced tensors of different lengths in the same call.

    Attributes
    ----------
    mine:
        Elements of this member's tensor.
    round_total:
        Elements of the tensors the round was summing (the first contribution's).
    other:
        The refused length (``ERROR`` RESULT ``aux``), or ``round_total``.
    culprit:
        Member whose contribution the switch refused (``None`` when the
        round completed without this member, which learned it from ``total``).
    slot, round:
        Where it was detected.
    """

    def __init__(self, mine: int, round_total: int, other: int, culprit: int | None, slot: int,
                 round_: int) -> None:
        self.mine, self.round_total, self.other = mine, round_total, other
        self.culprit, self.slot, self.round = culprit, slot, round_
        who = (f"member {culprit} sent a tensor of {other} elements" if culprit is not None
               else f"this member's tensor has {mine} elements")
        super().__init__(
            f"tensor length mismatch: all-reduce of {mine} elements, but {who} to a round of "
            f"{round_total}-element tensors (slot {slot}, round {round_}); every member must "
            "all-reduce tensors of the same length in the same order. Nothing was summed "
            "across lengths; the next call starts a new epoch")


class AllreduceDesyncError(AllreduceError):
    """In sync mode the slots moved on without this member (it restarted or was cut off)
    and catching up by a new epoch did not help either."""


class ReplayTimeoutError(SwitchTimeoutError):
    """A replay request (PUSH or SAMPLE_REQ) got no complete answer after every retry."""


class ReplayEmptyError(ReplayTimeoutError):
    """A sample was asked of an empty replay memory (or one whose priorities are all 0)."""


def _torch_module(x: object) -> Any:
    """The torch module when ``x`` is a torch tensor (torch is not imported otherwise)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return torch
    return None


class _Endpoint:
    """What both clients share: control, transport, member registration, sequence ids."""

    def __init__(self, url: str, *, worker: int, job: int, register: bool, roles: int,
                 port: int | None, member_address: tuple[str, int] | None,
                 control: str | SwitchControl | None,
                 backends: Mapping[str, Backend] | None) -> None:
        if not 0 <= worker < MAX_MEMBERS:
            raise ValueError(f"bad worker={worker!r}: member ids are 0..{MAX_MEMBERS - 1}")
        if not 0 <= job <= 0xFF:
            raise ValueError(f"bad job={job!r}: must be 0..255")
        self.url = url
        self.worker = worker
        self.job = job
        self.control = control if isinstance(control, SwitchControl) else SwitchControl(
            control or url, backends=backends)
        try:
            switch_job = self.control.read("JOB_ID")
            if switch_job != job:
                raise ValueError(f"bad job={job}: the switch at {url} runs JOB_ID={switch_job}; "
                                 "every packet of another job would be dropped (CNT_DROP_BAD_JOB)")
            self.transport: DatagramTransport = open_datagram(url, backends=backends)
        except BaseException:
            self.control.close()
            raise
        self._rbuf = bytearray(_RECV_BYTES)
        self._seq = int.from_bytes(os.urandom(4), "little")
        if register:
            self.register(roles, port=port, address=member_address)

    def register(self, roles: int, *, port: int | None = None,
                 address: tuple[str, int] | None = None) -> None:
        """Write this endpoint's member table entry and add ``roles`` to its role bits.

        Parameters
        ----------
        roles:
            Role bits to set (``ROLE_WORKER``, ``ROLE_ACTOR``, ``ROLE_LEARNER``).
        port:
            One-hot switch port (default ``1 << worker``, the soft switch's
            convention of one virtual port per member).
        address:
            (IPv4, UDP port) the switch sees this endpoint as (default: the
            socket's own address).
        """
        ctl, w = self.control, self.worker
        ip, udp = address if address is not None else self.transport.local_address
        ctl.write(regmap.member_reg("MEMBER_PORT", w), port if port is not None else 1 << w)
        ctl.write(regmap.member_reg("MEMBER_IP", w), ip_to_int(ip))
        ctl.write(regmap.member_reg("MEMBER_UDP", w), udp)
        role = ctl.read(regmap.member_reg("MEMBER_ROLE", w))
        ctl.write(regmap.member_reg("MEMBER_ROLE", w), role | roles)

    def _next_seq(self) -> int:
        self._seq = (self._seq + 1) & _M32
        return self._seq

    def close(self) -> None:
        """Release the transport and the control channel."""
        self.transport.close()
        self.control.close()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---------------------------------------------------------------------------
# aggregation


class Aggregator(_Endpoint):
    """All-reduce (sum) through the switch's aggregation engine.

    Parameters
    ----------
    url:
        Switch URL (``soft://host:port``).
    worker:
        Member id, 0 … ``AGG_MEMBERS`` − 1.
    job:
        Job id (must equal ``JOB_ID``).
    timeout:
        Seconds before a chunk's GRADIENT is sent again; doubles at each
        retransmission up to ``max_backoff``.
    retries:
        Retransmissions of one chunk before :class:`AllreduceTimeoutError`.
    window:
        Chunks in flight, at most ``AGG_SLOTS`` (the default).
    register:
        Write this worker's member entry (``MEMBER_PORT`` = ``1 << worker``
        unless ``port`` is given, ``MEMBER_IP``/``MEMBER_UDP`` = this socket,
        role bit 0 added).
    port, member_address:
        Override the port bitmap / the (IP, UDP port) registered (e.g. behind
        a NAT or a test proxy).
    control:
        Control URL or :class:`SwitchControl` (default: ``url``).
    max_backoff:
        Largest retransmission timeout in seconds.

    Raises
    ------
    ValueError
        At construction, before anything is registered: ``worker`` is not
        below ``AGG_MEMBERS``, ``job`` is not the switch's ``JOB_ID``, or the
        switch's aggregation configuration is unusable.

    Notes
    -----
    Tensors are cut into chunks of P = ``AGG_ELEMS`` elements, the last one
    padded with zeros; chunk ``c`` goes to slot ``c mod S`` with that slot's
    next round, and every chunk carries the tensor length (``total``). Every
    member must call :meth:`allreduce` with tensors of the same sizes in the
    same order so that the per-slot rounds agree; a member whose tensor has
    another length gets :class:`TensorMismatchError`, and so does every other
    member of that call (the switch never adds it).

    Rounds start at the job's epoch base (``AGG_EPOCH``). After a failed
    call (timeout, mismatch, or in sync mode a member found out of step) the
    next call restarts every slot in a new epoch, so members that failed
    together, and a restarted member, meet again (protocol section 4,
    "Epochs, failures and rejoin"); a restarted member simply constructs a
    new :class:`Aggregator` with the same ``worker``.

    With ``AGG_DTYPE`` = int32, float tensors are quantized with a shared
    ``scale``: each element is sent as ``round(x * scale)`` (saturated to the
    int32 range) and the sum divided by ``scale``; the integer sum is exact
    and independent of arrival order, and wraps modulo 2**32 on overflow, so
    choose ``scale`` with ``N * max|x| * scale < 2**31``.
    """

    def __init__(self, url: str, *, worker: int, job: int = 0, timeout: float = 0.05,
                 retries: int = 10, window: int | None = None, register: bool = True,
                 port: int | None = None, member_address: tuple[str, int] | None = None,
                 control: str | SwitchControl | None = None, max_backoff: float = 1.0,
                 backends: Mapping[str, Backend] | None = None) -> None:
        super().__init__(url, worker=worker, job=job, register=False, roles=ROLE_WORKER,
                         port=port, member_address=member_address, control=control,
                         backends=backends)
        try:
            ctl = self.control
            self.slots = ctl.read("AGG_SLOTS")
            self.elems = ctl.read("AGG_ELEMS")
            self.int32 = ctl.read("AGG_DTYPE") == 1
            self.async_mode = ctl.read("AGG_MODE") == 1
            members = ctl.read("AGG_MEMBERS")
            if not 1 <= self.slots <= 64 or self.elems % 16 or \
                    not 16 <= self.elems <= MAX_JUMBO_ELEMS:
                raise ValueError(f"bad switch configuration AGG_SLOTS={self.slots} "
                                 f"AGG_ELEMS={self.elems}")
            if worker >= members:
                raise ValueError(f"bad worker={worker}: the switch's job has AGG_MEMBERS="
                                 f"{members} aggregation members (ids 0..{members - 1}); "
                                 "configure the job first (SwitchControl.configure_aggregation)")
            if window is not None and not 1 <= window:
                raise ValueError(f"bad window={window!r}: must be >= 1")
            if register:
                self.register(ROLE_WORKER, port=port, address=member_address)
            base = ctl.read("AGG_EPOCH")
        except BaseException:
            self.close()
            raise
        self.window = min(window or self.slots, self.slots)
        self.timeout = timeout
        self.retries = retries
        self.max_backoff = max(max_backoff, timeout)
        self.wire_dtype = np.dtype("<i4") if self.int32 else np.dtype("<f4")
        s, p = self.slots, self.elems
        self._msg_len = HEADER_LEN + 4 * p
        # one preallocated GRADIENT per slot, back to back, so consecutive slots
        # go out in one GSO call
        self._sbuf = bytearray(s * self._msg_len)
        self._smv = memoryview(self._sbuf)
        self._spay = np.ndarray((s, p), dtype=self.wire_dtype, buffer=self._sbuf,
                                offset=HEADER_LEN, strides=(self._msg_len, 4))
        self._flags = _INT32 if self.int32 else 0
        self._rounds = [base] * s
        self._resync = False
        self.epochs = 0
        """New epochs this member started (after failed calls)."""
        self.last_aux = np.zeros(0, dtype=np.uint32)
        """RESULT ``aux`` of each chunk of the last call: contributor count and order of
        addition (:func:`hostdrv.protocol.result_order` decodes it)."""
        self.last_contributors = np.zeros(0, dtype=np.uint32)
        """Contributor count (RESULT ``aux`` bits 3:0) of each chunk of the last call."""
        self.last_rounds = np.zeros(0, dtype=np.uint32)
        """Round whose result each chunk of the last call took."""
        self.stale_chunks = 0
        """Chunks of the last call answered by a newer round (async straggler catch-up)."""
        self.resent_results = 0
        """Results of the last call that came as a RESEND (late or duplicate contribution)."""
        self.retransmissions = 0
        """GRADIENTs sent again in the last call."""

    @property
    def rounds(self) -> list[int]:
        """Next round of every slot."""
        return list(self._rounds)

    def resync(self) -> int:
        """Restart every slot's rounds in a new epoch (protocol section 4).

        The new base is the newer of ``AGG_EPOCH`` and the epoch after the
        newest round this member used; it is written to ``AGG_EPOCH`` when
        newer, so every member that fails the same call, and a member that
        (re)joins later, lands on the same base. :meth:`allreduce` calls this
        itself after a failed call.

        Returns
        -------
        int
            The new epoch base (every slot's next round).
        """
        newest = self._rounds[0]
        for r in self._rounds[1:]:
            if _newer(r, newest):
                newest = r
        own = ((newest & _EPOCH_MASK) + EPOCH_ROUNDS) & _M32
        try:
            shared = self.control.read("AGG_EPOCH")
        except (SwitchTimeoutError, OSError):
            shared = own  # registers unreachable: the members' own arithmetic still agrees
        base = shared if _newer(shared, own) else own
        if base != shared:
            self.control.write("AGG_EPOCH", base)
        self._rounds = [base] * self.slots
        self._resync = False
        self.epochs += 1
        return base

    def allreduce(self, x: Any, *, scale: float | None = None,
                  version: int | None = None) -> Any:
        """Sum ``x`` over every member.

        Parameters
        ----------
        x:
            numpy array or torch tensor of float32, float64 or int32, any shape.
        scale:
            int32 switch only: quantization scale for float input (required
            then; ignored for int32 input).
        version:
            Async staleness: the round the caller's weights are current to,
            sent as every chunk's ``aux``; by default each chunk's own round
            (fresh).

        Returns
        -------
        Same type, dtype, shape (and device for torch) as ``x``: the element-wise sum.

        Raises
        ------
        AllreduceTimeoutError
            A chunk got no RESULT after ``retries`` retransmissions.
        TensorMismatchError
            A member all-reduced a tensor of another length in this call.
        AllreduceDesyncError
            Sync mode: the slots were ahead of this member even after it
            started a new epoch.
        TypeError, ValueError
            Unsupported dtype (anything but float32, float64, int32, e.g.
            bfloat16), or float input on an int32 switch without ``scale``;
            raised before anything is sent.
        """
        torch = _torch_module(x)
        if torch is not None:
            if x.dtype not in (torch.float32, torch.float64, torch.int32):
                raise TypeError(f"bad dtype={x.dtype}: allreduce takes float32, float64 or int32")
            device = x.device
            arr = x.detach().to("cpu").contiguous().numpy()
        else:
            arr = np.asarray(x)
        dt = arr.dtype
        if dt not in (np.float32, np.float64, np.int32):
            raise TypeError(f"bad dtype={dt}: allreduce takes float32, float64 or int32")
        e = arr.size
        if e > _M32:
            raise ValueError(f"bad size={e}: a tensor has at most 2**32 - 1 elements")
        p = self.elems
        n = -(-e // p) if e else 0
        flat = np.zeros(n * p, dtype=self.wire_dtype)
        quantized = False
        if self.int32:
            if dt == np.int32:
                flat[:e] = arr.reshape(-1)
            else:
                if scale is None or not scale > 0:
                    raise ValueError(f"bad scale={scale!r}: the switch sums int32 "
                                     "(AGG_DTYPE=1); float input needs a positive scale")
                q = np.rint(arr.reshape(-1).astype(np.float64) * scale)
                flat[:e] = np.clip(q, -2**31, 2**31 - 1)
                quantized = True
        else:
            if dt == np.int32:
                raise TypeError("bad dtype=int32: the switch sums fp32 (AGG_DTYPE=0); "
                                "configure dtype='int32' to reduce integers")
            flat[:e] = arr.reshape(-1)
        out = np.empty(n * p, dtype=self.wire_dtype)
        if n:
            if self._resync:
                self.resync()
            restarted = False
            while True:
                try:
                    self._run(flat.reshape(n, p), out.reshape(n, p), n, e, version)
                    break
                except _OutOfStep as oos:
                    # sync: the slots moved on without us (we restarted, or were cut off):
                    # start the new epoch the others will start after their timeout
                    self.resync()
                    if restarted:
                        raise AllreduceDesyncError(
                            f"slot {oos.slot} is at round {oos.round} ahead of this member "
                            "even after a new epoch") from None
                    restarted = True
                except BaseException:
                    self._resync = True
                    raise
        res = out[:e]
        if quantized:
            res = (res.astype(np.float64) / scale).astype(dt)
        elif res.dtype != dt:
            res = res.astype(dt)
        res = res.reshape(arr.shape)
        if torch is not None:
            return torch.from_numpy(np.ascontiguousarray(res)).to(device)
        return res

    def send_chunks(self, x: np.ndarray, *, round_: int = 0, total: int | None = None) -> int:
        """Send every chunk of ``x`` once as GRADIENTs, without waiting for results.

        The send path of :meth:`allreduce` alone (headers packed into the
        preallocated per-slot buffers, payloads copied with one numpy
        assignment per batch of slots, one GSO call per batch), for
        benchmarks. Rounds are not advanced and nothing is retransmitted.

        Parameters
        ----------
        x:
            Array of the switch's wire dtype (float32 or int32).
        round_:
            Round number written into every header.
        total:
            Tensor length written into every header (default: the elements sent).

        Returns
        -------
        int
            Payload bytes handed to the transport (headers excluded).
        """
        flat = np.ascontiguousarray(x, dtype=self.wire_dtype).reshape(-1)
        p, s_count, L = self.elems, self.slots, self._msg_len
        n = flat.size // p
        chunks = flat[:n * p].reshape(n, p)
        pack = HEADER.pack_into
        for a in range(0, n, s_count):
            k = min(s_count, n - a)
            for s in range(k):
                pack(self._sbuf, s * L, VERSION, _GRADIENT, self._flags, self.job, self.worker,
                     s, round_ & _M32, p, round_ & _M32, n * p if total is None else total)
            self._spay[:k] = chunks[a:a + k]
            self.transport.send_segments(self._smv[:k * L], L)
        return n * p * 4

    def _counters_now(self) -> dict[str, int]:
        """Nonzero counters that can explain a missing RESULT (empty if unreadable)."""
        seen = {}
        try:
            for name in _WHY_NO_RESULT:
                v = self.control.read(name)
                if v:
                    seen[name] = v
        except Exception:  # noqa: BLE001 - a diagnosis must not hide the timeout itself
            return {}
        return seen

    def _run(self, chunks: np.ndarray, out: np.ndarray, n: int, total: int,
             version: int | None) -> None:
        """Send ``n`` chunks of a ``total``-element tensor, collect their results into ``out``."""
        s_count, window, p = self.slots, self.window, self.elems
        rounds = self._rounds
        pack = HEADER.pack_into
        unpack = HEADER.unpack_from
        L = self._msg_len
        sbuf, smv, spay = self._sbuf, self._smv, self._spay
        rbuf = self._rbuf
        recv = self.transport.recv_into
        send, send_segments = self.transport.send, self.transport.send_segments
        wire = self.wire_dtype
        flags, job, worker = self._flags, self.job, self.worker
        catch_up = self.async_mode
        chunk_of = [-1] * s_count  # chunk in flight on each slot
        cur_round = [0] * s_count
        deadline = [0.0] * s_count
        tries = [0] * s_count
        aux_of = np.zeros(n, dtype=np.uint32)
        got_round = np.zeros(n, dtype=np.uint32)
        stale = resent = retrans = 0
        nxt = done = inflight = 0
        timeout, max_backoff, retries = self.timeout, self.max_backoff, self.retries
        to_send: list[int] = []
        next_scan = float("inf")  # no deadline of an in-flight chunk is earlier
        while done < n:
            now = time.monotonic()
            # launch what the window and the slots allow
            while nxt < n and inflight < window:
                s = nxt % s_count
                if chunk_of[s] >= 0:
                    break
                r = rounds[s]
                chunk_of[s], cur_round[s] = nxt, r
                pack(sbuf, s * L, VERSION, _GRADIENT, flags, job, worker, s, r & _M32, p,
                     (r if version is None else version) & _M32, total)
                spay[s] = chunks[nxt]
                deadline[s], tries[s] = now + timeout, 1
                next_scan = min(next_scan, now + timeout)
                to_send.append(s)
                nxt += 1
                inflight += 1
            if to_send:
                i = 0
                while i < len(to_send):  # runs of consecutive slots: one GSO call each
                    j = i + 1
                    while j < len(to_send) and to_send[j] == to_send[j - 1] + 1:
                        j += 1
                    a, b = to_send[i], to_send[j - 1] + 1
                    if b - a == 1:
                        send(smv[a * L:b * L])
                    else:
                        send_segments(smv[a * L:b * L], L)
                    i = j
                to_send.clear()
            # wait for results until the earliest deadline
            nbytes, seg = recv(rbuf, max(0.0, next_scan - now))
            if nbytes:
                for off in range(0, nbytes, seg):
                    if min(seg, nbytes - off) != L:
                        continue
                    (_v, op, fl, jb, w, s, seq, cnt, aux, tot) = unpack(rbuf, off)
                    if op != _RESULT or jb != job or s >= s_count or cnt != p \
                            or (fl & _INT32) != flags:
                        continue
                    c = chunk_of[s]
                    if c < 0:
                        continue
                    d = (seq - cur_round[s]) & _M32
                    if d == 0:
                        pass
                    elif fl & _RESEND and d < 1 << 31:
                        if not catch_up:  # sync: nobody completes a round without us
                            raise _OutOfStep(s, seq)
                        stale += 1  # async: the slot moved on, take the newer result
                    else:
                        continue
                    if fl & _ERROR:
                        raise TensorMismatchError(total, tot, aux, w & 0x7, s, seq)
                    if tot != total:
                        raise TensorMismatchError(total, tot, tot, None, s, seq)
                    out[c] = np.frombuffer(rbuf, dtype=wire, count=p, offset=off + HEADER_LEN)
                    aux_of[c] = aux
                    got_round[c] = seq
                    if fl & _RESEND:
                        resent += 1
                    rounds[s] = (seq + 1) & _M32
                    chunk_of[s] = -1
                    inflight -= 1
                    done += 1
                now = time.monotonic()
                if now < next_scan:
                    continue
            else:
                now = time.monotonic()
            # retransmit what is due
            next_scan = float("inf")
            for s in range(s_count):
                if chunk_of[s] < 0:
                    continue
                if deadline[s] <= now:
                    if tries[s] > retries:
                        self._set_last(aux_of, got_round)
                        raise AllreduceTimeoutError(self.url, s, cur_round[s], chunk_of[s],
                                                    tries[s], self._counters_now())
                    send(smv[s * L:(s + 1) * L])
                    deadline[s] = now + min(timeout * (1 << tries[s]), max_backoff)
                    tries[s] += 1
                    retrans += 1
                next_scan = min(next_scan, deadline[s])
        self._set_last(aux_of, got_round)
        self.stale_chunks, self.resent_results, self.retransmissions = stale, resent, retrans

    def _set_last(self, aux: np.ndarray, rounds: np.ndarray) -> None:
        self.last_aux, self.last_rounds = aux, rounds
        self.last_contributors = aux & AUX_COUNT_MASK


class _OutOfStep(Exception):
    """Sync mode: a RESEND of a newer round than the chunk's (handled by a new epoch)."""

    def __init__(self, slot: int, round_: int) -> None:
        super().__init__(slot, round_)
        self.slot, self.round = slot, round_


# ---------------------------------------------------------------------------
# replay


_FIXED_HINT = " (Q16.16 priorities: convert float priorities with to_fixed)"


def _bad_value(values: np.ndarray, bad: np.ndarray, name: str, rule: str) -> ValueError:
    """A ``ValueError`` naming the first bad position of ``values`` and its value."""
    flat = int(np.flatnonzero(bad)[0])
    pos = np.unravel_index(flat, values.shape) if values.ndim else ()
    where = name + (f"[{', '.join(str(int(i)) for i in pos)}]" if pos else "")
    v = values.reshape(-1)[flat]
    value = v.item() if isinstance(v, np.generic) else v
    more = int(bad.sum()) - 1
    return ValueError(f"bad {where}={value!r}: {rule}"
                      + (f" ({more} more bad value{'s' if more > 1 else ''})" if more else ""))


def check_priorities(priority: Any, name: str = "priority") -> np.ndarray:
    """Float priorities as ``float64`` (same shape), each checked to be finite and >= 0.

    Raises
    ------
    ValueError
        When a priority is NaN, negative or infinite, or not a number; the
        message names the first such position (``name[i]``) and its value.
    """
    try:
        p = np.asarray(priority, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"bad {name}={priority!r}: priorities must be numbers ({e})") from None
    bad = ~np.isfinite(p) | (p < 0)
    if bad.any():
        raise _bad_value(p, bad, name, "a priority must be finite and >= 0 "
                                        "(p = (|delta| + eps) ** alpha)")
    return p


def check_u32(values: Any, name: str, hint: str = "") -> np.ndarray:
    """Integers as little-endian ``uint32`` (same shape), each checked to be in [0, 2**32 − 1].

    Floats are accepted when they hold an integer value. Nothing wraps or
    truncates silently.

    Raises
    ------
    ValueError
        When a value is not an integer in range (NaN, infinite, negative,
        fractional or >= 2**32); the message names the first such position
        (``name[i]``) and its value, then ``hint``.
    """
    a = np.asarray(values)
    with np.errstate(invalid="ignore"):
        if a.dtype.kind in "biu":
            bad = (a < 0) | (a > _M32)
        elif a.dtype.kind == "f":
            bad = ~np.isfinite(a) | (a < 0) | (a > _M32) | (a != np.rint(a))
        else:  # object arrays (Python ints past 64 bits, mixed types), strings, ...
            bad = np.array([not (isinstance(v, int | np.integer) and 0 <= v <= _M32)
                            for v in a.reshape(-1)], dtype=bool).reshape(a.shape)
    if bad.any():
        raise _bad_value(a, bad, name, "must be an integer in [0, 2**32 - 1]" + hint)
    return a.astype("<u4")


def to_fixed(priority: Any, name: str = "priority") -> np.ndarray:
    """Float priorities as Q16.16 ``uint32`` (``docs/protocol.md`` section 3).

    ``round(p * 65536)`` clamped to [1, 2**32 − 1], the range of a live
    record: 0 and priorities below 2**-17 become 1, priorities of 65536 and
    more become 2**32 − 1.

    Raises
    ------
    ValueError
        When a priority is NaN, negative or infinite (see :func:`check_priorities`;
        ``name`` is the argument named in the message).
    """
    p = check_priorities(priority, name)
    return np.clip(np.rint(np.minimum(p, 65536.0) * 65536.0), 1, _M32).astype(np.uint32)


def from_fixed(value: Any) -> np.ndarray:
    """Q16.16 ``uint32`` priorities as ``float64``."""
    return np.asarray(value, dtype=np.float64) / 65536.0


@dataclass
class Transitions:
    """A batch of transitions (arrays with a leading batch dimension)."""

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_obs: np.ndarray
    dones: np.ndarray


@dataclass
class SampleBatch(Transitions):
    """A sampled batch with what prioritized replay needs.

    Attributes
    ----------
    indices:
        Replay index of each sample (``int64``).
    priorities:
        Priority of each sample when it was drawn (``float64``, from Q16.16).
    totals:
        Sum tree total (prioritized) or valid records (uniform) per sample.
    size:
        Valid records when the last sample was drawn.
    weights:
        Importance weights ``(size * p / total) ** -beta`` divided by their
        maximum (all ones for a uniform sample), ``float32``.
    records:
        The raw records, ``uint8`` of shape (B, R).
    """

    indices: np.ndarray
    priorities: np.ndarray
    totals: np.ndarray
    size: int
    weights: np.ndarray
    records: np.ndarray

    @property
    def total(self) -> int:
        """Sum tree total of the last sample."""
        return int(self.totals[-1]) if len(self.totals) else 0


class ReplayClient(_Endpoint):
    """Push transitions into, sample from and reprioritize the switch's replay memory.

    Parameters
    ----------
    url:
        Switch URL.
    worker:
        Member id (0 … 7) of this actor/learner.
    job:
        Job id.
    obs_shape, obs_dtype, action_shape, action_dtype:
        Layout of a transition. A record is ``obs``, ``action``, ``reward``
        (float32), ``next_obs``, ``done`` (uint8), little-endian, packed
        back to back from byte 0 and padded with zeros to R =
        ``RPL_RECORD_BYTES``.
    timeout:
        Seconds to wait for an answer before asking again.
    retries:
        Attempts before :class:`ReplayTimeoutError`.
    register:
        Write this endpoint's member entry with ``roles``.
    roles:
        Role bits to register (default actor and learner).
    port, member_address, control:
        As for :class:`Aggregator`.
    window:
        Requests in flight at once.

    Raises
    ------
    ValueError
        When a record does not fit in R bytes.

    Notes
    -----
    A PUSH whose PUSH_ACK is lost is sent again, so its records may be
    stored twice (at least once). UPDATE has no acknowledgement: a lost
    UPDATE leaves the old priorities.
    """

    def __init__(self, url: str, *, worker: int, job: int = 0, obs_shape: tuple[int, ...],
                 obs_dtype: Any = np.float32, action_shape: tuple[int, ...] = (),
                 action_dtype: Any = np.int64, timeout: float = 0.2, retries: int = 5,
                 register: bool = True, roles: int = ROLE_ACTOR | ROLE_LEARNER,
                 port: int | None = None, member_address: tuple[str, int] | None = None,
                 control: str | SwitchControl | None = None, window: int = 8,
                 backends: Mapping[str, Backend] | None = None) -> None:
        super().__init__(url, worker=worker, job=job, register=register, roles=roles,
                         port=port, member_address=member_address, control=control,
                         backends=backends)
        self.record_bytes = self.control.read("RPL_RECORD_BYTES")
        self.capacity = self.control.read("RPL_CAPACITY")
        self.timeout = timeout
        self.retries = retries
        self.window = max(1, window)
        self.max_priority = 1.0
        """Priority given to pushed transitions without one (largest seen so far)."""
        self.record_dtype = record_dtype(obs_shape, obs_dtype, action_shape, action_dtype,
                                         self.record_bytes)

    # -- records ---------------------------------------------------------------------
    def pack(self, obs: Any, action: Any, reward: Any, next_obs: Any, done: Any) -> np.ndarray:
        """Transitions as structured records (``self.record_dtype``, shape (n,)).

        A single transition (``obs`` of shape ``obs_shape``) gives n = 1.
        """
        obs_shape = self.record_dtype["obs"].shape
        o = np.asarray(obs)
        single = o.shape == obs_shape
        n = 1 if single else len(o)
        rec = np.zeros(n, dtype=self.record_dtype)
        for name, value in (("obs", obs), ("action", action), ("reward", reward),
                            ("next_obs", next_obs), ("done", done)):
            v = np.asarray(value)
            want = (n, *self.record_dtype[name].shape)
            try:
                rec[name] = v.reshape(want)
            except ValueError:
                raise ValueError(f"bad {name} shape={v.shape}: expected {want[1:]} per "
                                 f"transition for {n} transitions") from None
        return rec

    def unpack(self, records: Any) -> Transitions:
        """Records (bytes, ``uint8`` (n, R) or structured) back to :class:`Transitions`."""
        return records_from_bytes(records, self.record_dtype)

    # -- push ------------------------------------------------------------------------
    def push(self, obs: Any, action: Any, reward: Any, next_obs: Any, done: Any,
             priority: Any = None) -> np.ndarray:
        """Store transitions; return their replay indices.

        Parameters
        ----------
        obs, action, reward, next_obs, done:
            One transition or a batch (leading dimension n).
        priority:
            Float priorities (scalar or n values, already ``(|δ| + ε)^α``);
            default :attr:`max_priority`. Sent as Q16.16 (:func:`to_fixed`:
            0 and tiny priorities become 1, huge ones 2**32 − 1).

        Returns
        -------
        numpy.ndarray
            ``int64`` index of each transition.

        Raises
        ------
        ValueError
            A priority is NaN, negative or infinite (nothing is sent).
        ReplayTimeoutError
            A PUSH got no PUSH_ACK after every retry.
        """
        rec = self.pack(obs, action, reward, next_obs, done)
        n = len(rec)
        prio = to_fixed(self.max_priority if priority is None else priority)
        prio = np.broadcast_to(prio, (n,))
        raw = rec.view(np.uint8).reshape(n, self.record_bytes)
        return self.push_records(raw, prio)

    def push_records(self, records: np.ndarray, priorities: np.ndarray) -> np.ndarray:
        """Push raw records (``uint8`` (n, R)) with Q16.16 priorities; return indices.

        ``priorities`` are sent as they are (0 allowed: never sampled by priority).

        Raises
        ------
        ValueError
            A priority is not an integer in [0, 2**32 − 1] (NaN, infinite,
            negative, fractional or too large), or the counts differ; nothing
            is sent.
        ReplayTimeoutError
            A PUSH got no PUSH_ACK after every retry.
        """
        rb = self.record_bytes
        records = np.ascontiguousarray(records, dtype=np.uint8).reshape(-1, rb)
        prios = check_u32(priorities, "priorities", _FIXED_HINT).reshape(-1)
        n = len(records)
        if len(prios) != n:
            raise ValueError(f"bad priorities length={len(prios)}: need one per record ({n})")
        indices = np.full(n, -1, dtype=np.int64)
        batches = [(a, min(a + MAX_PUSH_RECORDS, n)) for a in range(0, n, MAX_PUSH_RECORDS)]
        pending: dict[int, list[Any]] = {}  # seq -> [message, start, count, deadline, tries]
        nxt = 0
        while nxt < len(batches) or pending:
            now = time.monotonic()
            while nxt < len(batches) and len(pending) < self.window:
                a, b = batches[nxt]
                k = b - a
                seq = self._next_seq()
                msg = bytearray(HEADER_LEN + BLOCK + k * rb)
                HEADER.pack_into(msg, 0, VERSION, int(Opcode.PUSH), 0, self.job, self.worker,
                                 0, seq, k, 0, 0)
                msg[HEADER_LEN:HEADER_LEN + 4 * k] = prios[a:b].tobytes()
                msg[HEADER_LEN + BLOCK:] = records[a:b].tobytes()
                self.transport.send(msg)
                pending[seq] = [msg, a, k, now + self.timeout, 1]
                nxt += 1
            first = min(v[3] for v in pending.values())
            nbytes, seg = self.transport.recv_into(self._rbuf, max(0.0, first - now))
            for off in range(0, nbytes, max(seg, 1)):
                if min(seg, nbytes - off) < HEADER_LEN:
                    continue
                _v, op, _f, jb, _w, _s, seq, cnt, aux, _r = HEADER.unpack_from(self._rbuf, off)
                entry = pending.get(seq)
                if op != _PUSH_ACK or jb != self.job or entry is None or cnt != entry[2]:
                    continue
                a, k = entry[1], entry[2]
                indices[a:a + k] = (aux + np.arange(k)) % self.capacity
                del pending[seq]
            if nbytes:
                continue
            now = time.monotonic()
            for seq, entry in pending.items():
                if entry[3] <= now:
                    if entry[4] >= self.retries:
                        raise ReplayTimeoutError(self.url, f"PUSH of {entry[2]} records (seq {seq})",
                                                 entry[4], "is this worker registered as an actor "
                                                 "(MEMBER_ROLE bit 1) and the replay engine on?")
                    self.transport.send(entry[0])
                    entry[3] = now + self.timeout * (1 << min(entry[4], 4))
                    entry[4] += 1
        return indices

    # -- sample ----------------------------------------------------------------------
    def sample(self, batch: int, *, prioritized: bool = True, beta: float = 0.4) -> SampleBatch:
        """Draw ``batch`` transitions (several requests when ``batch`` > 64).

        Parameters
        ----------
        batch:
            Number of samples (any positive integer: split into power-of-two
            requests of at most 64).
        prioritized:
            Sample proportionally to priority (stratified), else uniformly.
        beta:
            Importance-sampling exponent.

        Returns
        -------
        SampleBatch

        Raises
        ------
        ReplayEmptyError
            The memory is empty (or every priority is 0).
        ReplayTimeoutError
            Some request got no complete answer after every retry.
        """
        if batch < 1:
            raise ValueError(f"bad batch={batch!r}: must be >= 1")
        sizes: list[int] = []
        left = batch
        while left:
            b = min(MAX_BATCH, 1 << (left.bit_length() - 1))
            sizes.append(b)
            left -= b
        rb = self.record_bytes
        idx = np.zeros(batch, dtype=np.int64)
        prio = np.zeros(batch, dtype=np.uint32)
        totals = np.zeros(batch, dtype=np.uint64)
        size_of = np.zeros(batch, dtype=np.uint32)
        recs = np.zeros((batch, rb), dtype=np.uint8)
        flags = _PRIORITIZED if prioritized else 0
        reqs: list[tuple[int, int]] = []
        base = 0
        for b in sizes:
            reqs.append((base, b))
            base += b
        # seq -> [request number, got mask, deadline, tries]
        pending: dict[int, list[Any]] = {}
        tries_of = [0] * len(reqs)
        nxt = 0
        expected_len = 64 + rb + HEADER_LEN
        while nxt < len(reqs) or pending:
            now = time.monotonic()
            while nxt < len(reqs) and len(pending) < self.window:
                self._sample_request(reqs[nxt][1], flags, nxt, pending, tries_of, now)
                nxt += 1
            first = min(v[2] for v in pending.values())
            nbytes, seg = self.transport.recv_into(self._rbuf, max(0.0, first - now))
            rmv = memoryview(self._rbuf)
            for off in range(0, nbytes, max(seg, 1)):
                if min(seg, nbytes - off) != expected_len:
                    continue
                _v, op, _f, jb, _w, _s, seq, _c, i, _r = HEADER.unpack_from(rmv, off)
                entry = pending.get(seq)
                if op != _SAMPLE_RESP or jb != self.job or entry is None:
                    continue
                a, b = reqs[entry[0]]
                if i >= b or entry[1][i]:
                    continue
                d = off + HEADER_LEN
                ix, pr, tot, _bb, sz = DESCRIPTOR.unpack_from(rmv, d)
                idx[a + i], prio[a + i], totals[a + i], size_of[a + i] = ix, pr, tot, sz
                recs[a + i] = np.frombuffer(self._rbuf, dtype=np.uint8, count=rb, offset=d + 64)
                entry[1][i] = True
                if entry[1].all():
                    del pending[seq]
            if nbytes:
                continue
            now = time.monotonic()
            for seq, entry in list(pending.items()):
                if entry[2] <= now:
                    r = entry[0]
                    del pending[seq]
                    if tries_of[r] >= self.retries:
                        self._sample_failed(reqs[r][1], tries_of[r])
                    # partial answers are dropped: a new request draws a new stratified batch
                    self._sample_request(reqs[r][1], flags, r, pending, tries_of, now)
        t = self.unpack(recs)
        size = int(size_of[-1])
        if prioritized:
            with np.errstate(divide="ignore"):
                w = (size_of.astype(np.float64) * prio / np.maximum(totals, 1)) ** (-beta)
            w /= w.max()
        else:
            w = np.ones(batch)
        return SampleBatch(t.obs, t.actions, t.rewards, t.next_obs, t.dones, idx,
                           from_fixed(prio), totals, size, w.astype(np.float32), recs)

    def _sample_request(self, b: int, flags: int, r: int, pending: dict[int, list[Any]],
                        tries_of: list[int], now: float) -> None:
        seq = self._next_seq()
        msg = bytearray(HEADER_LEN)
        HEADER.pack_into(msg, 0, VERSION, int(Opcode.SAMPLE_REQ), flags, self.job, self.worker,
                         0, seq, b, 0, 0)
        self.transport.send(msg)
        tries_of[r] += 1
        pending[seq] = [r, np.zeros(b, dtype=bool),
                        now + self.timeout * (1 << min(tries_of[r] - 1, 4)), tries_of[r]]

    def _sample_failed(self, b: int, tries: int) -> None:
        try:
            size = self.control.read("RPL_SIZE")
            total = self.control.replay_total()
        except SwitchTimeoutError:
            size = total = -1
        if size == 0 or total == 0:
            raise ReplayEmptyError(self.url, f"SAMPLE_REQ of {b}", tries,
                                   f"the replay memory is empty (RPL_SIZE={size}, total={total})")
        raise ReplayTimeoutError(self.url, f"SAMPLE_REQ of {b}", tries,
                                 "is this worker registered as a learner (MEMBER_ROLE bit 2)?")

    # -- update ----------------------------------------------------------------------
    def update_priorities(self, indices: Any, priorities: Any) -> None:
        """Set new priorities (floats, already ``(|δ| + ε)^α``) of replay records.

        Sent as UPDATEs of at most 128 pairs as Q16.16 (:func:`to_fixed`: 0 and
        tiny priorities become 1, huge ones 2**32 − 1); there is no acknowledgement.

        Raises
        ------
        ValueError
            A priority is NaN, negative or infinite, an index is not a u32, or
            the counts differ; nothing is sent and :attr:`max_priority` is kept.
        """
        idx = check_u32(indices, "indices").reshape(-1)
        p = check_priorities(priorities, "priorities").reshape(-1)
        if idx.shape != p.shape:
            raise ValueError(f"bad priorities length={p.size}: need one per index ({idx.size})")
        fixed = to_fixed(p, "priorities")
        if p.size:
            self.max_priority = max(self.max_priority, float(p.max()))
        self.update_fixed(idx, fixed)

    def update_fixed(self, indices: Any, priorities: Any) -> None:
        """Set Q16.16 priorities (``uint32``, sent as they are: 0 allowed) of replay records.

        Raises
        ------
        ValueError
            An index or a priority is not an integer in [0, 2**32 − 1] (NaN,
            infinite, negative, fractional or too large), or the counts
            differ; nothing is sent.
        """
        idx = check_u32(indices, "indices").reshape(-1)
        pr = check_u32(priorities, "priorities", _FIXED_HINT).reshape(-1)
        if idx.shape != pr.shape:
            raise ValueError(f"bad priorities length={pr.size}: need one per index ({idx.size})")
        pairs = np.empty(2 * len(idx), dtype="<u4")
        pairs[0::2], pairs[1::2] = idx, pr
        for a in range(0, len(idx), MAX_UPDATE_PAIRS):
            k = min(MAX_UPDATE_PAIRS, len(idx) - a)
            msg = bytearray(HEADER_LEN + 8 * k)
            HEADER.pack_into(msg, 0, VERSION, int(Opcode.UPDATE), 0, self.job, self.worker, 0,
                             self._next_seq(), k, 0, 0)
            msg[HEADER_LEN:] = pairs[2 * a:2 * (a + k)].tobytes()
            self.transport.send(msg)


def record_dtype(obs_shape: tuple[int, ...], obs_dtype: Any, action_shape: tuple[int, ...],
                 action_dtype: Any, record_bytes: int) -> np.dtype:
    """Structured little-endian record layout padded to ``record_bytes``.

    Raises
    ------
    ValueError
        When the fields need more than ``record_bytes``.
    """
    fields = [("obs", np.dtype(obs_dtype), tuple(obs_shape)),
              ("action", np.dtype(action_dtype), tuple(action_shape)),
              ("reward", np.dtype(np.float32), ()),
              ("next_obs", np.dtype(obs_dtype), tuple(obs_shape)),
              ("done", np.dtype(np.uint8), ())]
    names, formats, offsets = [], [], []
    off = 0
    for name, dt, shape in fields:
        le = dt.newbyteorder("<")
        names.append(name)
        formats.append((le, shape) if shape else le)
        offsets.append(off)
        off += le.itemsize * int(np.prod(shape, dtype=np.int64))
    if off > record_bytes:
        raise ValueError(f"bad record size={off}: obs {obs_shape} {np.dtype(obs_dtype)}, action "
                         f"{action_shape} {np.dtype(action_dtype)}, reward, next_obs and done "
                         f"need {off} bytes but RPL_RECORD_BYTES is {record_bytes}")
    return np.dtype({"names": names, "formats": formats, "offsets": offsets,
                     "itemsize": record_bytes})


def records_from_bytes(records: Any, dtype: np.dtype) -> Transitions:
    """Parse records (bytes, ``uint8`` array or structured array) into :class:`Transitions`."""
    if isinstance(records, np.ndarray) and records.dtype == dtype:
        rec = records
    else:
        raw = np.ascontiguousarray(np.frombuffer(records, dtype=np.uint8)
                                   if isinstance(records, bytes | bytearray | memoryview)
                                   else np.asarray(records, dtype=np.uint8))
        rec = raw.reshape(-1).view(dtype)
    return Transitions(rec["obs"].copy(), rec["action"].copy(), rec["reward"].copy(),
                       rec["next_obs"].copy(), rec["done"].copy())


__all__ = [
    "Aggregator",
    "AllreduceTimeoutError",
    "ReplayClient",
    "ReplayEmptyError",
    "ReplayTimeoutError",
    "SampleBatch",
    "Transitions",
    "from_fixed",
    "record_dtype",
    "records_from_bytes",
    "to_fixed",
    "ROLE_ACTOR",
    "ROLE_LEARNER",
    "ROLE_WORKER",
]
