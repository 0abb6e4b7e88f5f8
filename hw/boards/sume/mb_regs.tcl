# netfpga-rl: give the SUME MicroBlaze a path to the switch's register window.
#
# Sourced by build.tcl --mb-regs right after the reference project's
# control_sub.tcl has built the block design control_sub. In that design the
# MicroBlaze (nf_mbsys/mbsys/microblaze_0) reaches only its block RAM, its
# interrupt controller, the I2C and the UART-lite cores; the AXI-Lite
# interconnect dma_sub/axi_interconnect_0, whose M01 port is the datapath's
# S0_AXI (0x44010000, the netfpga-rl registers), is mastered by the PCIe DMA
# alone. The firmware's register commands on the USB-UART
# (docs/board_uart.md) need that window, so this script:
#
#   1. adds a fourth master port M03 to the MicroBlaze's peripheral
#      interconnect (nf_mbsys/mbsys/microblaze_0_axi_periph), clocked and
#      reset like its other ports, and brings it out of mbsys and nf_mbsys
#      as M_AXI_NRL, with the MicroBlaze clock and reset (mb_clk, mb_aresetn);
#   2. adds a second slave port S01 to dma_sub/axi_interconnect_0 (the
#      interconnect inserts the clock crossing), brought out of dma_sub as
#      S01_AXI / S01_ACLK / S01_ARESETN;
#   3. connects the two and maps M01_AXI (the register window, $M01_BASEADDR,
#      $M01_SIZEADDR from the project's defines) into microblaze_0/Data.
#
# Not run in Vivado here (no Vivado on the machine this was written on):
# the names follow the 2016.4 reference control_sub.tcl, and build.tcl's dry
# run checks the commands are issued, not that Vivado accepts them.

foreach var {M01_BASEADDR M01_SIZEADDR} {
    if {![info exists $var]} {
        error "mb_regs.tcl: \$$var is not set: source the project's *_defines.tcl first"
    }
}
foreach cell {/nf_mbsys/mbsys/microblaze_0 /nf_mbsys/mbsys/microblaze_0_axi_periph
              /nf_mbsys/mbsys/rst_clk_wiz_1_100M /nf_mbsys/clk_wiz_1 /dma_sub/axi_interconnect_0} {
    if {[get_bd_cells -quiet $cell] eq ""} {
        error "mb_regs.tcl: block design cell $cell not found: not the reference control_sub this script knows"
    }
}

set mb_old_inst [current_bd_instance .]

# 1. the MicroBlaze side
set mb_periph [get_bd_cells /nf_mbsys/mbsys/microblaze_0_axi_periph]
set mb_mi [get_property CONFIG.NUM_MI $mb_periph]
if {$mb_mi ne "3"} {
    error "mb_regs.tcl: nf_mbsys/mbsys/microblaze_0_axi_periph has NUM_MI $mb_mi, expected 3"
}
set_property -dict [list CONFIG.NUM_MI {4}] $mb_periph
current_bd_instance /nf_mbsys/mbsys
create_bd_intf_pin -mode Master -vlnv xilinx.com:interface:aximm_rtl:1.0 M03_AXI
connect_bd_intf_net [get_bd_intf_pins M03_AXI] [get_bd_intf_pins microblaze_0_axi_periph/M03_AXI]
connect_bd_net [get_bd_pins Clk] [get_bd_pins microblaze_0_axi_periph/M03_ACLK]
connect_bd_net [get_bd_pins rst_clk_wiz_1_100M/peripheral_aresetn] [get_bd_pins microblaze_0_axi_periph/M03_ARESETN]
current_bd_instance /nf_mbsys
create_bd_intf_pin -mode Master -vlnv xilinx.com:interface:aximm_rtl:1.0 M_AXI_NRL
create_bd_pin -dir O -type clk mb_clk
create_bd_pin -dir O -type rst mb_aresetn
connect_bd_intf_net [get_bd_intf_pins M_AXI_NRL] [get_bd_intf_pins mbsys/M03_AXI]
connect_bd_net [get_bd_pins mb_clk] [get_bd_pins clk_wiz_1/clk_out1]
connect_bd_net [get_bd_pins mb_aresetn] [get_bd_pins mbsys/peripheral_aresetn]

# 2. the register interconnect side
set reg_ic [get_bd_cells /dma_sub/axi_interconnect_0]
set reg_si [get_property CONFIG.NUM_SI $reg_ic]
if {$reg_si ne "1"} {
    error "mb_regs.tcl: dma_sub/axi_interconnect_0 has NUM_SI $reg_si, expected 1"
}
set_property -dict [list CONFIG.NUM_SI {2} CONFIG.S01_HAS_REGSLICE {3}] $reg_ic
current_bd_instance /dma_sub
create_bd_intf_pin -mode Slave -vlnv xilinx.com:interface:aximm_rtl:1.0 S01_AXI
create_bd_pin -dir I -type clk S01_ACLK
create_bd_pin -dir I -type rst S01_ARESETN
connect_bd_intf_net [get_bd_intf_pins S01_AXI] [get_bd_intf_pins axi_interconnect_0/S01_AXI]
connect_bd_net [get_bd_pins S01_ACLK] [get_bd_pins axi_interconnect_0/S01_ACLK]
connect_bd_net [get_bd_pins S01_ARESETN] [get_bd_pins axi_interconnect_0/S01_ARESETN]

# 3. connect and map
current_bd_instance /
connect_bd_intf_net [get_bd_intf_pins nf_mbsys/M_AXI_NRL] [get_bd_intf_pins dma_sub/S01_AXI]
connect_bd_net [get_bd_pins nf_mbsys/mb_clk] [get_bd_pins dma_sub/S01_ACLK]
connect_bd_net [get_bd_pins nf_mbsys/mb_aresetn] [get_bd_pins dma_sub/S01_ARESETN]
create_bd_addr_seg -range $M01_SIZEADDR -offset $M01_BASEADDR \
    [get_bd_addr_spaces nf_mbsys/mbsys/microblaze_0/Data] [get_bd_addr_segs M01_AXI/Reg] SEG_nrl_M01_AXI_Reg

current_bd_instance $mb_old_inst
validate_bd_design
save_bd_design
puts "mb_regs.tcl: the MicroBlaze reaches M01_AXI (the netfpga-rl registers) at $M01_BASEADDR"
