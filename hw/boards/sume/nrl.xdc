# netfpga-rl on NetFPGA SUME: timing constraints of the user datapath (nf_nrl_top).
#
# Used by build.tcl for the out-of-context (OOC) run of nf_nrl_top, where
# nf_nrl_top's ports are the design's ports. In the full SUME build the
# reference project's nf_sume_general.xdc already defines the clocks
# (clk_200 at 5.000 ns on the BUFG of axi_clocking, axi_clk at 10.000 ns)
# and this file is not read: nf_nrl_top needs nothing beyond them, since it
# runs entirely on clk_200 (axis_aclk = axi_aclk in the reference top.v).

# Datapath clock: 200 MHz, as clk_200 in SUME's reference projects.
create_clock -period 5.000 -name axis_aclk [get_ports axis_aclk]

# axi_aclk is the same net as axis_aclk in SUME's top.v and is unused inside
# nf_nrl_top; constrain it as the same frequency so OOC timing has no
# unclocked port. Both clocks come from one source, so they are related.
create_clock -period 5.000 -name axi_aclk [get_ports axi_aclk]

# PLACEHOLDER budgets: in the full design the ports of nf_nrl_top connect to
# registers inside the SUME interface cores (nf_10g_interface RX/TX queues,
# the DMA, the AXI interconnect) one routing hop away. Half a period for the
# logic outside is a conservative stand-in for OOC timing; the full build's
# timing report is the authority.
set nrl_in  [get_ports -filter {DIRECTION == IN && NAME !~ "*aclk"}]
set nrl_out [get_ports -filter {DIRECTION == OUT}]
set_input_delay  -clock axis_aclk 2.500 $nrl_in
set_output_delay -clock axis_aclk 2.500 $nrl_out

# The active-low resets come from SUME's synchronizer (core200_reset_sync_n)
# in the same clock domain and are registered once in nf_nrl_top (rst_reg),
# so they are ordinary synchronous paths: no false path is needed.
