"""In-network all-reduce client (:class:`Aggregator`).

Speaks the GRADIENT/RESULT part of ``docs/protocol.md`` (section 4) over a
:class:`~hostdrv.client.transport.DatagramTransport`: chunking, the per-slot rounds
and epochs, the send window and retransmission.

Over UDP the per-packet loop (window, GSO sends, GRO receives, scatter of the
results, retransmission timers) runs in the native library
(``hostdrv/native/nrl_client.cpp``, the GIL released) when it is built; the
Python loop (:class:`~hostdrv.client.aggregator_loop.CallLoop`) is the reference it
follows decision for decision, used for other transports, without the extension, or
with ``NRL_NATIVE_CLIENT=0``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from hostdrv.client.aggregator_loop import (
    GRADIENT,
    INT32,
    M32,
    CallBuffers,
    CallLoop,
    OutOfStep,
    Pending,
    epoch_block,
    is_newer,
    newest_round,
    rounds_per_call,
    send_chunks_once,
)
from hostdrv.client.control import ROLE_WORKER, SwitchControl
from hostdrv.client.endpoint import Endpoint
from hostdrv.client.errors import (
    WHY_NO_RESULT,
    AllreduceDesyncError,
    AllreduceTimeoutError,
    StepMismatchError,
    TensorMismatchError,
)
from hostdrv.client.transport import Backend, SwitchTimeoutError
from hostdrv.wire.consts import EPOCH_ROUNDS
from hostdrv.wire.protocol import (
    AUX_COUNT_MASK,
    HEADER,
    HEADER_LEN,
    MAX_JUMBO_ELEMS,
    VERSION,
)


def _torch_module(x: object) -> Any:
    """The torch module when ``x`` is a torch tensor (torch is not imported otherwise)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return torch
    return None


