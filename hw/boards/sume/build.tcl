# netfpga-rl: Vivado build of the NetFPGA SUME switch.
#
#   vivado -mode batch -source hw/boards/sume/build.tcl -tclargs [options]
#   (scripts/sume_build.sh runs exactly this)
#
# Two flows; both read the RTL through the same file lists as the
# simulators and Yosys (hw/rtl/nrl_switch.f, hw/boards/sume/nf_nrl_top.f):
#
#   ooc   Non-project, out-of-context implementation of the user datapath
#         nf_nrl_top alone on the SUME part (xc7vx690tffg1761-3) with
#         nrl.xdc: synth_design, opt_design, place_design, phys_opt_design,
#         route_design, timing and utilization reports, a routed checkpoint.
#         No board repository needed; no bitstream (nf_nrl_top has no pins).
#
#   full  The SUME reference_switch project (NetFPGA-SUME-live, $SUME_FOLDER)
#         with its nf_datapath replaced by nf_nrl_top: the project and its
#         block design (PCIe DMA, MicroBlaze, AXI interconnect, 10G ports)
#         are created by the reference project's own Tcl, copied to the build
#         folder and patched (our sources instead of hdl/nf_datapath.v, the
#         instance in hdl/top.v renamed, BUILD_HASH passed), then synthesis,
#         implementation and write_bitstream; reports and nf_nrl.bit are
#         copied to the output folder.
#
# Options (after -tclargs):
#   --flow ooc|full   default: full when $SUME_FOLDER is set, else ooc
#   --out DIR         output folder (default: build/sume in the repository)
#   --jobs N          parallel jobs for project runs (default 4)
#   --part PART       FPGA part (default xc7vx690tffg1761-3)
#   --param K=V       nf_nrl_top parameter override (repeatable, ooc flow)

set script_dir [file normalize [file dirname [info script]]]
set repo [file normalize [file join $script_dir .. .. ..]]
set rtl_dir [file join $repo hw/rtl]
set switch_f [file join $repo hw/rtl/nrl_switch.f]
set board_f [file join $repo hw/boards/sume/nf_nrl_top.f]
set xdc_file [file join $repo hw/boards/sume/nrl.xdc]

# ---------------------------------------------------------------------------
# options

set flow [expr {[info exists ::env(SUME_FOLDER)] ? "full" : "ooc"}]
set out_dir [file join $repo build/sume]
set jobs 4
set part xc7vx690tffg1761-3
set params {}

set args $::argv
while {[llength $args] > 0} {
    set args [lassign $args opt]
    switch -- $opt {
        --flow  { set args [lassign $args flow] }
        --out   { set args [lassign $args out_dir] }
        --jobs  { set args [lassign $args jobs] }
        --part  { set args [lassign $args part] }
        --param { set args [lassign $args kv]; lappend params $kv }
        default { error "build.tcl: unknown option '$opt' (see the header of $script_dir/build.tcl)" }
    }
}
if {$flow ni {ooc full}} {
    error "build.tcl: --flow must be ooc or full, not '$flow'"
}
set out_dir [file normalize $out_dir]
file mkdir $out_dir

# ---------------------------------------------------------------------------
# helpers

