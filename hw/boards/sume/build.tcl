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
#         Uses only Vivado built-ins: 2016.4 or later.
#
#   full  The SUME reference_switch project (NetFPGA-SUME-live, the 2016.4
#         release) with its nf_datapath replaced by nf_nrl_top, built the way
#         the project's own Makefiles build it, in the output folder:
#           1. checks: Vivado 2016.4 (the version control_sub.tcl was written
#              for; on any other it returns without creating the block
#              design), $SUME_FOLDER, $NF_DESIGN_DIR =
#              $SUME_FOLDER/projects/reference_switch, the reference files;
#           2. a private SUME tree, OUT/sume_tree: projects/reference_switch
#              (hw/ and sw/embedded/) copied, tools/, lib/, run_tag.sh and
#              RELEASE_NOTES linked; NF_DESIGN_DIR points at the copy, so
#              export_registers.tcl writes its header there. Nothing is
#              written into $SUME_FOLDER;
#           3. the hw/Makefile `identifier` target in the copy (the ID ROM
#              image create_ip/id_rom16x32.coe; SUME's top-level `make`
#              deletes every *.coe). Its format_coe.py is Python 2: a
#              python2 is put first on PATH if `python` is not one; with no
#              Python 2 at all the recipe's rom_data.txt is formatted here;
#           4. the copy patched: our sources instead of hdl/nf_datapath.v,
#              the nf_datapath instance in hdl/top.v renamed to nf_nrl_top
#              (BUILD_HASH passed), no `exit`; its project Tcl sourced
#              (defines, export_registers, IP, control_sub, synthesis,
#              implementation, bitstream);
#           5. the hardware export (impl_1/top.sysdef ->
#              sw/embedded/reference_switch.hdf, as export_hardware.tcl) and
#              the MicroBlaze firmware: make -C hw/boards/sume/firmware
#              app.elf SUME_HW_EXPORT=<hdf> BUILD_DIR=OUT/firmware (Xilinx
#              SDK 2016.4: mb-gcc, xsdk), or --elf FILE;
#           6. the ELF into the bitstream without a second place and route:
#              write_mem_info (the routed design's .mmi), then updatemem
#              writes the ELF into nf_mbsys/mbsys/microblaze_0's block RAM of
#              impl_1's top.bit, giving OUT/nf_nrl.bit (the firmware sets up
#              the Si5324 that clocks the 10G ports and serves the register
#              protocol on the USB-UART). The reference script's duplicate
#              synthesis run (its own `synth` besides synth_1) is dropped.
#
# Options (after -tclargs):
#   --flow ooc|full   default: full when $SUME_FOLDER is set, else ooc
#   --out DIR         output folder (default: build/sume in the repository)
#   --jobs N          parallel jobs for project runs (default 4)
#   --part PART       FPGA part (default xc7vx690tffg1761-3)
#   --param K=V       nf_nrl_top parameter override (repeatable). ooc flow: a
#                     synthesis generic; full flow: a parameter of the
#                     nf_nrl_top instance in top.v. JOBS=N (1 to 8) with N > 1
#                     in the full flow also widens the switch's register
#                     window (M01) from 4 KB to 64 KB in the address map
#                     (jobs_window.tcl: job j's page at 0x44010000 + j *
#                     0x1000). UNTESTED in Vivado (docs/board.md)
#   --elf FILE        full flow: use this MicroBlaze ELF, do not run make
#   --firmware DIR    full flow: folder whose Makefile builds app.elf
#                     (default hw/boards/sume/firmware)
#   --mb-regs         full flow: also give the MicroBlaze a path to the
#                     register window (mb_regs.tcl: needed for the firmware's
#                     register commands over the USB-UART; not yet run in
#                     Vivado, so off by default)
#   --ddr             replay records in the DDR3 SODIMM (RPL_REC_STORE=1).
#                     ooc flow: the parameter only (m_axi_rpl_* stay ports).
#                     full flow: top.v also gets the DDR3 pins and an
#                     nf_nrl_ddr instance (hw/boards/sume/nf_nrl_ddr.v: AXI
#                     clock converter + MIG) on nf_nrl_top's m_axi_rpl_*, and
#                     mig.tcl creates the two IPs from --mig-prj. UNTESTED in
#                     Vivado (docs/board.md)
#   --mig-prj FILE    full flow with --ddr: the MIG project file (.prj) of the
#                     board's DDR3 SODIMM (default: SUME's own,
#                     $SUME_FOLDER/projects/acceptance_test/hw/xml/nf_sume_ddr3A.prj);
#                     mig_prj.tcl checks its clocks and reset and sets the
#                     AXI4 slave (512-bit data, 32-bit address, 1-bit ID)

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
set elf_opt ""
set firmware_dir [file join $repo hw/boards/sume/firmware]
set mb_regs 0
set ddr 0
set mig_prj ""

