"""The wire: what a switch and its clients agree on, byte for byte.

``protocol`` (frames and messages), ``consts`` and ``regmap`` (generated from
``hw/protocol.yaml`` and ``hw/regs.yaml``, as is the C/C++ header
``nrl_protocol.h`` beside them), ``control`` (the control channel's datagrams),
``records`` (replay record layout, Q16.16 priorities), ``sampler`` and ``fp32``
(the arithmetic the switch and ``rl.replay`` share), ``net`` (UDP plumbing),
``sume`` (where the SUME board maps the registers). Both :mod:`hostdrv.switch`
and :mod:`hostdrv.client` import this package; it imports neither. Nothing is
imported here.
"""
