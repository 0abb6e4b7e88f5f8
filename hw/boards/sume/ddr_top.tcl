# netfpga-rl: build.tcl --ddr's patch of the reference top.v (full flow).
#
# ddr_patch_top TEXT: TEXT is top.v after build.tcl renamed the nf_datapath
# instance to nf_nrl_top (RPL_REC_STORE=1 among its parameters); returns it
#   * with the DDR3 SODIMM pins and the MIG system clock as ports of module
#     top (ANSI or non-ANSI port list; `module top;` gets a list), named as
#     the MIG project names them (sys_clk_p/n, ddr3_*), so the pin
#     constraints the MIG generates apply to them;
#   * with wires nrl_rpl_* declared before the nf_nrl_top instance and
#     connected to its m_axi_rpl_* ports;
#   * with an nf_nrl_ddr instance after it, clocked and reset like
#     nf_nrl_top (the nets on its .axis_aclk and .axis_resetn); the same
#     200 MHz clock is the MIG's IDELAY reference clock (clk_ref_i).
# Errors (no instance, no clock or reset connection, no module top) are Tcl
# errors with a message. UNTESTED in Vivado (docs/board.md).

# the AXI4 channels of m_axi_rpl_*: name, width expression ("" = 1 bit), direction seen from nf_nrl_top
set ::ddr_axi_ports {
    awid {[0:0]} out awaddr {[31:0]} out awlen {[7:0]} out awsize {[2:0]} out awburst {[1:0]} out
    awlock {} out awcache {[3:0]} out awprot {[2:0]} out awqos {[3:0]} out awvalid {} out awready {} in
    wdata {[511:0]} out wstrb {[63:0]} out wlast {} out wvalid {} out wready {} in
    bid {[0:0]} in bresp {[1:0]} in bvalid {} in bready {} out
    arid {[0:0]} out araddr {[31:0]} out arlen {[7:0]} out arsize {[2:0]} out arburst {[1:0]} out
    arlock {} out arcache {[3:0]} out arprot {[2:0]} out arqos {[3:0]} out arvalid {} out arready {} in
    rid {[0:0]} in rdata {[511:0]} in rresp {[1:0]} in rlast {} in rvalid {} in rready {} out
}

# the top-level pins: direction, range, name (a 64-bit single-rank SODIMM, 16 row bits)
set ::ddr_pins {
    input {} sys_clk_p  input {} sys_clk_n
    inout {[63:0]} ddr3_dq  inout {[7:0]} ddr3_dqs_p  inout {[7:0]} ddr3_dqs_n
    output {[15:0]} ddr3_addr  output {[2:0]} ddr3_ba  output {} ddr3_ras_n  output {} ddr3_cas_n
    output {} ddr3_we_n  output {} ddr3_reset_n  output {[0:0]} ddr3_ck_p  output {[0:0]} ddr3_ck_n
    output {[0:0]} ddr3_cke  output {[0:0]} ddr3_cs_n  output {[7:0]} ddr3_dm  output {[0:0]} ddr3_odt
}

# Index of the parenthesis closing the one at index i of text.
proc ddr_match_paren {text i} {
    set depth 0
    set n [string length $text]
    for {} {$i < $n} {incr i} {
        set c [string index $text $i]
        if {$c eq "("} {
            incr depth
        } elseif {$c eq ")"} {
            incr depth -1
            if {$depth == 0} {
                return $i
            }
        }
    }
    error "unbalanced parentheses"
}

# Index of the first non-blank character of text at or after i.
proc ddr_skip_blank {text i} {
    while {[string is space -strict [string index $text $i]]} {
        incr i
    }
    return $i
}