set args $::argv
while {[llength $args] > 0} {
    set args [lassign $args opt]
    switch -- $opt {
        --flow  { set args [lassign $args flow] }
        --out   { set args [lassign $args out_dir] }
        --jobs  { set args [lassign $args jobs] }
        --part  { set args [lassign $args part] }
        --param { set args [lassign $args kv]; lappend params $kv }
        --elf   { set args [lassign $args elf_opt] }
        --firmware { set args [lassign $args firmware_dir] }
        --mb-regs { set mb_regs 1 }
        --ddr   { set ddr 1 }
        --mig-prj { set args [lassign $args mig_prj] }
        default { error "build.tcl: unknown option '$opt' (see the header of $script_dir/build.tcl)" }
    }
}
if {$flow ni {ooc full}} {
    error "build.tcl: --flow must be ooc or full, not '$flow'"
}
# --param K=V: a Verilog parameter name and a value without spaces; JOBS is 1 to 8
set switch_jobs 1
foreach kv $params {
    if {![regexp {^([A-Za-z_][A-Za-z0-9_]*)=([A-Za-z0-9_'.]+)$} $kv -> k v]} {
        error "build.tcl: --param takes NAME=VALUE (a parameter of nf_nrl_top and a number, e.g. JOBS=4 or RPL_AXI_BASE_ADDR=32'h80000000), not '$kv'"
    }
    if {$k eq "BUILD_HASH" || ($k eq "RPL_REC_STORE" && $ddr)} {
        error "build.tcl: --param $k: the flow sets $k itself (BUILD_HASH from git, RPL_REC_STORE with --ddr)"
    }
    if {$k eq "JOBS"} {
        if {![string is integer -strict $v] || $v < 1 || $v > 8} {
            error "build.tcl: --param JOBS=$v: the switch serves 1 to 8 jobs"
        }
        set switch_jobs $v
    }
}
set out_dir [file normalize $out_dir]

# Is `path` (normalized) `dir` or inside it?
proc is_within {path dir} {
    set p [file split [file normalize $path]]
    set d [file split [file normalize $dir]]
    return [expr {[lrange $p 0 [expr {[llength $d] - 1}]] eq $d}]
}
if {$flow eq "full" && [info exists ::env(SUME_FOLDER)] && $::env(SUME_FOLDER) ne ""
    && [is_within $out_dir $::env(SUME_FOLDER)]} {
    error "build.tcl: --out $out_dir is inside \$SUME_FOLDER ($::env(SUME_FOLDER)): the flow never writes into the SUME checkout; choose another output folder"
}
if {$ddr && $flow eq "full"} {
    if {$mig_prj eq ""} {
        # SUME's own MIG project of SODIMM A (the acceptance test's)
        if {![info exists ::env(SUME_FOLDER)] || $::env(SUME_FOLDER) eq ""} {
            error "build.tcl: --ddr (full flow) takes the MIG project from \$SUME_FOLDER/projects/acceptance_test/hw/xml/nf_sume_ddr3A.prj, but \$SUME_FOLDER is not set; source \$SUME_FOLDER/tools/settings.sh, or pass --mig-prj FILE"
        }
        set mig_prj [file join $::env(SUME_FOLDER) projects acceptance_test hw xml nf_sume_ddr3A.prj]
        if {![file isfile $mig_prj]} {
            error "build.tcl: --ddr (full flow): no $mig_prj, SUME's MIG project of the DDR3 SODIMM A (NetFPGA-SUME-live's acceptance test); pass --mig-prj FILE"
        }
    }
    set mig_prj [file normalize $mig_prj]
    if {![file isfile $mig_prj]} {
        error "build.tcl: --mig-prj $mig_prj: no such file"
    }
}
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
    if {$ddr} {
        lappend generics "RPL_REC_STORE=1"
    }
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

proc fail {msg} {
    error "build.tcl: $msg"
}

proc read_text {path} {
    set fh [open $path r]
    set text [read $fh]
    close $fh
    return $text
}

proc write_text {path text} {
    set fh [open $path w]
    puts -nonewline $fh $text
    close $fh
}

# 1. environment, Vivado version, reference files -----------------------------

set settings_hint "source \$SUME_FOLDER/tools/settings.sh of your NetFPGA-SUME-live checkout (with NF_PROJECT_NAME=reference_switch) first; see hw/boards/sume/README.md"
foreach var {SUME_FOLDER XILINX_PATH CONSTRAINTS NF_DESIGN_DIR} {
    if {![info exists ::env($var)] || $::env($var) eq ""} {
        fail "\$$var is not set: $settings_hint"
    }
}
set sume [file normalize $::env(SUME_FOLDER)]
set ref_design [file join $sume projects reference_switch]
set design_dir [file normalize $::env(NF_DESIGN_DIR)]
if {$design_dir ne $ref_design} {
    fail "\$NF_DESIGN_DIR is $::env(NF_DESIGN_DIR), but this flow builds on the reference_switch project and reads its files from \$NF_DESIGN_DIR (export_registers.tcl sources \$NF_DESIGN_DIR/hw/tcl/\${NF_PROJECT_NAME}_defines.tcl): set NF_PROJECT_NAME=reference_switch in \$SUME_FOLDER/tools/settings.sh and source it again, so that NF_DESIGN_DIR=$ref_design"
}
if {[info exists ::env(NF_PROJECT_NAME)] && $::env(NF_PROJECT_NAME) ne "reference_switch"} {
    fail "\$NF_PROJECT_NAME is $::env(NF_PROJECT_NAME), not reference_switch: $settings_hint"
}
foreach f {hw/Makefile hw/tcl/reference_switch.tcl hw/tcl/reference_switch_defines.tcl
           hw/tcl/export_registers.tcl hw/tcl/control_sub.tcl hw/hdl/top.v hw/hdl/nf_datapath.v
           sw/embedded/src} {
    if {![file exists [file join $design_dir $f]]} {
        fail "$design_dir/$f not found: \$SUME_FOLDER must be a NetFPGA-SUME-live checkout (the 2016.4 release) with projects/reference_switch"
    }
}
foreach f {tools/scripts/epoch.sh tools/scripts/format_coe.py run_tag.sh lib/hw} {
    if {![file exists [file join $sume $f]]} {
        fail "$sume/$f not found: \$SUME_FOLDER must be a NetFPGA-SUME-live checkout (the reference project's identifier step needs it)"
    }
}

# the Vivado version the reference block design script was written for
set required ""
regexp -line {^\s*set\s+scripts_vivado_version\s+(\S+)} \
    [read_text [file join $design_dir hw/tcl/control_sub.tcl]] -> required
if {$required eq ""} {
    fail "no 'set scripts_vivado_version' in $design_dir/hw/tcl/control_sub.tcl: not the reference project this flow knows"
}
set running [version -short]
if {[string first $required $running] != 0} {
    fail "this is Vivado $running, but the SUME reference project needs Vivado $required (its control_sub.tcl builds no block design on any other version and its IP versions are pinned): source /opt/Xilinx/Vivado/$required/settings64.sh (or your install's) and run again"
}

# 2. a private SUME tree --------------------------------------------------------

set tree [file join $out_dir sume_tree]
set work_design [file join $tree projects reference_switch]
set work [file join $work_design hw]
file delete -force $tree
file mkdir $work [file join $work_design sw embedded]
# hw/ without the products of earlier builds in the checkout
foreach entry [glob -nocomplain -directory [file join $design_dir hw] -tails *] {
    if {$entry in {project ip_repo ip_proj std .Xil} || [string match vivado* $entry]
        || [string match *.log $entry] || [string match *.jou $entry]} {
        continue
    }
    file copy [file join $design_dir hw $entry] [file join $work $entry]
}
# sw/embedded/ without an SDK workspace
foreach entry [glob -nocomplain -directory [file join $design_dir sw embedded] -tails *] {
    if {$entry eq "SDK_Workspace" || [string match *.log $entry] || [string match *.jou $entry]} {
        continue
    }
    file copy [file join $design_dir sw embedded $entry] [file join $work_design sw embedded $entry]
}
# the rest of the checkout is only read: links
foreach entry {tools lib run_tag.sh RELEASE_NOTES} {
    if {[file exists [file join $sume $entry]]} {
        file link -symbolic [file join $tree $entry] [file join $sume $entry]
    }
}
set ::env(NF_DESIGN_DIR) $work_design
set ::env(NF_PROJECT_NAME) reference_switch
puts "build.tcl: private copy of the reference project in $work_design (NF_DESIGN_DIR)"

# 3. identifier: create_ip/id_rom16x32.coe --------------------------------------

# SUME's format_coe.py is Python 2; the recipe runs `python`. When `python`
# is not Python 2 but a python2 is installed, put it first on PATH as python.
proc python_major {exe} {
    if {[catch {exec {*}$exe -c "import sys; print(sys.version_info\[0\])" 2>@1} v]} {
        return ""
    }
    return [string trim $v]
}

set coe [file join $work create_ip id_rom16x32.coe]
file delete -force $coe
set old_path $::env(PATH)
set py [auto_execok python]
set pyver [expr {$py eq "" ? "" : [python_major $py]}]
if {$pyver ne "2"} {
    foreach cand {python2 python2.7} {
        set p [auto_execok $cand]
        if {$p ne "" && [python_major $p] eq "2"} {
            set shim [file join $out_dir python2_shim]
            file delete -force $shim
            file mkdir $shim
            file link -symbolic [file join $shim python] [lindex $p 0]
            set ::env(PATH) "$shim:$old_path"
            set pyver 2
            break
        }
    }
}
set rc [catch {exec make -C $work identifier 2>@1} log]
set ::env(PATH) $old_path
puts $log
set rom_txt [file join $work rom_data.txt]
if {$rc && $pyver ne "2" && [regexp {SyntaxError} $log] && [file exists $rom_txt]
    && [llength [regexp -all -inline {[0-9A-Fa-f]+} [read_text $rom_txt]]] == 16} {
    # No Python 2 here: the recipe wrote rom_data.txt (build time, ID words,
    # release tag) and stopped at format_coe.py. Format it as that script
    # does (each word zero-padded to 8 digits, ',' after each, ';' after the
    # 16th) and finish the recipe's last two moves.
    set coe_text "memory_initialization_radix=16;\nmemory_initialization_vector=\n"
    set words [regexp -all -inline {[0-9A-Fa-f]+} [read_text $rom_txt]]
    for {set i 0} {$i < 16} {incr i} {
        append coe_text [format %08s [lindex $words $i]] [expr {$i == 15 ? ";" : ","}] "\n"
    }
    write_text $coe [string map {" " 0} $coe_text]
    file rename -force $rom_txt [file join $work create_ip rom_data.txt]
    file delete -force [file join $work format_coe.py]
    puts "build.tcl: note: SUME's format_coe.py is Python 2 and there is no Python 2 here; the recipe's rom_data.txt was formatted into create_ip/id_rom16x32.coe by build.tcl the same way"
    set rc 0
}
if {$rc} {
    set why ""
    if {$pyver ne "2" && [regexp {SyntaxError|Traceback|python: (command )?not found|No such file or directory: 'python'} $log]} {
        set why " SUME's tools/scripts/format_coe.py is Python 2 code and `python` here is [expr {$pyver eq "" ? "missing" : "Python $pyver"}]: install Python 2.7 (as python or python2)."
    }
    fail "the reference project's identifier step (make identifier in $work) failed, so there is no ID ROM image create_ip/id_rom16x32.coe.$why Output:\n[join [lrange [split $log "\n"] end-15 end] "\n"]"
}
if {![file exists $coe]} {
    fail "the identifier step (make identifier in $work) ran but did not produce create_ip/id_rom16x32.coe, the ID ROM image the identifier_ip block RAM loads; check \$SUME_FOLDER/tools/scripts/format_coe.py"
}
set words [regexp -all -inline {[0-9A-Fa-f]{8}[,;]} [read_text $coe]]
if {[llength $words] != 16} {
    fail "$coe holds [llength $words] words, not the 16 of the ID ROM"
}
file copy -force $coe [file join $out_dir id_rom16x32.coe]
puts "build.tcl: identifier ROM image $coe"

# 4. the patched project ---------------------------------------------------------

# top.v: instantiate nf_nrl_top (same ports and parameters as nf_datapath)
set top_v [read_text [file join $work hdl top.v]]
set extra_params [expr {$ddr ? "\n    .RPL_REC_STORE(1)," : ""}]
foreach kv $params {
    regexp {^([^=]+)=(.*)$} $kv -> k v
    append extra_params "\n    .$k\($v\),"
}
set n [regsub {\mnf_datapath(\s*)#(\s*)\(} $top_v "nf_nrl_top\\1#\\2(\n    .BUILD_HASH(32'h$hash),$extra_params" top_v]
if {$n != 1} {
    fail "expected one 'nf_datapath #(' instance in $design_dir/hw/hdl/top.v, found $n"
}
if {$ddr} {
    source [file join $script_dir ddr_top.tcl]
    if {[catch {ddr_patch_top $top_v} top_v]} {
        fail "--ddr: cannot patch $design_dir/hw/hdl/top.v: $top_v"
    }
    source [file join $script_dir mig_prj.tcl]
    set fh [open $mig_prj r]
    set prj_text [read $fh]
    close $fh
    if {[catch {mig_prj_derive $prj_text} prj_text]} {
        fail "--ddr: $mig_prj: $prj_text"
    }
    set ::nrl_mig_prj [file join $work create_ip nrl_mig.prj]
    set fh [open $::nrl_mig_prj w]
    puts -nonewline $fh $prj_text
    close $fh
    set ::nrl_ddr_v [file join $script_dir nf_nrl_ddr.v]
    set ::nrl_ddr_xdc [file join $script_dir nrl_ddr.xdc]
    set ::nrl_axi_addr_width 32
    set ::nrl_axi_id_width 1
    puts "build.tcl: --ddr: top.v gets the DDR3 pins and nf_nrl_ddr; MIG project $mig_prj"
}
write_text [file join $work hdl top.v] $top_v

# several jobs: their register pages need 64 KB of address map, the reference gives 4 KB;
# every reader of the defines (control_sub.tcl, export_registers.tcl, mb_regs.tcl) sources
# the copy's defines file, so the window is widened at its end
if {$switch_jobs > 1} {
    set defines_tcl [file join $work tcl reference_switch_defines.tcl]
    set fh [open $defines_tcl a]
    puts $fh "\n# netfpga-rl: JOBS = $switch_jobs, the switch's register window widened to 64 KB"
    puts $fh "source \"[file join $script_dir jobs_window.tcl]\""
    close $fh
    puts "build.tcl: JOBS = $switch_jobs: the switch's register window (M01) widened to 64 KB in $defines_tcl"
}

# the project script: our sources instead of nf_datapath.v, no exit at the end
set proj_tcl [read_text [file join $work tcl reference_switch.tcl]]
foreach {what re} {
    "source of the defines" {source\s+\./tcl/\$::env\(NF_PROJECT_NAME\)_defines\.tcl}
    "source of export_registers.tcl" {source\s+\./tcl/export_registers\.tcl}
    "source of control_sub.tcl" {source\s+\./tcl/control_sub\.tcl}
    "identifier_ip with id_rom16x32.coe" {identifier_ip[^\n]*\n[^\n]*Coe_File[^\n]*id_rom16x32\.coe}
} {
    if {![regexp $re $proj_tcl]} {
        fail "no $what in $design_dir/hw/tcl/reference_switch.tcl: not the reference project this flow knows"
    }
}
set reads "set_property include_dirs [list [list $rtl_dir]] \[current_fileset\]\n"
foreach f $sources {
    append reads "read_verilog \"$f\"\n"
}
set n [regsub {read_verilog\s+"?\./hdl/nf_datapath\.v"?\s*\n} $proj_tcl $reads proj_tcl]
if {$n != 1} {
    fail "expected one read_verilog of hdl/nf_datapath.v in reference_switch.tcl, found $n"
}
if {$mb_regs} {
    set n [regsub {(source\s+\./tcl/control_sub\.tcl[^\n]*\n)} $proj_tcl \
        "\\1source \"[file join $script_dir mb_regs.tcl]\"\n" proj_tcl]
    if {$n != 1} {
        fail "expected one source of control_sub.tcl in reference_switch.tcl for --mb-regs, found $n"
    }
}
if {$ddr} {
    set n [regsub {(source\s+\./tcl/control_sub\.tcl[^\n]*\n)} $proj_tcl \
        "\\1source \"[file join $script_dir mig.tcl]\"\n" proj_tcl]
    if {$n != 1} {
        fail "expected one source of control_sub.tcl in reference_switch.tcl for --ddr, found $n"
    }
}
regsub -all -line {^\s*exit\s*$} $proj_tcl "" proj_tcl
# the reference script synthesizes twice: its own run `synth` (create_run,
# launch_runs synth) and then synth_1, which impl_1 depends on; keep synth_1
set n [regsub -all -line {^[ \t]*(create_run[ \t].*|launch_runs[ \t]+synth[ \t]*|wait_on_run[ \t]+synth[ \t]*)$} \
    $proj_tcl "# netfpga-rl: removed (duplicate synthesis run): &" proj_tcl]
if {$n != 4} {
    fail "expected the reference script's 4 lines of its extra synthesis run (create_run synth, create_run impl, launch_runs synth, wait_on_run synth) in reference_switch.tcl, found $n"
}
regsub -all -line {^\s*(launch_runs\s+\S+)} $proj_tcl "\\1 -jobs $jobs" proj_tcl
write_text [file join $work tcl nrl_reference_switch.tcl] $proj_tcl

# the reference script uses paths relative to its hw folder
set old_dir [pwd]
cd $work
if {[catch {source [file join $work tcl nrl_reference_switch.tcl]} err]} {
    cd $old_dir
    fail "the reference project script failed: $err"
}
set header [file join $work_design sw embedded src sume_register_defines.h]
if {![file exists $header]} {
    cd $old_dir
    fail "export_registers.tcl wrote no $header"
}
set bd_file [get_files -quiet -regexp -nocase {.*sub*.bd}]
if {[llength $bd_file] != 1} {
    cd $old_dir
    fail "the block design control_sub is missing from the project (control_sub.tcl returned early?); see vivado.log"
}

set impl [get_runs impl_1]
if {[get_property PROGRESS $impl] ne "100%"} {
    cd $old_dir
    fail "implementation did not complete; see $work/project/*.runs/impl_1/runme.log"
}
set impl_dir [get_property DIRECTORY $impl]

# 5. hardware export and firmware -----------------------------------------------

set sysdef [file join $impl_dir top.sysdef]
set hdf [file join $work_design sw embedded reference_switch.hdf]
if {![file exists $sysdef]} {
    cd $old_dir
    fail "no hardware export $sysdef after implementation (the MicroBlaze firmware needs it)"
}
file copy -force $sysdef $hdf
file copy -force $hdf [file join $out_dir reference_switch.hdf]

# Is `path` an ELF32 executable for MicroBlaze (e_machine 189, or the old 0xBAAB)?
proc check_elf {path} {
    set fh [open $path rb]
    set head [read $fh 20]
    close $fh
    if {[string length $head] < 20 || [string range $head 0 3] ne "\x7fELF"} {
        return "not an ELF file"
    }
    binary scan $head @4cc class data
    set fmt [expr {$data == 2 ? "S" : "s"}]
    binary scan $head @18$fmt machine
    set machine [expr {$machine & 0xFFFF}]
    if {$class != 1 || $machine ni {189 47787}} {
        return "an ELF for machine $machine (class $class), not a 32-bit MicroBlaze executable"
    }
    return ""
}

if {$elf_opt ne ""} {
    set elf_src [file normalize $elf_opt]
    if {![file isfile $elf_src]} {
        cd $old_dir
        fail "--elf $elf_opt: no such file"
    }
} else {
    set fw [file normalize $firmware_dir]
    if {![file exists [file join $fw Makefile]]} {
        cd $old_dir
        fail "no firmware Makefile in $fw: the MicroBlaze application (app.elf) cannot be built; pass --elf FILE"
    }
    set fw_build [file join $out_dir firmware]
    set make_cmd [list make -C $fw app.elf SUME_HW_EXPORT=$hdf BUILD_DIR=$fw_build]
    puts "build.tcl: $make_cmd"
    if {[catch {exec {*}$make_cmd 2>@1} log]} {
        cd $old_dir
        fail "building the MicroBlaze firmware failed ($make_cmd); it needs the Xilinx SDK 2016.4 toolchain (mb-gcc and xsdk: source <Xilinx>/SDK/2016.4/settings64.sh), or pass --elf FILE. Output:\n[join [lrange [split $log "\n"] end-15 end] "\n"]"
    }
    puts $log
    set elf_src [file join $fw_build app.elf]
    if {![file isfile $elf_src]} {
        cd $old_dir
        fail "make -C $fw app.elf succeeded but left no $elf_src"
    }
}
set why [check_elf $elf_src]
if {$why ne ""} {
    cd $old_dir
    fail "$elf_src is $why"
}
set elf [file join $out_dir app.elf]
if {$elf_src ne $elf} {
    file copy -force $elf_src $elf
}

# 6. the ELF into the MicroBlaze's block RAM of the finished bitstream --------------
#
# No second place and route (the reference load_elf.tcl associates the ELF and
# reruns the implementation): the routed design's memory map (write_mem_info,
# .mmi) tells updatemem which block RAMs hold the MicroBlaze's memory, and
# updatemem writes the ELF into a copy of impl_1's bitstream.

open_run $impl
set mmi [file join $out_dir nf_nrl.mmi]
write_mem_info -force $mmi
if {![file exists $mmi]} {
    cd $old_dir
    fail "write_mem_info wrote no $mmi"
}
set procs [regexp -all -inline {InstPath="([^"]*microblaze_0)"} [read_text $mmi]]
if {[llength $procs] != 2} {
    cd $old_dir
    fail "$mmi names [expr {[llength $procs] / 2}] MicroBlaze processors (InstPath ending in microblaze_0), not one"
}
set mb_inst [lindex $procs 1]
set base_bit [file join $impl_dir top.bit]
if {![file exists $base_bit]} {
    cd $old_dir
    fail "no bitstream $base_bit after implementation (the run's write_bitstream step)"
}
set bit [file join $out_dir nf_nrl.bit]
file delete -force $bit
set um_args [list -force -meminfo $mmi -data $elf -bit $base_bit -proc $mb_inst -out $bit]
puts "build.tcl: updatemem $um_args"
if {[llength [info commands updatemem]]} {
    set rc [catch {updatemem {*}$um_args} log]
} elseif {[auto_execok updatemem] ne ""} {
    set rc [catch {exec {*}[auto_execok updatemem] {*}$um_args 2>@1} log]
} else {
    set rc 1
    set log "updatemem not found on PATH (it comes with Vivado: source settings64.sh)"
}
if {$rc || ![file exists $bit]} {
    cd $old_dir
    fail "updatemem could not put $elf into $base_bit: $log"
}
puts $log
set wns [write_reports $out_dir full]
cd $old_dir
if {$wns < 0} {
    puts "build.tcl: WARNING: timing not met (WNS $wns ns); the bitstream may not work"
}
puts "build.tcl: bitstream $bit (firmware $elf written into $mb_inst's block RAM by updatemem, memory map $mmi, ID ROM $out_dir/id_rom16x32.coe)"
