"""The replay rate limiter of ``docs/protocol.md`` section 5, in one place.

Reverb's ``MinSize`` and ``SampleToInsertRatio`` as the switch holds them: the
configuration is three registers (``RPL_MIN_SIZE``, ``RPL_SPI`` and
``RPL_SPI_ERROR``, the last two unsigned Q16.16) and the state one signed
64-bit Q16.16 accumulator ``RPL_RATE_DIFF`` = (records inserted) * SPI -
(samples served) * 1.0, so every comparison is exact integer arithmetic:

* ``min_diff = SPI * min_size - error`` and ``max_diff = SPI * min_size + error``;
* an insert of n records is allowed (:meth:`RateLimiter.can_insert`) when the
  ratio is off (SPI 0), when it leaves ``size + n <= min_size``, or when
  ``diff + n * SPI <= max_diff``;
* a sample of n records is allowed (:meth:`RateLimiter.can_sample`) when
  ``size >= min_size`` and, with the ratio on, ``diff - n * 1.0 >= min_diff``.

The switch model (:class:`hostdrv.switch.reference.SwitchModel`), whose C++
twin is ``nrl::RateLimiter`` in ``hostdrv/native/nrl_engine.h``, and the host
replay memories of :mod:`rl.replay` use this class; :class:`RateLimiterConfig`
is what :meth:`hostdrv.SwitchControl.configure_rate_limiter` writes and
:class:`RateLimiterState` what :meth:`hostdrv.SwitchControl.rate_limiter` reads.
"""

from __future__ import annotations

__all__ = ["RateLimiter", "RateLimiterConfig", "RateLimiterState"]

from dataclasses import dataclass

from hostdrv.wire.consts import NOT_YET_MIN_SIZE, NOT_YET_RATE, SPI_ONE

_M32 = 0xFFFFFFFF
_M64 = (1 << 64) - 1


def _signed64(word: int) -> int:
    return word - (1 << 64) if word >> 63 else word


