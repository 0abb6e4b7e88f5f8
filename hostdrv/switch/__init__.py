"""The switch implementations; they import :mod:`hostdrv.wire`, never :mod:`hostdrv.client`.

``reference``
    The reference switch (:class:`~hostdrv.switch.reference.SwitchModel`): the
    specification every other implementation is held to.
``native``
    Its compiled twin (``hostdrv._native``, sources in ``hostdrv/native/``).
``engine``
    :class:`~hostdrv.switch.engine.Engine`, what the servers call on a switch.
``conformance``
    The vectors every implementation must agree on.
``soft``
    The soft switch (``soft://``): an engine behind a UDP server
    (``netfpga-softswitch``, ``python -m hostdrv.switch.soft``), made of
    ``soft_control`` (the control channel), ``soft_loop`` (the datagram path) and
    ``soft_process`` (one in a child process).
``rtl``
    The switch RTL (``hw/rtl``) built with Verilator and driven pin by pin,
    with the model's API (:class:`~hostdrv.switch.rtl.RtlSwitch`); its C++ clock
    loop is ``rtl_harness.cpp`` and its sources ``hw_rtl/`` (a link to
    ``hw/rtl``; a wheel holds a copy), both package data found with
    importlib.resources; ``rtl_tools`` sets up Verilator and reads ``.f`` file
    lists (for the cocotb testbenches too).
``sim``
    The sim switch (``sim://``): the soft switch's UDP server serving an
    ``RtlSwitch`` (``netfpga-simswitch``, ``python -m hostdrv.switch.sim``).
``rtl_bridge``
    The RTL on raw Ethernet ports, standing in for a SUME board in the rack.
``launch``
    The one door clients use: start an embedded soft switch.

Nothing is imported here, so that ``python -m hostdrv.switch.<server>`` runs its
module only once.
"""
