# netfpga-rl: constraints of build.tcl --ddr (full flow), added by mig.tcl.
#
# The MIG project (mig_prj.tcl, from SUME's nf_sume_ddr3A.prj) takes its
# system clock unbuffered: nf_nrl_ddr's IBUFDS drives sys_clk_i from the
# SODIMM A clock pins, 233.1 MHz, placed here (the MIG's own constraints
# place only the memory pins). As in SUME's acceptance-test nf_sume_ddr3A.xdc,
# the clock reaches the MIG's PLL over the backbone (CLOCK_DEDICATED_ROUTE
# BACKBONE): its pins are not in the PLL's clock region. UNTESTED in Vivado
# (docs/board.md).

set_property PACKAGE_PIN E34 [get_ports sys_clk_p]
set_property PACKAGE_PIN E35 [get_ports sys_clk_n]
set_property IOSTANDARD DIFF_SSTL15 [get_ports sys_clk_p]
set_property IOSTANDARD DIFF_SSTL15 [get_ports sys_clk_n]
set_property VCCAUX_IO DONTCARE [get_ports sys_clk_p]
set_property VCCAUX_IO DONTCARE [get_ports sys_clk_n]
create_clock -name nrl_ddr_sys_clk -period 4.288 [get_ports sys_clk_p]

set_property CLOCK_DEDICATED_ROUTE BACKBONE [get_nets -of_objects [get_pins nrl_ddr_inst/sys_clk_ibufds/O]]
set_property CLOCK_DEDICATED_ROUTE BACKBONE [get_pins -hierarchical -filter {NAME =~ nrl_ddr_inst/*pll*CLKIN1}]
