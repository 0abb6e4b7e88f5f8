"""The switches a client can talk to, one module each.

``soft_server``
    The soft switch (``soft://``): the reference model
    (:class:`hostdrv.model.SwitchModel`) behind a UDP server
    (``netfpga-softswitch``, ``python -m hostdrv.backends.soft_server``).
``rtl_model``
    The switch RTL (``hw/rtl``) built with Verilator and driven pin by pin,
    with the model's API (:class:`~hostdrv.backends.rtl_model.RtlSwitch`);
    its C++ clock loop is ``rtl_harness.cpp`` and its sources ``hw_rtl/`` (a
    link to ``hw/rtl``; a wheel holds a copy), both package data found with
    importlib.resources; ``rtl_tools`` sets up Verilator and reads ``.f`` file
    lists (for the cocotb testbenches too).
``rtl_server``
    The sim switch (``sim://``): the soft switch's UDP server serving an
    ``RtlSwitch`` (``netfpga-simswitch``, ``python -m hostdrv.backends.rtl_server``).
``board``
    The NetFPGA SUME board (``udp://``, ``eth://``): client transports only.

Clients never import these modules: a URL picks its backend through
:data:`hostdrv.transport.BACKENDS`. Nothing is imported here, so that
``python -m hostdrv.backends.<server>`` runs its module only once.
"""
