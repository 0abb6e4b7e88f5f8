# netfpga-rl: the MIG project of the replay record store, derived from SUME's
# own (build.tcl --ddr, full flow).
#
# mig_prj_derive TEXT: TEXT is a MIG 7-series project file (.prj, the XML the
# MIG GUI writes), by default the reference tree's
# projects/acceptance_test/hw/xml/nf_sume_ddr3A.prj (SODIMM A: memory part,
# pins, PHY ratio, timing). Returns it with what nf_nrl_ddr.v needs changed:
#   * ModuleName nrl_mig (the IP's name in the project);
#   * the AXI4 slave: 512-bit data (a 64-bit SODIMM at 4:1: the native UI
#     width, no upsizer in the MIG), 32-bit address, 1-bit ID (the replay
#     engine's one ID).
# and checks what nf_nrl_ddr.v assumes of the rest, failing with a message
# naming the field otherwise:
#   * SystemClock "No Buffer": nf_nrl_ddr's IBUFDS on sys_clk_p/n (E34/E35,
#     nrl_ddr.xdc) drives sys_clk_i;
#   * ReferenceClock "No Buffer": clk_ref_i (the IDELAYCTRL's 200 MHz) is the
#     datapath's 200 MHz clock, which already comes from the same pins
#     (fpga_sysclk) through the reference top.v's clock wizard;
#   * SysResetPolarity "ACTIVE HIGH": nf_nrl_ddr inverts the board's
#     active-low reset for sys_rst;
#   * InputClkFreq 233.1 MHz (the 4.288 ns period nrl_ddr.xdc constrains),
#     PHYRatio 4:1, DataWidth 64.

proc mig_prj_field {text name} {
    if {![regexp "<$name>\\s*(\[^<\]*?)\\s*</$name>" $text -> v]} {
        error "the MIG project has no <$name> element"
    }
    return $v
}

proc mig_prj_set {text name value} {
    set n [regsub "<$name>\[^<\]*</$name>" $text "<$name>$value</$name>" text]
    if {$n != 1} {
        error "the MIG project has $n <$name> elements, not one"
    }
    return $text
}

proc mig_prj_derive {text} {
    foreach {name want why} {
        SystemClock "No Buffer" "nf_nrl_ddr.v buffers sys_clk_p/n itself (IBUFDS) and drives sys_clk_i"
        ReferenceClock "No Buffer" "nf_nrl_ddr.v feeds clk_ref_i from the datapath's 200 MHz clock"
        SysResetPolarity "ACTIVE HIGH" "nf_nrl_ddr.v drives sys_rst with the inverted board reset"
        InputClkFreq "233.1" "nrl_ddr.xdc constrains sys_clk_p at 4.288 ns (233.1 MHz)"
        PHYRatio "4:1" "a 64-bit SODIMM at 4:1 has the 512-bit user interface nf_nrl_ddr.v expects"
        DataWidth "64" "the record store's 512-bit AXI port is the native width of a 64-bit SODIMM at 4:1"
    } {
        set v [mig_prj_field $text $name]
        if {$v ne $want} {
            error "the MIG project's <$name> is '$v', not '$want': $why"
        }
    }
    set text [mig_prj_set $text ModuleName nrl_mig]
    set text [mig_prj_set $text C0_S_AXI_DATA_WIDTH 512]
    set text [mig_prj_set $text C0_S_AXI_ADDR_WIDTH 32]
    set text [mig_prj_set $text C0_S_AXI_ID_WIDTH 1]
    return $text
}