class Aggregator(Endpoint):
    """All-reduce (sum) through the switch's aggregation engine.

    Parameters
    ----------
    url:
        Switch URL (``soft://host:port``).
    worker:
        Member id, 0 … ``AGG_MEMBERS`` − 1.
    job:
        Job id, the ``job`` byte of its messages: must be its job's ``JOB_ID`` (default:
        that ``JOB_ID`` with ``page``, else 0).
    page:
        The job (register page, ``docs/protocol.md`` section 11) this member belongs to:
        its configuration is that page's ``AGG_*``, its member entry that page's, its
        slots 0 .. min(``AGG_SLOTS``, ``JOB_SLOT_COUNT``) − 1 of that page (the job's
        share of the slot memory). Default: job 0.
    timeout:
        Seconds before a chunk's GRADIENT is sent again; doubles at each
        retransmission up to ``max_backoff``.
    retries:
        Retransmissions of one chunk before :class:`AllreduceTimeoutError`.
    window:
        Chunks in flight, at most the job's slots (the default).
    register:
        Write this worker's member entry (``MEMBER_PORT`` = ``1 << worker``
        unless ``port`` is given, ``MEMBER_IP``/``MEMBER_UDP`` = this socket,
        role bit 0 added).
    port, member_address:
        Override the port bitmap / the (IP, UDP port) registered (e.g. behind
        a NAT or a test proxy).
    control:
        Control URL or :class:`SwitchControl` of job ``page`` (default ``url``; keys: Endpoint).
    max_backoff:
        Largest retransmission timeout in seconds.
    step:
        Step id of the first call (:attr:`step`): a member that joins a running job
        passes the step it joins at.

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

    In async mode (``AGG_MODE`` = 1) a call advances every slot by
    :func:`rounds_per_call` rounds from a multiple of it, so a round names the
    iteration and the chunk for every member; ``version`` counts iterations; a
    member behind moves on by whole iterations and takes only its own chunks'
    results, and a chunk whose round the switch no longer holds is returned as
    zeros (:attr:`missing_chunks`) rather than waited for or timed out
    (``docs/protocol.md`` section 4, "Async at any size").

    Every call has a **step id** (:attr:`step` by default, a counter advanced
    by each successful call only), sent as every chunk's ``aux`` in sync mode:
    the switch never sums chunks of different steps (:class:`StepMismatchError`).
    Rounds start at the job's epoch base (``AGG_EPOCH``). What the next call
    does after a failed one (protocol section 4, "Epochs, failures and
    rejoin"): after a timeout (:class:`AllreduceTimeoutError`) the member keeps
    the failed call's state and, with the same step id and tensor length (the
    default retry), **resumes** it: the same rounds, only the chunks not yet
    answered; if ``AGG_EPOCH`` is newer than its epoch (another member
    restarted) it **follows** (restarts the call there); in sync mode a
    **newcomer** (no RESULT yet in an epoch it took from ``AGG_EPOCH``) that
    timed out **leads** a new epoch and writes ``AGG_EPOCH``. After a mismatch,
    an out-of-step RESEND (sync), or a call with another step id or length than
    the one that timed out, the next call starts a new epoch (:meth:`resync`).
    A restarted member constructs a new :class:`Aggregator` with the same
    ``worker`` (and the ``step`` it resumes at).

    With ``AGG_DTYPE`` = int32, float tensors are quantized with a shared
    ``scale``: each element is sent as ``round(x * scale)`` (saturated to the
    int32 range) and the sum divided by ``scale``; the integer sum is exact
    and independent of arrival order, and wraps modulo 2**32 on overflow, so
    choose ``scale`` with ``N * max|x| * scale < 2**31``.
    """

    def __init__(self, url: str, *, worker: int, job: int | None = None, timeout: float = 0.05,
                 retries: int = 10, window: int | None = None, register: bool = True,
                 port: int | None = None, member_address: tuple[str, int] | None = None,
                 control: str | SwitchControl | None = None, max_backoff: float = 1.0,
                 backends: Mapping[str, Backend] | None = None, step: int = 0,
                 page: int | None = None) -> None:
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ValueError(f"bad step={step!r}: a step id is an integer >= 0")
        super().__init__(url, worker=worker, job=job, register=False, roles=ROLE_WORKER,
                         port=port, member_address=member_address, control=control,
                         backends=backends, page=page)
        try:
            ctl = self.control
            share = ctl.read("JOB_SLOT_COUNT")
            if not share:
                raise ValueError(f"bad page={self.page}: job {self.page} has no slots on the "
                                 f"switch at {url} (JOB_SLOT_COUNT=0): its members aggregate on "
                                 "the hosts (hostdrv.peers.ps)")
            self.slots = min(ctl.read("AGG_SLOTS"), share)
            """S, the slots this member uses: min(``AGG_SLOTS``, ``JOB_SLOT_COUNT``)."""
            self.packet_elems = ctl.read("AGG_ELEMS")
            """P, the switch's elements per packet (``AGG_ELEMS``): one chunk's length."""
            self.int32 = ctl.read("AGG_DTYPE") == 1
            self.async_mode = ctl.read("AGG_MODE") == 1
            staleness = ctl.read("AGG_STALENESS")
            members = ctl.read("AGG_MEMBERS")
            if not 1 <= self.slots <= 64 or self.packet_elems % 16 or \
                    not 16 <= self.packet_elems <= MAX_JUMBO_ELEMS:
                raise ValueError(f"bad switch configuration: slots {self.slots} "
                                 f"AGG_ELEMS={self.packet_elems}")
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
        s, p = self.slots, self.packet_elems
        self._msg_len = HEADER_LEN + 4 * p
        # one preallocated GRADIENT per slot, back to back, so consecutive slots
        # go out in one GSO call
        self._sbuf = bytearray(s * self._msg_len)
        self._smv = memoryview(self._sbuf)
        # async: a GRADIENT the switch never adds (lag beyond AGG_STALENESS), answered by the
        # round's result once it is DONE (protocol section 4, step 1): a safe poll of any round
        self._poll_lag = staleness + 1 if self.async_mode and staleness < M32 else 0
        self._pbuf = bytearray(self._msg_len)
        self._buffers = CallBuffers(self.wire_dtype)  # packing and receiving, kept
        self._spay = np.ndarray((s, p), dtype=self.wire_dtype, buffer=self._sbuf,
                                offset=HEADER_LEN, strides=(self._msg_len, 4))
        self._flags = INT32 if self.int32 else 0
        self._rounds = [base] * s
        self._resync = False
        self._epoch = base  # the epoch this member runs in (AGG_EPOCH as it knows it)
        self._own_epoch = False  # it started that epoch itself (not taken from AGG_EPOCH)
        self._had_result = False  # a RESULT in that epoch
        self._pending: Pending | None = None  # the call that timed out (resumable)
        self._last_used = base  # the newest round the last call used
        self.step = step
        """Step id of the next call by default: the constructor's ``step``, plus one for
        each successful call (a call with an explicit ``step=k`` sets it to k + 1); a failed
        call leaves it, so the next call retries the same step."""
        self.epochs = 0
        """New epochs this member started or followed (after failed calls)."""
        self.resumed = 0
        """Chunks the last call took from the timed-out call it resumed (0: not a resume)."""
        self.last_aux = np.zeros(0, dtype=np.uint32)
        """RESULT ``aux`` of each chunk of the last call: contributor count and order of
        addition (:func:`hostdrv.wire.protocol.result_order` decodes it)."""
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
        self.jumps = 0
        """Async: times in the last call a slot's rounds moved on by whole iterations (a
        RESEND of a newer round of another chunk: the job was ahead of this member)."""
        self.missing_chunks = 0
        """Async: chunks of the last call returned as zeros with ``aux`` 0 (no contributor):
        the slot had moved past their round (its copy reused by the row after next) before
        this member had its result (it was behind, or lost the multicast). Their
        :attr:`last_rounds` entry is the round in the slot's iteration."""
        self.last_rounds_per_call = 1
        """Rounds every slot advanced by in the last call (async: :func:`rounds_per_call`;
        1 in sync mode, where only the slots a call uses advance)."""

    @property
    def elems(self) -> int:
        """Deprecated name of :attr:`packet_elems` (read only)."""
        return self.packet_elems

    @property
    def rounds(self) -> list[int]:
        """Next round of every slot (async: the next call's base, before alignment)."""
        return list(self._rounds)

    @property
    def last_iteration(self) -> int:
        """Async: the iteration the last call's first chunk was answered by (its round
        divided by :attr:`last_rounds_per_call`); the value :meth:`allreduce`'s
        ``version`` counts in. -1 before any call."""
        if not len(self.last_rounds):
            return -1
        return int(self.last_rounds[0]) // self.last_rounds_per_call

    @property
    def epoch(self) -> int:
        """The epoch base this member runs in: ``AGG_EPOCH`` as it read it (at construction
        or on a follow), wrote it, or computed it (:meth:`resync`)."""
        return self._epoch

    def resync(self) -> int:
        """Restart every slot's rounds in a new epoch (protocol section 4).

        The new base is the newer of ``AGG_EPOCH`` and the epoch after the
        newest round this member used; it is written to ``AGG_EPOCH`` when
        newer, so every member that fails the same call, and a member that
        (re)joins later, lands on the same base. :meth:`allreduce` calls this
        itself after a mismatch or an out-of-step RESEND, and when the call after
        a timeout has another step id or tensor length. A timed-out call's state
        is dropped (no resume).

        Returns
        -------
        int
            The new epoch base (every slot's next round).
        """
        own = self._next_block()
        shared = self._read_epoch()
        if shared is None:
            shared = own  # registers unreachable: the members' own arithmetic still agrees
        base = shared if is_newer(shared, own) else own
        if base != shared:
            self.control.write("AGG_EPOCH", base)
        self._start_epoch(base, own=base == own)
        return base

    def _next_block(self) -> int:
        """The block after the newest round this member used or is about to use."""
        newest = newest_round([*self._rounds, self._last_used])
        return (epoch_block(newest) + EPOCH_ROUNDS) & M32

    def _read_epoch(self) -> int | None:
        """``AGG_EPOCH``, or ``None`` when the registers cannot be read."""
        try:
            return int(self.control.read("AGG_EPOCH"))
        except (SwitchTimeoutError, OSError):
            return None

    def _start_epoch(self, base: int, *, own: bool) -> None:
        """Every slot's next round becomes ``base``; a timed-out call is forgotten."""
        self._rounds = [base] * self.slots
        self._last_used = base
        self._resync = False
        self._pending = None
        self._epoch = base
        self._own_epoch = own
        self._had_result = False
        self.epochs += 1

    def _begin(self, step: int, total: int) -> Pending | None:
        """How a call starts (protocol section 4, "Epochs, failures and rejoin"): the
        timed-out call to resume, or ``None`` (every chunk, from :attr:`rounds`, after a
        new epoch, a follow or a lead when the last call failed)."""
        pend, self._pending = self._pending, None
        if self._resync:  # a mismatch, an out-of-step RESEND, or anything but a timeout
            self.resync()
            return None
        if pend is None:
            return None
        shared = self._read_epoch()
        if shared is not None and is_newer(shared, self._epoch):
            self._start_epoch(shared, own=False)  # follow: another member restarted
            return None
        if (not self.async_mode and shared == self._epoch and not self._had_result
                and not self._own_epoch):
            # newcomer: the slots may be ahead of the epoch it took (it restarted): lead a
            # new epoch the others follow after their timeout (once per AGG_EPOCH value)
            self._withdraw(pend)
            base = self._next_block()
            self.control.write("AGG_EPOCH", base)
            self._start_epoch(base, own=True)
            return None
        if pend.step == step and pend.total == total:
            self._rounds[:] = pend.rounds  # resume: the same rounds, unanswered chunks
            return pend
        self.resync()
        return None

    def _withdraw(self, pend: Pending) -> None:
        """Sync, before a newcomer leads a new epoch: make the rounds it leaves unusable.

        Its unanswered chunks may sit in OPEN copies (it was not behind: the others were
        late, e.g. one member slow to start). A member arriving later would complete them
        with the contributions this member abandoned and move on a step ahead of it. So
        each slot's first unanswered round gets a zero GRADIENT of another step id
        (``step + 2**31``): an OPEN copy of that round becomes an error copy (everyone
        still in it gets :class:`StepMismatchError` and starts a new epoch, meeting this
        member there); a copy holding a newer round drops it as ``STALE``; a DONE copy
        only answers this member (ignored)."""
        s_count, p, L = self.slots, self.packet_elems, self._msg_len
        aux = (pend.step + (1 << 31)) & M32
        buf = bytearray(L)
        for s in range(min(s_count, len(pend.taken))):
            c = s
            while c < len(pend.taken) and pend.taken[c]:
                c += s_count
            if c >= len(pend.taken):
                continue
            r = (pend.rounds[s] + c // s_count) & M32
            HEADER.pack_into(buf, 0, VERSION, GRADIENT, self._flags, self.job, self.worker, s,
                             r, p, aux, pend.total)
            try:
                self.transport.send(buf)
            except OSError:
                return

    def _cross_blocks(self, newest: int) -> None:
        """Before a call whose rounds reach ``newest``: when that is in a block after this
        member's epoch, write ``AGG_EPOCH`` = that block (if newer), so the switch's
        far-ahead bound (``AGG_EPOCH`` + 2**25) stays ahead of the job."""
        self._last_used = newest
        blk = epoch_block(newest)
        if not is_newer(blk, self._epoch):
            return
        try:
            shared = self.control.read("AGG_EPOCH")
            if is_newer(blk, shared):
                self.control.write("AGG_EPOCH", blk)
        except (SwitchTimeoutError, OSError):
            return  # the bound leaves a block of slack: the next call tries again
        self._epoch = blk

    def allreduce(self, x: Any, *, scale: float | None = None,
                  version: int | None = None, step: int | None = None,
                  out: np.ndarray | None = None) -> Any:
        """Sum ``x`` over every member.

        Parameters
        ----------
        x:
            numpy array or torch tensor of float32, float64 or int32, any shape.
        scale:
            int32 switch only: quantization scale for float input (required
            then; ignored for int32 input).
        version:
            Async staleness: the iteration the caller's weights are current to
            (one past the :attr:`last_iteration` whose result it applied last).
            A call of ``n`` chunks advances every slot by R =
            :func:`rounds_per_call` rounds from a base that is a multiple of R,
            its iteration being base / R (R = 1, iteration = round, for at most S
            chunks); each chunk's ``aux`` is its round minus the lag
            ``iteration − version``, so the switch drops it as ``STALE`` when the
            lag exceeds ``AGG_STALENESS``, and the call still returns (the
            switch answers with the round's result). By default fresh (lag 0).
            Sync mode: not used.
        step:
            The call's step id (default :attr:`step`): every member uses the same
            one for the same call. Sync mode: every chunk's ``aux``, so the switch
            never sums chunks of different steps. After a timeout, a call with the
            same step id and tensor length resumes the failed one.
        out:
            A writable numpy array of ``x``'s dtype and size (``x`` itself may be it) that
            the sum is written into once the call is complete. The call then allocates no
            tensor-sized memory: it receives into a buffer the aggregator keeps from call
            to call (and sends ``x`` as it is when ``x`` is whole chunks of the wire's dtype).

        Returns
        -------
        Same type, dtype, shape (and device for torch) as ``x``: the element-wise sum
        (``out`` itself when given).

        Raises
        ------
        AllreduceTimeoutError
            A chunk got no RESULT after ``retries`` retransmissions. The call's
            state is kept: the next call with the same step id and tensor length
            resumes it (unless another member started a newer epoch, or, in sync
            mode, this member is a newcomer that leads one).
        TensorMismatchError
            A member all-reduced a tensor of another length in this call.
        StepMismatchError
            Sync mode: a member all-reduced another step in this call's rounds.
        AllreduceDesyncError
            Sync mode: the slots were ahead of this member even after it
            started a new epoch.
        ValueError
            Async mode: the tensor needs more rounds per slot than an epoch
            holds (R > 2**24).
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
        step_id = self.step if step is None else step
        if isinstance(step_id, bool) or not isinstance(step_id, int) or step_id < 0:
            raise ValueError(f"bad step={step!r}: a step id is an integer >= 0")
        e = arr.size
        if e > M32:
            raise ValueError(f"bad size={e}: a tensor has at most 2**32 - 1 elements")
        dest = out
        if dest is not None and (not isinstance(dest, np.ndarray) or dest.dtype != dt
                                 or dest.size != e or not dest.flags.writeable):
            raise ValueError(f"bad out: must be a writable numpy array of {e} {dt} elements")
        p = self.packet_elems
        n = -(-e // p) if e else 0
        # the wire's dtype goes out as it is (the native loop pads a short last chunk; the
        # Python one needs whole chunks); else packed, zero padded, in a kept buffer
        direct = dt == self.wire_dtype and (e == n * p or self._native() is not None)
        if direct:
            flat = np.ascontiguousarray(arr).reshape(-1)
        else:
            flat = self._buffers.get("in", n * p)
            flat[e:] = 0
        quantized = False
        if self.int32:
            if dt == np.int32:
                if not direct:
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
            if not direct:
                flat[:e] = arr.reshape(-1)
        self.resumed = 0
        if n:
            pend = self._begin(step_id, e)
            if pend is not None:  # resume: answered chunks keep their results
                out, taken, aux_of, got_round = pend.out, pend.taken, pend.aux, pend.rounds_got
                self.resumed = int(np.count_nonzero(taken))
            else:
                out = np.empty(n * p, dtype=self.wire_dtype) if dest is None \
                    else self._buffers.get("out", n * p)
                taken = np.zeros(n, dtype=np.uint8)
                aux_of = np.zeros(n, dtype=np.uint32)
                got_round = np.zeros(n, dtype=np.uint32)
            restarted = False
            while True:
                try:
                    self._run(flat, out.reshape(n, p), n, e, version, step_id,
                              taken, aux_of, got_round)
                    break
                except OutOfStep as oos:
                    # sync: the slots moved on without us (we restarted, or were cut off):
                    # start the new epoch the others will follow after their timeout
                    self.resync()
                    if restarted:
                        raise AllreduceDesyncError(
                            f"slot {oos.slot} is at round {oos.round} ahead of this member "
                            "even after a new epoch") from None
                    restarted = True
                    taken[:] = 0
                except AllreduceTimeoutError:
                    # kept: the next call with this step id and length resumes it
                    self._pending = Pending(step_id, e, list(self._rounds), out, taken,
                                             aux_of, got_round)
                    self._buffers.drop("out")  # now the pending call's
                    if taken.any():
                        self._had_result = True  # answered: the slots are where we are
                    raise
                except BaseException:
                    self._resync = True
                    raise
            self._had_result = True
        else:
            out = np.empty(0, dtype=self.wire_dtype)
        self.step = step_id + 1
        res = out[:e]
        if quantized:
            res = (res.astype(np.float64) / scale).astype(dt)
        elif res.dtype != dt:
            res = res.astype(dt)
        if dest is not None:
            np.copyto(dest, res.reshape(dest.shape))
            return dest
        res = res.reshape(arr.shape)
        if torch is not None:
            return torch.from_numpy(np.ascontiguousarray(res)).to(device)
        return res

    def send_chunks(self, x: np.ndarray, *, round_: int = 0, total: int | None = None,
                    aux: int | None = None) -> int:
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
        aux:
            ``aux`` written into every header (default ``round_``; sync mode: the step id).

        Returns
        -------
        int
            Payload bytes handed to the transport (headers excluded).
        """
        return send_chunks_once(self, x, round_, total, aux)

    def _counters_now(self) -> dict[str, int]:
        """Nonzero counters that can explain a missing RESULT (empty if unreadable)."""
        seen = {}
        try:
            for name in WHY_NO_RESULT:
                v = self.control.read(name)
                if v:
                    seen[name] = v
        except Exception:  # noqa: BLE001 - a diagnosis must not hide the timeout itself
            return {}
        return seen

    def _run_native(self, native: Any, chunks: np.ndarray, out: np.ndarray, n: int, total: int,
                    version: int | None, rpc: int, step: int, taken: np.ndarray,
                    aux_of: np.ndarray, got_round: np.ndarray) -> None:
        """:meth:`_run` in ``hostdrv/native/nrl_client.cpp``: the same decisions, the same
        exceptions."""
        tr = self.transport
        rounds = np.array(self._rounds, dtype=np.uint32)
        try:
            code, v, stale, resent, retrans, jumps, missing, tr._gso = native.agg_run(
                tr.sock.fileno(), self._sbuf, chunks, out, rounds, aux_of, got_round, taken, n,
                total, None if version is None else version & M32, step & M32, self.slots,
                self.window, self.packet_elems, self._flags, self.job, self.worker, self.async_mode,
                rpc, self._poll_lag, self.timeout, self.max_backoff, self.retries, tr._gro,
                tr._gso, len(self._rbuf))
        finally:
            self._rounds[:] = rounds.tolist()
        if code == 0:
            self._set_last(aux_of, got_round, rpc)
            self.stale_chunks, self.resent_results, self.retransmissions = stale, resent, retrans
            self.jumps, self.missing_chunks = jumps, missing
        elif code == 1:
            raise OutOfStep(v[0], v[1])
        elif code == 2:
            if v[1] == v[0]:  # an ERROR RESULT whose aux is its total: a step mismatch
                raise StepMismatchError(step, v[2], v[3], v[4])
            raise TensorMismatchError(total, v[0], v[1], v[2], v[3], v[4])
        elif code == 3:
            raise TensorMismatchError(total, v[0], v[0], None, v[3], v[4])
        elif code == 4:
            self._set_last(aux_of, got_round, rpc)
            raise AllreduceTimeoutError(self.url, v[0], v[1], v[2], v[3], self._counters_now())
        else:
            raise OSError(v[0], os.strerror(v[0]))

    def _run(self, chunks: np.ndarray, out: np.ndarray, n: int, total: int,
             version: int | None, step: int, taken: np.ndarray, aux_of: np.ndarray,
             got_round: np.ndarray) -> None:
        """Send the chunks of a ``total``-element tensor (``chunks``: flat; whole chunks for
        the Python loop) not yet ``taken`` (all but those a resumed call already has),
        collect their results into ``out``.

        Every slot's rounds for the call start at its base (:attr:`rounds`). Sync:
        chunk ``c`` = ``j·S + s`` takes round ``base + j`` of slot ``s``, and the slot's
        next call starts after its last chunk's round. Async: every slot advances by
        ``R`` = :func:`rounds_per_call` rounds per call from a base (its own) that is a
        multiple of ``R``, chunk ``j·S + s`` taking round ``base + j``, and a RESEND of a
        newer round of another chunk moves the slot's base on by whole iterations
        (section 4, "Async at any size"). On a failure the bases are left as they were
        (a resumed call uses them again).
        """
        rpc = 1
        if self.async_mode:
            rpc = rounds_per_call(n, self.slots)
            if rpc > EPOCH_ROUNDS:
                raise ValueError(f"bad size={total}: {n} chunks need {rpc} rounds per slot, "
                                 f"more than an epoch holds ({EPOCH_ROUNDS})")
            # each slot from the iteration of its own last result: a slot's next round is
            # then one the slot has reached or is about to reach, never one ahead of it
            self._rounds[:] = [((b + rpc - 1) & ~(rpc - 1)) & M32 for b in self._rounds]
            per_slot = [rpc] * self.slots
        else:
            s_count = self.slots
            per_slot = [(n - s + s_count - 1) // s_count if s < n else 0 for s in range(s_count)]
        self._cross_blocks(newest_round([(b + max(k, 1) - 1) & M32
                                    for b, k in zip(self._rounds, per_slot, strict=True)]))
        native = self._native()
        if native is not None:
            self._run_native(native, chunks, out, n, total, version, rpc, step, taken, aux_of,
                             got_round)
        else:
            self._run_python(chunks.reshape(n, -1), out, n, total, version, rpc, step, taken,
                             aux_of, got_round)
        self._rounds[:] = [(b + k) & M32 for b, k in zip(self._rounds, per_slot, strict=True)]

    def _run_python(self, chunks: np.ndarray, out: np.ndarray, n: int, total: int,
                    version: int | None, rpc: int, step: int, taken: np.ndarray,
                    aux_of: np.ndarray, got_round: np.ndarray) -> None:
        """The per-packet loop of :meth:`_run` in Python (:class:`CallLoop`, the reference
        ``agg_run`` follows)."""
        loop = CallLoop(self, chunks, out, n, total, version, rpc, step, taken, aux_of,
                        got_round)
        loop.run()
        self._set_last(aux_of, got_round, rpc)
        self.stale_chunks, self.resent_results, self.retransmissions = (loop.stale, loop.resent,
                                                                        loop.retrans)
        self.jumps, self.missing_chunks = loop.jumps, loop.missing

    def _set_last(self, aux: np.ndarray, rounds: np.ndarray, rpc: int = 1) -> None:
        self.last_aux, self.last_rounds = aux, rounds
        self.last_contributors = aux & AUX_COUNT_MASK
        self.last_rounds_per_call = rpc


__all__ = ["Aggregator", "rounds_per_call"]
