# netfpga-rl: the DDR3 memory controller behind the replay record store.
#
# Sourced by build.tcl --ddr (full flow) right after the reference project's
# control_sub.tcl, inside the project, before synthesis. UNTESTED: written
# without Vivado or a board (docs/board.md); build.tcl's dry run checks that
# the commands are issued, not that Vivado accepts them.
#
#   1. nrl_mig: Xilinx mig_7series from the MIG project file $::nrl_mig_prj
#      (by default derived from SUME's nf_sume_ddr3A.prj by mig_prj.tcl: the
#      SODIMM's memory part and pins, unbuffered system and reference
#      clocks, active-high reset, AXI4 slave with 512-bit data and the
#      address / ID widths nf_nrl_ddr.v expects). The file is copied into the IP folder
#      and named by CONFIG.XML_INPUT_FILE, as the MIG's own Tcl does;
#   2. nrl_rpl_axi_cc: Xilinx axi_clock_converter (AXI4, 512-bit data,
#      $::nrl_axi_addr_width-bit address, $::nrl_axi_id_width-bit ID,
#      asynchronous clocks): the replay engine's 200 MHz datapath clock on
#      its slave side, the MIG's UI clock on its master side;
#   3. nf_nrl_ddr.v ($::nrl_ddr_v), the wrapper build.tcl instantiates in
#      the patched top.v, read into the project, and nrl_ddr.xdc
#      ($::nrl_ddr_xdc) added to its constraints.

foreach var {nrl_mig_prj nrl_ddr_v nrl_ddr_xdc nrl_axi_addr_width nrl_axi_id_width} {
    if {![info exists ::$var]} {
        error "mig.tcl: \$::$var is not set: this script is sourced by build.tcl --ddr"
    }
}
if {![file isfile $::nrl_mig_prj]} {
    error "mig.tcl: the MIG project file $::nrl_mig_prj does not exist"
}

# 1. the memory controller
create_ip -name mig_7series -vendor xilinx.com -library ip -module_name nrl_mig
set nrl_mig_dir [get_property IP_DIR [get_ips nrl_mig]]
if {$nrl_mig_dir ne ""} {
    file copy -force $::nrl_mig_prj [file join $nrl_mig_dir nrl_mig.prj]
}
set_property -dict [list CONFIG.XML_INPUT_FILE {nrl_mig.prj} CONFIG.RESET_BOARD_INTERFACE {Custom} \
    CONFIG.MIG_DONT_TOUCH_PARAM {Custom} CONFIG.BOARD_MIG_PARAM {Custom}] [get_ips nrl_mig]
generate_target all [get_ips nrl_mig]

# 2. the clock crossing
create_ip -name axi_clock_converter -vendor xilinx.com -library ip -module_name nrl_rpl_axi_cc
set_property -dict [list CONFIG.PROTOCOL {AXI4} CONFIG.DATA_WIDTH {512} \
    CONFIG.ADDR_WIDTH $::nrl_axi_addr_width CONFIG.ID_WIDTH $::nrl_axi_id_width \
    CONFIG.ACLK_ASYNC {1} CONFIG.SYNCHRONIZATION_STAGES {3}] [get_ips nrl_rpl_axi_cc]
generate_target all [get_ips nrl_rpl_axi_cc]

# 3. the wrapper and its constraints (the unbuffered system clock's pins, its
#    period and the BACKBONE route to the MIG's PLL), in the reference
#    project's constraint set
read_verilog $::nrl_ddr_v
add_files -fileset constraints -norecurse $::nrl_ddr_xdc
puts "mig.tcl: nrl_mig (from [file tail $::nrl_mig_prj]), nrl_rpl_axi_cc, nf_nrl_ddr and [file tail $::nrl_ddr_xdc] added"
