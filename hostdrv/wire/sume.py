"""Facts of the NetFPGA SUME board that both sides of the wire need.

The board's register transports (:mod:`hostdrv.client.board`,
:mod:`hostdrv.client.serial`) and the RTL's stand-in for the board
(:mod:`hostdrv.switch.rtl_bridge`) address the switch's registers at the same
place of the SUME AXI-Lite map.
"""

from __future__ import annotations

SUME_S0_AXI_BASE = 0x44010000
"""Default register base: the ``S0_AXI`` window of the SUME user datapath.

In SUME's ``reference_switch`` address map
(``projects/reference_switch/hw/tcl/reference_switch_defines.tcl`` in
NetFPGA-SUME-live) the AXI-Lite interconnect slave ``M01`` (0x44010000) is
the input arbiter, which is ``S0_AXI`` of ``nf_datapath``; ``M02``
(0x44020000, also ``rwaxi``'s built-in default address) is the
output_port_lookup (``S1_AXI``) and ``M03`` (0x44030000) the output queues
(``S2_AXI``). ``nf_nrl_top`` decodes the whole netfpga-rl register map on
``S0_AXI`` and answers zeros on ``S1_AXI``/``S2_AXI``
(``hw/boards/sume/README.md``), hence 0x44010000.
"""