# Read a .f file list: one source per line, relative to the list's folder;
# '#' and '//' start comments.
proc read_filelist {path} {
    set dir [file dirname $path]
    set fh [open $path r]
    set files {}
    foreach line [split [read $fh] "\n"] {
        regsub {(#|//).*$} $line "" line
        set line [string trim $line]
        if {$line ne ""} {
            set f [file normalize [file join $dir $line]]
            if {![file exists $f]} {
                error "build.tcl: $path lists $line, which does not exist"
            }
            lappend files $f
        }
    }
    close $fh
    return $files
}

# First 32 bits of the git commit, for the BUILD_HASH register (0 outside git).
proc build_hash {repo} {
    if {[catch {exec git -C $repo rev-parse --short=8 HEAD} h] || ![regexp {^[0-9a-f]{8}$} $h]} {
        return "00000000"
    }
    return $h
}

proc write_reports {dir prefix} {
    report_timing_summary -max_paths 10 -file [file join $dir ${prefix}_timing_summary.rpt]
    report_utilization -hierarchical -file [file join $dir ${prefix}_utilization_hier.rpt]
    report_utilization -file [file join $dir ${prefix}_utilization.rpt]
    report_clock_utilization -file [file join $dir ${prefix}_clock_utilization.rpt]
    set wns [get_property SLACK [get_timing_paths -max_paths 1 -nworst 1 -setup]]
    puts "build.tcl: $prefix worst setup slack: $wns ns (reports in $dir)"
    return $wns
}

set sources [concat [read_filelist $switch_f] [read_filelist $board_f]]
set hash [build_hash $repo]
puts "build.tcl: flow $flow, part $part, BUILD_HASH 0x$hash, output $out_dir"

# ---------------------------------------------------------------------------
# ooc: non-project implementation of nf_nrl_top

if {$flow eq "ooc"} {
    set generics [list "BUILD_HASH=32'h$hash"]
    foreach kv $params {
        lappend generics $kv
    }
    foreach f $sources {
        read_verilog $f
    }
    read_xdc -mode out_of_context $xdc_file

    synth_design -top nf_nrl_top -part $part -mode out_of_context \
        -include_dirs [list $rtl_dir] -generic $generics -flatten_hierarchy rebuilt
    write_checkpoint -force [file join $out_dir nf_nrl_top_synth.dcp]
    write_reports $out_dir synth

    opt_design
    place_design
    phys_opt_design
    route_design
    write_checkpoint -force [file join $out_dir nf_nrl_top_routed.dcp]
    set wns [write_reports $out_dir routed]
    if {$wns < 0} {
        puts "build.tcl: WARNING: timing not met at 200 MHz (WNS $wns ns)"
    }
    puts "build.tcl: ooc flow done"
    return
}

# ---------------------------------------------------------------------------
# full: the SUME reference_switch project with nf_nrl_top as its datapath

foreach var {SUME_FOLDER XILINX_PATH CONSTRAINTS} {
    if {![info exists ::env($var)]} {
        error "build.tcl: \$$var is not set: source \$SUME_FOLDER/tools/settings.sh of the NetFPGA-SUME-live repository first (see hw/boards/sume/README.md)"
    }
}
set ref_hw [file join $::env(SUME_FOLDER) projects reference_switch hw]
foreach f {tcl/reference_switch.tcl hdl/top.v hdl/nf_datapath.v} {
    if {![file exists [file join $ref_hw $f]]} {
        error "build.tcl: $ref_hw/$f not found: \$SUME_FOLDER must be a NetFPGA-SUME-live checkout"
    }
}
set ::env(NF_PROJECT_NAME) reference_switch

# a private copy of the reference project's hw folder
set work [file join $out_dir reference_switch_hw]
file delete -force $work
file copy $ref_hw $work

# top.v: instantiate nf_nrl_top (same ports and parameters as nf_datapath)
set fh [open [file join $work hdl top.v] r]
set top_v [read $fh]
close $fh
set n [regsub {\mnf_datapath(\s*)#(\s*)\(} $top_v "nf_nrl_top\\1#\\2(\n    .BUILD_HASH(32'h$hash)," top_v]
if {$n != 1} {
    error "build.tcl: expected one 'nf_datapath #(' instance in $ref_hw/hdl/top.v, found $n"
}
set fh [open [file join $work hdl top.v] w]
puts -nonewline $fh $top_v
close $fh

# the project script: our sources instead of nf_datapath.v, no exit at the end
set fh [open [file join $work tcl reference_switch.tcl] r]
set proj_tcl [read $fh]
close $fh
set reads "set_property include_dirs [list [list $rtl_dir]] \[current_fileset\]\n"
foreach f $sources {
    append reads "read_verilog \"$f\"\n"
}
set n [regsub {read_verilog\s+"?\./hdl/nf_datapath\.v"?\s*\n} $proj_tcl $reads proj_tcl]
if {$n != 1} {
    error "build.tcl: expected one read_verilog of hdl/nf_datapath.v in reference_switch.tcl, found $n"
}
regsub -all -line {^\s*exit\s*$} $proj_tcl "" proj_tcl
regsub -all -line {^\s*(launch_runs\s+\S+)} $proj_tcl "\\1 -jobs $jobs" proj_tcl
set fh [open [file join $work tcl nrl_reference_switch.tcl] w]
puts -nonewline $fh $proj_tcl
close $fh

# the reference script uses paths relative to its hw folder
set old_dir [pwd]
cd $work
source [file join $work tcl nrl_reference_switch.tcl]

set impl [get_runs impl_1]
if {[get_property PROGRESS $impl] ne "100%"} {
    cd $old_dir
    error "build.tcl: implementation did not complete; see $work/project/*.runs/impl_1/runme.log"
}
open_run impl_1
set wns [write_reports $out_dir full]
set bits [glob -nocomplain [file join [get_property DIRECTORY $impl] *.bit]]
if {[llength $bits] != 1} {
    cd $old_dir
    error "build.tcl: no bitstream in [get_property DIRECTORY $impl]"
}
file copy -force [lindex $bits 0] [file join $out_dir nf_nrl.bit]
cd $old_dir
if {$wns < 0} {
    puts "build.tcl: WARNING: timing not met (WNS $wns ns); the bitstream may not work"
}
puts "build.tcl: bitstream [file join $out_dir nf_nrl.bit]"