proc ddr_patch_top {text} {
    # the nf_nrl_top instance: parameters, name, port list
    if {![regexp -indices {\mnf_nrl_top\s*#\s*\(} $text m]} {
        error "no 'nf_nrl_top #(' instance"
    }
    set inst_start [lindex $m 0]
    set pclose [ddr_match_paren $text [lindex $m 1]]
    if {![regexp -indices -start [expr {$pclose + 1}] {\A\s*\w+\s*\(} $text m2]} {
        error "no instance name and port list after nf_nrl_top's parameters"
    }
    set lp [lindex $m2 1]
    set rp [ddr_match_paren $text $lp]
    set ports [string range $text [expr {$lp + 1}] [expr {$rp - 1}]]
    if {![regexp {\.axis_aclk\s*\(\s*([^()\s]+)\s*\)} $ports -> clk]} {
        error "the nf_nrl_top instance has no .axis_aclk(...) connection"
    }
    if {![regexp {\.axis_resetn\s*\(\s*([^()\s]+)\s*\)} $ports -> rstn]} {
        error "the nf_nrl_top instance has no .axis_resetn(...) connection"
    }
    if {![regexp -indices {\)\s*;} [string range $text $rp end] m3]} {
        error "no ');' after the nf_nrl_top instance"
    }
    set inst_end [expr {$rp + [lindex $m3 1]}]

    # wires, connections, the nf_nrl_ddr instance
    set wires "// netfpga-rl --ddr: the replay record store's AXI4 master\n"
    set conns {}
    set dconns {}
    foreach {name range dir} $::ddr_axi_ports {
        append wires "wire $range nrl_rpl_$name;\n"
        lappend conns "    .m_axi_rpl_$name\(nrl_rpl_$name\)"
        lappend dconns "    .s_axi_$name\(nrl_rpl_$name\)"
    }
    append wires "wire nrl_ddr_calib_done;\n\n"
    foreach {dir range name} $::ddr_pins {
        lappend dconns "    .$name\($name\)"
    }
    set ddr_inst "\n\nnf_nrl_ddr\nnrl_ddr_inst (\n    .axis_aclk($clk),\n    .axis_resetn($rstn),\n"
    append ddr_inst "    .clk_ref_i($clk),\n    .sys_rst_n($rstn),\n    .init_calib_complete(nrl_ddr_calib_done),\n"
    append ddr_inst [join $dconns ",\n"] "\n);\n"
    set conn_text [join $conns ",\n"]
    if {[string trim $ports] eq ""} {
        set new_ports "\n$conn_text\n"
    } else {
        set new_ports "\n$conn_text,$ports"
    }
    set text [string range $text 0 $lp]$new_ports[string range $text $rp $inst_end]$ddr_inst[string range $text [expr {$inst_end + 1}] end]
    set text [string range $text 0 [expr {$inst_start - 1}]]$wires[string range $text $inst_start end]

    # the module header: DDR3 pins as ports
    if {![regexp -indices {\mmodule\s+top\M} $text m]} {
        error "no 'module top'"
    }
    set i [ddr_skip_blank $text [expr {[lindex $m 1] + 1}]]
    if {[string index $text $i] eq "#"} {
        set i [ddr_skip_blank $text [expr {$i + 1}]]
        set i [ddr_skip_blank $text [expr {[ddr_match_paren $text $i] + 1}]]
    }
    set ansi {}
    set names {}
    set decls {}
    foreach {dir range name} $::ddr_pins {
        lappend ansi "    $dir wire $range $name"
        lappend names "    $name"
        append decls "$dir wire $range $name;\n"
    }
    set c [string index $text $i]
    if {$c eq ";"} {
        set text [string range $text 0 [expr {$i - 1}]]\ (\n[join $ansi ",\n"]\n)[string range $text $i end]
    } elseif {$c eq "("} {
        set body [string range $text [expr {$i + 1}] end]
        if {[regexp {\A\s*(input|output|inout)\M} $body]} {
            set text [string range $text 0 $i]\n[join $ansi ",\n"],[string range $text [expr {$i + 1}] end]
        } else {
            set hclose [ddr_match_paren $text $i]
            set semi [string first ";" $text $hclose]
            set text [string range $text 0 $semi]\n$decls[string range $text [expr {$semi + 1}] end]
            set text [string range $text 0 $i]\n[join $names ",\n"],[string range $text [expr {$i + 1}] end]
        }
    } else {
        error "cannot read the port list of module top"
    }
    return $text
}
