# netfpga-rl: a register window of 64 KB for a switch of several jobs.
#
# A switch built with JOBS > 1 (nf_nrl_top JOBS, build.tcl --param JOBS=N)
# answers job j's registers at S0_AXI + j * 0x1000 (docs/protocol.md section
# 11: pages 0 to 15, 64 KB). The reference_switch address map gives S0_AXI
# (the interconnect's M01) 4 KB, which reaches page 0 alone. build.tcl (full
# flow) appends a source of this file to the private copy's
# <project>_defines.tcl, so every reader of the defines sees the wider
# window: control_sub.tcl's address segment M01_AXI/Reg (the PCIe DMA's
# path), export_registers.tcl's header (SUME_..._SIZEADDR), mb_regs.tcl
# (the MicroBlaze's path). M01 and every IP the map assigns to it (same
# base address) get SIZEADDR 0x10000; the next segment of the reference map
# starts 64 KB later (M02 at 0x44020000), and a map in which another segment
# starts inside the 64 KB stops here with an error.
#
# Sourced where the defines are (at the top level, or inside a proc of
# control_sub.tcl / export_registers.tcl): only variables of that scope.

if {![info exists M01_BASEADDR]} {
    error "jobs_window.tcl: \$M01_BASEADDR is not set: source it at the end of the project's *_defines.tcl"
}
set nrl_window 0x10000
set nrl_base [expr {$M01_BASEADDR}]
if {$nrl_base % $nrl_window != 0} {
    error "jobs_window.tcl: M01_BASEADDR $M01_BASEADDR is not a multiple of 64 KB: a 64 KB register window cannot start there"
}
foreach nrl_var [info vars *_BASEADDR] {
    set nrl_at [expr {[set $nrl_var]}]
    set nrl_ip [string range $nrl_var 0 end-9]
    if {$nrl_at == $nrl_base} {
        set ${nrl_ip}_SIZEADDR [format 0x%X $nrl_window]
        set ${nrl_ip}_HIGHADDR [format 0x%08X [expr {$nrl_base + $nrl_window - 1}]]
    } elseif {$nrl_at > $nrl_base && $nrl_at < $nrl_base + $nrl_window} {
        error "jobs_window.tcl: $nrl_var = [set $nrl_var] lies in the 64 KB from M01_BASEADDR = $M01_BASEADDR that a switch of several jobs needs for its register pages: move that segment, or build with JOBS = 1"
    }
}
unset nrl_window nrl_base nrl_var nrl_at nrl_ip
