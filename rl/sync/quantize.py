"""The flat gradient vector: host int32 quantisation, flattening, digests."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np
import torch


class Quantizer:
    """Host int32 quantisation with a shared per-element scale.

    ``encode`` is ``round(x * scale)`` (round half to even) clamped to
    ``±(2^31 - 1) // N`` so that the sum of N contributions cannot wrap;
    ``decode`` divides the integer sum by the scale in float64. The sum of
    integers is exact and order-independent, hence reproducible bit for bit.
    """

    def __init__(self, scales: np.ndarray, world: int) -> None:
        self.scales = scales.astype(np.float64)
        self.limit = float((2**31 - 1) // world)

    def encode(self, x: np.ndarray) -> np.ndarray:
        """Float vector to int32 (rounded, clamped)."""
        q = np.rint(x.astype(np.float64) * self.scales)
        return np.clip(q, -self.limit, self.limit).astype(np.int32)

    def decode(self, q: np.ndarray) -> np.ndarray:
        """Integer sum back to float32."""
        return (q.astype(np.float64) / self.scales).astype(np.float32)


def flatten_grads(params: Sequence[torch.nn.Parameter]) -> np.ndarray:
    """Concatenate the gradients of ``params`` into one float32 vector (zeros if unset)."""
    return torch.cat([
        (p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params
    ]).detach().numpy().astype(np.float32, copy=True)


def unflatten_into(tensors: Sequence[torch.Tensor], flat: np.ndarray) -> None:
    """Copy consecutive pieces of ``flat`` into ``tensors`` (in order, by numel)."""
    src = torch.from_numpy(np.ascontiguousarray(flat, dtype=np.float32))
    offset = 0
    for t in tensors:
        n = t.numel()
        t.copy_(src[offset:offset + n].view_as(t))
        offset += n


def params_digest(params: Sequence[torch.Tensor]) -> str:
    """A short hash of the exact bytes of ``params`` (to compare workers)."""
    h = hashlib.blake2b(digest_size=8)
    for p in params:
        h.update(p.detach().numpy().tobytes())
    return h.hexdigest()
