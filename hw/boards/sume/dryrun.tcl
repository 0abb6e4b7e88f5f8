# netfpga-rl: stand-ins for the Vivado commands, for a dry run of build.tcl
# under plain tclsh (scripts/sume_build.sh --dry-run).
#
# Every step of the flow runs for real (checks, the private SUME tree, the
# identifier recipe, the patches, the reference project's own Tcl, the
# firmware make, the ELF checks) except Vivado itself: its commands answer
# nothing, or the little the flow and the reference scripts look at (an open
# project, the block design's cell hierarchy and the CONFIG properties set on
# cells, a complete run with a hardware export, the block design file, the
# files added). It takes seconds and
# tells you, before hours of a real build, whether your SUME checkout,
# environment and firmware toolchain are what the flow expects, and that
# nothing is written into the checkout. It proves nothing about Vivado.
#
# The version is 2016.4 unless NRL_DRYRUN_VIVADO_VERSION says otherwise;
# "bitstream", "memory map" and "reports" are text files saying they are
# dry-run output; updatemem is stubbed too.

set ::dryrun_files {}
set ::dryrun_bd ""

proc version {args} {
    if {[info exists ::env(NRL_DRYRUN_VIVADO_VERSION)]} {
        return $::env(NRL_DRYRUN_VIVADO_VERSION)
    }
    return 2016.4
}

proc get_projects {args} { return dryrun }
proc get_runs {name} { return $name }
proc get_timing_paths {args} { return dryrun_path }

proc dryrun_run_dir {} {
    set d [file join [pwd] project dryrun.runs impl_1]
    file mkdir $d
    foreach {f what} {top.sysdef "a hardware export" top.bit "a bitstream"} {
        if {![file exists [file join $d $f]]} {
            set fh [open [file join $d $f] w]
            puts $fh "netfpga-rl dry run: not $what"
            close $fh
        }
    }
    return $d
}

proc get_property {name args} {
    if {[info exists ::dryrun_prop([lindex $args end],$name)]} {
        return $::dryrun_prop([lindex $args end],$name)
    }
    switch -- $name {
        TYPE { return hier }
        PROGRESS { return 100% }
        DIRECTORY { return [dryrun_run_dir] }
        SLACK { return 0.0 }
    }
    return ""
}

# the block design's cell hierarchy, as far as the scripts walk it:
# current_bd_instance, create_bd_cell, get_bd_cells and CONFIG properties
set ::dryrun_inst /
array set ::dryrun_cell {/ 1}
array set ::dryrun_prop {}
proc dryrun_path {name} {
    if {$name eq "/" || $name eq ""} { return / }
    if {[string index $name 0] eq "/"} { return [string trimright $name /] }
    return [expr {$::dryrun_inst eq "/" ? "/$name" : "$::dryrun_inst/$name"}]
}
proc current_bd_instance {args} {
    set x [lindex $args end]
    if {$x ne "" && $x ne "."} { set ::dryrun_inst [dryrun_path $x] }
    return $::dryrun_inst
}
proc create_bd_cell {args} {
    set p [dryrun_path [lindex $args end]]
    set ::dryrun_cell($p) 1
    if {[string match *:axi_interconnect:* $args]} {  # the IP's defaults
        array set ::dryrun_prop [list $p,CONFIG.NUM_SI 1 $p,CONFIG.NUM_MI 2]
    }
    return $p
}
proc get_bd_cells {args} {
    set names [lsearch -all -inline -not -glob $args -*]
    if {![llength $names]} { return [array names ::dryrun_cell] }
    set p [dryrun_path [lindex $names end]]
    return [expr {[info exists ::dryrun_cell($p)] ? $p : ""}]
}
proc set_property {args} {
    set args [lsearch -all -inline -not -exact $args -quiet]
    if {[lindex $args 0] eq "-dict"} {
        foreach obj [lindex $args end] {
            if {[info exists ::dryrun_cell($obj)]} {
                foreach {k v} [lindex $args 1] { set ::dryrun_prop($obj,$k) $v }
            }
        }
    }
}

proc add_files {args} { lappend ::dryrun_files [lindex $args end] }
proc create_bd_design {name} { set ::dryrun_bd $name; lappend ::dryrun_files $name.bd; return $name }
proc current_bd_design {args} { return $::dryrun_bd }
proc get_files {args} {
    set pat [lindex $args end]
    if {"-of_objects" in $args} { return $pat }
    if {"-regexp" in $args} { return [lsearch -all -inline -regexp -nocase $::dryrun_files $pat] }
    set out {}
    foreach f $::dryrun_files {
        if {[file tail $f] eq $pat} { lappend out $f }
    }
    return $out
}

proc dryrun_note {path what} {
    set fh [open $path w]
    puts $fh "netfpga-rl dry run: not a $what"
    close $fh
}
proc write_bitstream {args} { dryrun_note [lindex $args end] bitstream }
foreach c {report_timing_summary report_utilization report_clock_utilization} {
    proc $c {args} {
        set i [lsearch -exact $args -file]
        if {$i >= 0} { dryrun_note [lindex $args [expr {$i + 1}]] report }
    }
}
proc write_checkpoint {args} { dryrun_note [lindex $args end] checkpoint }
# the routed design's memory map: the reference block design's one MicroBlaze
proc write_mem_info {args} {
    set fh [open [lindex $args end] w]
    puts $fh "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- netfpga-rl dry run: not a memory map -->"
    puts $fh "<MemInfo Version=\"1\" Minor=\"0\">\n  <Processor Endianness=\"Little\" InstPath=\"control_sub_i/nf_mbsys/mbsys/microblaze_0\">\n  </Processor>\n</MemInfo>"
    close $fh
}
# updatemem (a program that comes with Vivado): the "bitstream" names the ELF it holds
proc updatemem {args} {
    array set a [lsearch -all -inline -not -exact $args -force]
    set fh [open $a(-out) w]
    puts $fh "netfpga-rl dry run: not a bitstream ($a(-bit) with $a(-data) in $a(-proc))"
    close $fh
    return "updatemem (dry run): $a(-out)"
}

# everything else Vivado would do (Tcl's own auto-loaded commands still load)
proc unknown {args} {
    if {[auto_load [lindex $args 0]]} {
        return [uplevel 1 $args]
    }
    return ""
}
