"""Errors of the clients (:mod:`hostdrv.client.aggregator`, :mod:`hostdrv.client.replay`).

Every one derives from :class:`hostdrv.errors.NetrlError` (through
:class:`~hostdrv.client.transport.SwitchTimeoutError` or :class:`AllreduceError`).

All-reduce failures derive from :class:`AllreduceError` or, for a chunk that
got no answer, :class:`~hostdrv.client.transport.SwitchTimeoutError`; replay failures
from :class:`~hostdrv.client.transport.SwitchTimeoutError` (protocol sections 4 and 5).
"""

from __future__ import annotations

from collections.abc import Mapping

from hostdrv.client.transport import SwitchTimeoutError
from hostdrv.errors import NetrlError
from hostdrv.wire import regmap

WHY_NO_RESULT = tuple(n for n in regmap.COUNTERS if n.startswith("CNT_DROP_")
                      and n not in ("CNT_DROP_EMPTY", "CNT_DROP_BAD_INDEX"))
"""Counters that can explain a chunk that got no RESULT: every drop reason but the replay-only
ones (section 6 of the protocol)."""


class AllreduceError(NetrlError, RuntimeError):
    """An all-reduce call failed; the next call starts a new epoch of rounds (protocol
    section 4, "Epochs, failures and rejoin")."""


class AllreduceTimeoutError(SwitchTimeoutError):
    """No RESULT for a chunk after every retransmission.

    The member keeps the failed call's state: the next :meth:`Aggregator.allreduce`
    with the same step id and tensor length (the default: a failed call does not
    advance :attr:`Aggregator.step`) resumes it, sending only the chunks not yet
    answered in the same rounds, unless another member started a newer epoch
    (``AGG_EPOCH``; then it restarts there) (protocol section 4, "Epochs, failures
    and rejoin").

    Attributes
    ----------
    slot, round, chunk:
        The slot and round that got no answer, and the chunk of the tensor.
    counters:
        Nonzero counters of :data:`WHY_NO_RESULT` read when the call gave up
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
                         + ", ".join(WHY_NO_RESULT)
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


class StepMismatchError(AllreduceError):
    """Sync mode: the members of a round sent chunks of different steps (``aux`` = step id).

    The switch never adds a contribution of another step: the round became an error
    for every member (``ERROR`` RESULT with ``aux`` equal to its ``total``), or it was
    already complete with another step's contributions and this member alone got its
    RESULT flagged ``ERROR``. The next call starts a new epoch.

    Attributes
    ----------
    step:
        This member's step id in the failed call.
    culprit:
        Member whose chunk the switch refused (this member itself when the round was
        already complete with another step).
    slot, round:
        Where it was detected.
    """

    def __init__(self, step: int, culprit: int, slot: int, round_: int) -> None:
        self.step, self.culprit, self.slot, self.round = step, culprit, slot, round_
        super().__init__(
            f"step mismatch: this member all-reduced step {step}, but member {culprit} sent a "
            f"chunk of another step to the same round (slot {slot}, round {round_}); every "
            "member must all-reduce the same steps in the same order (Aggregator.step counts "
            "successful calls; a failed call is retried with the same step id). Nothing was "
            "summed across steps; the next call starts a new epoch")


class AllreduceDesyncError(AllreduceError):
    """In sync mode the slots moved on without this member (it restarted or was cut off)
    and catching up by a new epoch did not help either."""


class ReplayTimeoutError(SwitchTimeoutError):
    """A replay request (PUSH or SAMPLE_REQ) got no complete answer after every retry."""


NOT_YET_REASONS = {1: "EMPTY", 2: "MIN_SIZE", 3: "RATE"}
"""Names of the NOT_YET reasons (the ``slot`` of a NOT_YET answer, protocol section 5)."""


class RateLimitTimeoutError(ReplayTimeoutError):
    """The switch's rate limiter kept answering NOT_YET for longer than ``rate_timeout``.

    Raised by :class:`~hostdrv.client.replay.ReplayClient` (PUSH and SAMPLE_REQ, protocol
    section 5, "Rate limiting"). A refused PUSH wrote nothing and a refused SAMPLE_REQ drew
    nothing, so no record was lost: the call can be repeated once the other side (the
    learners for a PUSH, the actors for a SAMPLE_REQ) has made progress.

    Attributes
    ----------
    reason:
        Last NOT_YET reason: ``"EMPTY"``, ``"MIN_SIZE"`` or ``"RATE"`` (``None`` when the
        request got no answer at all and ``hint`` says why).
    size:
        ``RPL_SIZE`` the last NOT_YET answer reported.
    limiter:
        ``RPL_MIN_SIZE``, ``RPL_SPI``, ``RPL_SPI_ERROR`` and ``diff`` (the signed
        ``RPL_RATE_DIFF``), as read when the call gave up (empty when the registers could not
        be read).
    waited:
        Seconds between the first NOT_YET and giving up.
    """

    def __init__(self, url: str, what: str, tries: int, hint: str = "", *,
                 reason: int | None = None, size: int = -1, waited: float = 0.0,
                 limiter: Mapping[str, int] | None = None) -> None:
        self.size = size
        self.waited = waited
        self.limiter = dict(limiter or {})
        if reason is None:  # no NOT_YET seen: the request went unanswered
            self.reason = None
            super().__init__(url, what, tries, hint)
            return
        self.url, self.what, self.tries = url, what, tries
        self.reason = NOT_YET_REASONS.get(reason, str(reason))
        lim = self.limiter
        if lim:
            one = 65536.0
            known = (f"RPL_MIN_SIZE={lim['RPL_MIN_SIZE']}, RPL_SPI={lim['RPL_SPI'] / one:g} "
                     f"samples per insert, RPL_SPI_ERROR={lim['RPL_SPI_ERROR'] / one:g}, "
                     f"diff={lim['diff'] / one:g}")
        else:
            known = "RPL_MIN_SIZE, RPL_SPI, RPL_SPI_ERROR and RPL_RATE_DIFF could not be read"
        hint = {"EMPTY": "the replay memory is empty (or every priority is 0): push first",
                "MIN_SIZE": "fewer records than RPL_MIN_SIZE: actors must push more first",
                "RATE": ("the samples-per-insert ratio would leave its error buffer: the other "
                         "side must catch up (or raise RPL_SPI_ERROR: a PUSH of n records needs "
                         "n * SPI <= 2 * error, a batch of B needs B <= 2 * error)")}
        TimeoutError.__init__(
            self, f"switch {url} answered {what} NOT_YET ({self.reason}) for {waited:.3g} s "
            f"(rate_timeout, {tries} tries): size={size}, {known}; "
            + hint.get(self.reason, "see docs/protocol.md section 5"))


class ReplayEmptyError(RateLimitTimeoutError):
    """A sample was asked of an empty replay memory (or one whose priorities are all 0): the
    switch answered NOT_YET (``EMPTY``) until ``rate_timeout`` (or, from a switch that does
    not answer NOT_YET, nothing at all)."""


__all__ = [
    "WHY_NO_RESULT",
    "AllreduceDesyncError",
    "AllreduceError",
    "AllreduceTimeoutError",
    "NOT_YET_REASONS",
    "RateLimitTimeoutError",
    "ReplayEmptyError",
    "ReplayTimeoutError",
    "StepMismatchError",
    "TensorMismatchError",
]
