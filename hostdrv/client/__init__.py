"""Clients of a switch; they import :mod:`hostdrv.wire` (and :mod:`hostdrv.switch.launch` only).

``transport`` (a URL to its backend: datagram and register channels), ``control``
(:class:`~hostdrv.client.control.SwitchControl`, registers by name), ``endpoint``
(member registration both clients share), ``aggregator``
(:class:`~hostdrv.client.aggregator.Aggregator`, in-network all-reduce),
``replay`` (:class:`~hostdrv.client.replay.ReplayClient`, in-network replay),
``board`` (``udp://``, ``eth://``: a SUME board), ``serial`` (``serial://``: the
board's USB-UART), ``regs_cli`` (``netrl regs``), ``jobs`` and ``jobs_cli`` (admission
of jobs onto a multi-job switch, ``netrl jobs``) and ``torch_backend`` (the
torch.distributed backend "netrl"). Nothing is imported here; the public names
are re-exported by :mod:`hostdrv`.
"""