@dataclass(frozen=True)
class RateLimiterConfig:
    """The limiter's configuration, exactly as the switch's registers hold it.

    Attributes
    ----------
    min_size : int
        Records before any sample is served (``RPL_MIN_SIZE``, Reverb's ``MinSize``).
    spi : int
        Target samples per inserted record, unsigned Q16.16 (``RPL_SPI``); 0 turns
        ratio limiting off.
    error : int
        Error buffer in samples, unsigned Q16.16 (``RPL_SPI_ERROR``).
    """

    min_size: int = 1
    spi: int = 0
    error: int = 0

    def __post_init__(self) -> None:
        for name in ("min_size", "spi", "error"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _M32:
                raise ValueError(f"rate limiter {name}={value!r} must be an unsigned 32-bit "
                                 "integer (Q16.16 for spi and error)")

    @classmethod
    def from_ratio(cls, min_size: int = 1, samples_per_insert: float = 0.0,
                   error_buffer: float = 0.0) -> RateLimiterConfig:
        """Reverb's arguments: ``MinSize(min_size)`` is ``from_ratio(min_size)``,
        ``SampleToInsertRatio(spi, min_size_to_sample, error_buffer)`` is
        ``from_ratio(min_size_to_sample, spi, error_buffer)``; ratios are rounded to Q16.16.

        Raises
        ------
        ValueError
            A value does not fit its 32-bit register, or a nonzero ``samples_per_insert``
            with an error buffer below ``max(1, samples_per_insert)`` (a single record or
            sample could never pass, as Reverb refuses).
        """
        spi = round(samples_per_insert * SPI_ONE)
        err = round(error_buffer * SPI_ONE)
        for name, value in (("min_size", min_size), ("samples_per_insert", spi),
                            ("error_buffer", err)):
            if not 0 <= value <= _M32:
                raise ValueError(f"{name}={value!r} must fit an unsigned 32-bit register "
                                 "(Q16.16 for the ratio and the error buffer)")
        if spi and err < max(spi, SPI_ONE):
            raise ValueError(f"error_buffer={error_buffer!r} must be at least "
                             f"max(1, samples_per_insert) = {max(samples_per_insert, 1.0):g} "
                             "when the ratio is limited")
        return cls(int(min_size), spi, err)

    @property
    def samples_per_insert(self) -> float:
        """:attr:`spi` in samples per record."""
        return self.spi / SPI_ONE

    @property
    def error_buffer(self) -> float:
        """:attr:`error` in samples."""
        return self.error / SPI_ONE

    @property
    def min_diff(self) -> int:
        """``SPI * min_size - error`` (Q16.16, exact)."""
        return self.spi * self.min_size - self.error

    @property
    def max_diff(self) -> int:
        """``SPI * min_size + error`` (Q16.16, exact)."""
        return self.spi * self.min_size + self.error


@dataclass(frozen=True)
class RateLimiterState:
    """A limiter's configuration and accumulator (what ``SwitchControl.rate_limiter`` reads).

    Attributes
    ----------
    config : RateLimiterConfig
        The three registers.
    diff_fixed : int
        The signed accumulator ``RPL_RATE_DIFF`` (Q16.16).
    """

    config: RateLimiterConfig
    diff_fixed: int

    @property
    def min_size(self) -> int:
        """Records before the first sample."""
        return self.config.min_size

    @property
    def samples_per_insert(self) -> float:
        """Target samples per inserted record (0: ratio off)."""
        return self.config.samples_per_insert

    @property
    def error_buffer(self) -> float:
        """Allowed deviation in samples."""
        return self.config.error_buffer

    @property
    def diff(self) -> float:
        """The accumulator in samples: inserts * SPI - samples."""
        return self.diff_fixed / SPI_ONE

    @property
    def min_diff(self) -> float:
        """Lower bound of :attr:`diff` for a sample, in samples."""
        return self.config.min_diff / SPI_ONE

    @property
    def max_diff(self) -> float:
        """Upper bound of :attr:`diff` for an insert, in samples."""
        return self.config.max_diff / SPI_ONE


class RateLimiter:
    """Reverb's ``RateLimiter``: ``can_insert`` / ``can_sample`` and their bookkeeping.

    The caller owns the table and passes its ``size`` (valid records); the
    limiter owns the accumulator. A refused request changes nothing.

    Parameters
    ----------
    config : RateLimiterConfig
        Initial configuration (the registers' reset values by default).
    """

    __slots__ = ("_config", "_word")

    def __init__(self, config: RateLimiterConfig | None = None) -> None:
        self._config = config if config is not None else RateLimiterConfig()
        self._word = 0

    # -- configuration -------------------------------------------------------------
    @property
    def config(self) -> RateLimiterConfig:
        """The current configuration."""
        return self._config

    def configure(self, config: RateLimiterConfig) -> None:
        """Replace the configuration and clear the accumulator (a new limiter)."""
        self._config = config
        self._word = 0

    def set_min_size(self, value: int) -> None:
        """A write of ``RPL_MIN_SIZE`` (the accumulator is kept)."""
        c = self._config
        self._config = RateLimiterConfig(value, c.spi, c.error)

    def set_error(self, value: int) -> None:
        """A write of ``RPL_SPI_ERROR`` (the accumulator is kept)."""
        c = self._config
        self._config = RateLimiterConfig(c.min_size, c.spi, value)

    def set_spi(self, value: int) -> None:
        """A write of ``RPL_SPI``: it clears the accumulator."""
        c = self._config
        self._config = RateLimiterConfig(c.min_size, value, c.error)
        self._word = 0

    def reset(self) -> None:
        """Clear the accumulator (``RPL_RESET``: the table was emptied)."""
        self._word = 0

    # -- state -----------------------------------------------------------------------
    @property
    def diff(self) -> int:
        """The signed accumulator (Q16.16)."""
        return _signed64(self._word)

    @property
    def word(self) -> int:
        """The accumulator as the unsigned 64-bit register ``RPL_RATE_DIFF``."""
        return self._word

    def state(self) -> RateLimiterState:
        """Configuration and accumulator, as :meth:`SwitchControl.rate_limiter` reports them."""
        return RateLimiterState(self._config, self.diff)

    # -- Reverb's CanInsert / CanSample ---------------------------------------------------
    def can_insert(self, n: int, size: int) -> bool:
        """Whether ``n`` records may be inserted into a table holding ``size``."""
        c = self._config
        return not (c.spi and size + n > c.min_size
                    and _signed64(self._word) + n * c.spi > c.spi * c.min_size + c.error)

    def sample_refusal(self, n: int, size: int) -> int:
        """Why ``n`` samples from a table holding ``size`` must wait: 0 when they may be
        served, else ``NOT_YET_MIN_SIZE`` or ``NOT_YET_RATE`` (the NOT_YET reason code)."""
        c = self._config
        if size < c.min_size:
            return NOT_YET_MIN_SIZE
        if c.spi and _signed64(self._word) - n * SPI_ONE < c.spi * c.min_size - c.error:
            return NOT_YET_RATE
        return 0

    def can_sample(self, n: int, size: int) -> bool:
        """Whether ``n`` samples may be served from a table holding ``size``."""
        return self.sample_refusal(n, size) == 0

    def insert(self, n: int) -> None:
        """Account ``n`` inserted records (after :meth:`can_insert` allowed them)."""
        self._word = (self._word + n * self._config.spi) & _M64

    def sample(self, n: int) -> None:
        """Account ``n`` served samples (after :meth:`can_sample` allowed them)."""
        self._word = (self._word - n * SPI_ONE) & _M64
