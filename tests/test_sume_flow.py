"""The SUME board flow without Vivado or a board.

* ``hw/boards/sume/build.tcl --flow full`` runs under plain tclsh with the
  Vivado commands stubbed, on a stand-in NetFPGA-SUME-live tree
  (``tests/fixtures/sume_ref``) whose files follow the real 2016.4-era
  reference_switch project: its defines, ``export_registers.tcl``,
  ``control_sub.tcl`` (version guard, MicroBlaze), the ``identifier`` target
  of its ``hw/Makefile`` and the ELF step of ``load_elf.tcl``. The happy path
  runs the identifier and ELF steps and leaves the SUME checkout untouched;
  a missing or wrong ``NF_DESIGN_DIR``, another Vivado version, a missing
  ``.coe`` and a missing or wrong ELF each stop with a clear error;
* ``scripts/sume_flash.sh`` and ``rwaxi``: ``tests/test_sume_flash.py``.

A missing tclsh or make skips the Tcl tests (tests/toolcheck.py), or fails
them under CI.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from toolcheck import require_tool  # noqa: E402

from sim.common.runner import read_filelist  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SUME = REPO / "hw" / "boards" / "sume"
BUILD_TCL = SUME / "build.tcl"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

# Vivado commands, stubbed; calls of interest are logged to ::steps in order.
VIVADO_STUBS = r"""
set ::steps {}
set ::files {}
set ::bd ""
proc step {args} { lappend ::steps $args }
proc version {args} {
    if {[info exists ::env(FAKE_VIVADO_VERSION)]} { return $::env(FAKE_VIVADO_VERSION) }
    return 2016.4
}
foreach c {create_project current_project current_fileset create_fileset update_ip_catalog
           reset_target save_bd_design create_run wait_on_run
           get_drc_checks write_checkpoint report_timing_summary report_utilization
           report_clock_utilization open_run} {
    proc $c {args} {}
}
foreach c {create_ip read_verilog launch_runs reset_run open_bd_design create_bd_addr_seg
           current_bd_instance create_bd_intf_pin create_bd_pin connect_bd_intf_net
           connect_bd_net validate_bd_design} {
    proc $c {args} "step $c {*}\$args"
}
# block design cells and their CONFIG properties
array set ::cellprop {}
proc create_bd_cell {args} {
    set c [lindex $args end]
    set ::cellprop($c,) 1
    if {[string match *:axi_interconnect:* $args]} {  # the IP's defaults
        array set ::cellprop [list $c,CONFIG.NUM_SI 1 $c,CONFIG.NUM_MI 2]
    }
    step create_bd_cell {*}$args
    return $c
}
proc get_bd_cells {args} {
    set c [string trimleft [lindex $args end] /]
    return [expr {[info exists ::cellprop($c,)] ? $c : ""}]
}
proc get_bd_pins {p} { return $p }
proc get_bd_intf_pins {p} { return $p }
proc get_runs {name} { return $name }
proc get_ips {name} { return $name }
proc get_fileset {name} { return $name }
proc get_bd_addr_spaces {p} { return $p }
proc get_bd_addr_segs {p} { return $p }
proc get_timing_paths {args} { return path }
proc set_property {args} {
    set args [lsearch -all -inline -not -exact $args -quiet]
    if {[lindex $args 0] eq "-dict" && [info exists ::cellprop([lindex $args end],)]} {
        foreach {k v} [lindex $args 1] { set ::cellprop([lindex $args end],$k) $v }
    }
    step set_property {*}$args
}
proc add_files {args} { lappend ::files [lindex $args end]; step add_files [lindex $args end] }
proc create_bd_design {name} { set ::bd $name; lappend ::files $name.bd; step create_bd_design $name }
proc current_bd_design {args} { return $::bd }
proc get_files {args} {
    set pat [lindex $args end]
    if {"-of_objects" in $args} { return $pat }
    if {"-regexp" in $args} { return [lsearch -all -inline -regexp -nocase $::files $pat] }
    set out {}
    foreach f $::files { if {[file tail $f] eq $pat} { lappend out $f } }
    return $out
}
# Vivado fails here when the IP's Coe_File (create_ip/id_rom16x32.coe) is missing
proc generate_target {what ip} {
    if {$ip eq "identifier_ip" && ![file exists ./create_ip/id_rom16x32.coe]} {
        error "\[IP_Flow 19-3478\] Coe file create_ip/id_rom16x32.coe does not exist"
    }
    step generate_target $ip
}
proc get_property {name args} {
    if {[info exists ::cellprop([lindex $args end],$name)]} { return $::cellprop([lindex $args end],$name) }
    switch -- $name {
        SLACK { return 0.125 }
        PROGRESS { return 100% }
        DIRECTORY { return $::env(FAKE_RUN_DIR) }
    }
    return ""
}
proc write_mem_info {args} {
    set fh [open [lindex $args end] w]
    puts $fh {<MemInfo Version="1" Minor="0">
  <Processor Endianness="Little" InstPath="control_sub_i/nf_mbsys/mbsys/microblaze_0">
  </Processor>
</MemInfo>}
    close $fh
    step write_mem_info {*}$args
}
proc updatemem {args} {
    array set a [lsearch -all -inline -not -exact $args -force]
    set fh [open $a(-out) w]
    puts -nonewline $fh "bitstream [file tail $a(-bit)] with $a(-data)"
    close $fh
    step updatemem {*}$args
    return "updatemem: done"
}
proc write_bitstream {args} {
    set elfs [lsearch -all -inline -glob $::files *.elf]
    set fh [open [lindex $args end] w]
    puts -nonewline $fh "bitstream with $elfs"
    close $fh
    step write_bitstream {*}$args
}
"""


def tree_listing(root: Path) -> dict[str, tuple[bool, int, int]]:
    """Every path under root: (is a link, size, mtime in ns), without following links."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st = p.lstat()
            out[str(p.relative_to(root))] = (p.is_symlink(), st.st_size, st.st_mtime_ns)
    return out


class Flow:
    """A copy of the stand-in SUME tree and firmware folder, and build.tcl runs on them."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.sume = tmp / "NetFPGA-SUME-live"
        shutil.copytree(FIXTURES / "sume_ref", self.sume, symlinks=True)
        self.firmware = tmp / "firmware"
        shutil.copytree(FIXTURES / "sume_fw", self.firmware)
        self.run_dir = tmp / "runs" / "impl_1"
        self.run_dir.mkdir(parents=True)
        (self.run_dir / "top.sysdef").write_bytes(b"hardware export")
        (self.run_dir / "top.bit").write_bytes(b"bitstream of impl_1")
        self.out = tmp / "out"
        self.bin = tmp / "bin"  # `python` for the identifier recipe
        self.bin.mkdir()
        (self.bin / "python").symlink_to(sys.executable)
        self.design = self.sume / "projects" / "reference_switch"
        self.stubs = VIVADO_STUBS
        self.env = {
            "SUME_FOLDER": str(self.sume),
            "XILINX_PATH": str(tmp / "Xilinx" / "Vivado" / "2016.4"),
            "CONSTRAINTS": str(self.sume / "lib" / "hw" / "std" / "constraints"),
            "NF_PROJECT_NAME": "reference_switch",
            "NF_DESIGN_DIR": str(self.design),
            "FAKE_RUN_DIR": str(self.run_dir),
            "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}",
        }

    def run(self, *args: str, **env: str | None) -> subprocess.CompletedProcess[str]:
        full_env = {**os.environ, **self.env}
        full_env.pop("FAKE_VIVADO_VERSION", None)
        for k, v in env.items():
            if v is None:
                full_env.pop(k, None)
            else:
                full_env[k] = v
        argv = ["--flow", "full", "--out", str(self.out), "--jobs", "2", *args]
        driver = self.tmp / "driver.tcl"
        driver.write_text(self.stubs + f"set ::argv {{{' '.join(argv)}}}\n"
                          f"source {{{BUILD_TCL}}}\n"
                          "foreach s $::steps { puts \"STEP $s\" }\n")
        return subprocess.run(["tclsh", str(driver)], capture_output=True, text=True,
                              cwd=self.tmp, env=full_env, timeout=120)


def steps(r: subprocess.CompletedProcess[str]) -> list[str]:
    return [ln[5:] for ln in r.stdout.splitlines() if ln.startswith("STEP ")]


@pytest.fixture
def flow(tmp_path: Path) -> Flow:
    require_tool("tclsh", "the build.tcl dry run")
    require_tool("make", "the reference project's identifier step in the build.tcl dry run")
    return Flow(tmp_path)


def wrapper_sources() -> list[Path]:
    return read_filelist(REPO / "hw" / "rtl" / "nrl_switch.f") + read_filelist(SUME / "nf_nrl_top.f")


def test_full_flow_dry_run(flow: Flow) -> None:
    before = tree_listing(flow.sume)
    for attempt in range(2):  # a second build into the same folder starts afresh
        r = flow.run("--firmware", str(flow.firmware))
        assert r.returncode == 0, r.stdout + r.stderr
        assert tree_listing(flow.sume) == before, f"run {attempt} wrote into the SUME checkout"
    out = flow.out
    work_design = out / "sume_tree" / "projects" / "reference_switch"
    work = work_design / "hw"
    s = steps(r)

    # identifier: the reference Makefile's recipe made the ROM image in the copy
    coe = (work / "create_ip" / "id_rom16x32.coe").read_text()
    words = re.findall(r"([0-9A-Fa-f]{8})[,;]", coe)
    assert len(words) == 16 and words[2:6] == ["16028002", "00000180", "00000204", "0000FFFF"], coe
    assert (out / "id_rom16x32.coe").read_text() == coe
    assert "generate_target identifier_ip" in s

    # export_registers.tcl wrote its header into the copy (NF_DESIGN_DIR), from the copy's defines
    header = (work_design / "sw" / "embedded" / "src" / "sume_register_defines.h").read_text()
    assert "#define SUME_INPUT_ARBITER_BASEADDR 0x44010000" in header
    assert "#define SUME_INPUT_ARBITER_0_ID_OFFSET 0x0" in header

    # control_sub.tcl ran (version guard passed): the MicroBlaze the ELF goes to exists
    assert "create_bd_design control_sub" in s
    assert any(x.startswith("create_bd_cell") and x.endswith("nf_mbsys/mbsys/microblaze_0") for x in s)

    # the firmware: make app.elf with the hardware export of this build
    hdf = work_design / "sw" / "embedded" / "reference_switch.hdf"
    assert hdf.read_bytes() == b"hardware export"
    assert (out / "firmware" / "app.elf.hw_export").read_text().strip() == str(hdf)
    elf = out / "app.elf"
    assert elf.read_bytes() == (out / "firmware" / "app.elf").read_bytes()
    assert not (flow.firmware / "app.elf").exists()  # BUILD_DIR: nothing built in the source folder

    # the ELF into the finished bitstream: write_mem_info, updatemem; one implementation only
    mmi = out / "nf_nrl.mmi"
    i_mmi = s.index(f"write_mem_info -force {mmi}")
    i_um = s.index(f"updatemem -force -meminfo {mmi} -data {elf} -bit {flow.run_dir / 'top.bit'} "
                   f"-proc control_sub_i/nf_mbsys/mbsys/microblaze_0 -out {out / 'nf_nrl.bit'}")
    assert s.index("launch_runs impl_1 -jobs 2 -to_step write_bitstream") < i_mmi < i_um
    assert (out / "nf_nrl.bit").read_text() == f"bitstream top.bit with {elf}"
    assert [x for x in s if x.startswith("launch_runs")] == ["launch_runs impl_1 -jobs 2 -to_step write_bitstream"]
    assert not any(x.startswith(("reset_run", "write_bitstream", "add_files")) and "elf" in x.lower() for x in s)
    assert not any(x.startswith("reset_run") for x in s)
    # the reference script's duplicate synthesis run is gone (impl_1 runs synth_1)
    proj_text = (work / "tcl" / "nrl_reference_switch.tcl").read_text()
    assert not re.search(r"^[ \t]*(create_run|launch_runs[ \t]+synth\b|wait_on_run[ \t]+synth\b)", proj_text, re.M)
    assert len(re.findall(r"^# netfpga-rl: removed \(duplicate synthesis run\)", proj_text, re.M)) == 4

    # the datapath swap, as before
    top = (work / "hdl" / "top.v").read_text()
    assert re.search(r"nf_nrl_top\s*#\(\s*\n\s*\.BUILD_HASH\(32'h[0-9a-f]{8}\),", top), top
    assert "nf_datapath" not in top.split("nf_nrl_top")[0]
    proj = (work / "tcl" / "nrl_reference_switch.tcl").read_text()
    assert "nf_datapath.v" not in proj and not re.search(r"^\s*exit\s*$", proj, re.M)
    reads = [x.split(" ", 1)[1] for x in s if x.startswith("read_verilog")]
    assert reads == ["./hdl/axi_clocking.v", *map(str, wrapper_sources()), "./hdl/top.v"]


def test_full_flow_mb_regs(flow: Flow) -> None:
    """--mb-regs: mb_regs.tcl runs right after control_sub.tcl and maps M01 into microblaze_0/Data."""
    r = flow.run("--firmware", str(flow.firmware))
    assert r.returncode == 0, r.stdout + r.stderr
    assert not any("SEG_nrl_M01_AXI_Reg" in x for x in steps(r))  # off by default
    r = flow.run("--firmware", str(flow.firmware), "--mb-regs")
    assert r.returncode == 0, r.stdout + r.stderr
    s = steps(r)
    defines = flow.tmp / "defines.tcl"
    defines.write_text(f"source {{{flow.design / 'hw' / 'tcl' / 'reference_switch_defines.tcl'}}}\n"
                       "puts \"$M01_BASEADDR $M01_SIZEADDR\"\n")
    base, size = subprocess.run(["tclsh", str(defines)], capture_output=True, text=True,
                                check=True).stdout.split()
    seg = [x for x in s if x.startswith("create_bd_addr_seg") and "SEG_nrl_M01_AXI_Reg" in x]
    assert seg == [f"create_bd_addr_seg -range {size} -offset {base} nf_mbsys/mbsys/microblaze_0/Data "
                   "M01_AXI/Reg SEG_nrl_M01_AXI_Reg"], seg
    i_seg = s.index(seg[0])
    assert s.index("create_bd_design control_sub") < i_seg < s.index("launch_runs impl_1 -jobs 2 -to_step write_bitstream")
    assert "set_property -dict {CONFIG.NUM_MI 4} nf_mbsys/mbsys/microblaze_0_axi_periph" in s
    assert "set_property -dict {CONFIG.NUM_SI 2 CONFIG.S01_HAS_REGSLICE 3} dma_sub/axi_interconnect_0" in s
    assert "connect_bd_intf_net nf_mbsys/M_AXI_NRL dma_sub/S01_AXI" in s
    assert "validate_bd_design" in s
    proj = (flow.out / "sume_tree" / "projects" / "reference_switch" / "hw" / "tcl"
            / "nrl_reference_switch.tcl").read_text()
    assert re.search(r"source \./tcl/control_sub\.tcl\nsource \"\S+/hw/boards/sume/mb_regs\.tcl\"", proj)


def test_full_flow_with_given_elf(flow: Flow) -> None:
    elf = flow.tmp / "prebuilt.elf"
    elf.write_bytes(b"\x7fELF\x01\x01\x01" + bytes(9) + b"\x02\x00\xbd\x00")
    r = flow.run("--elf", str(elf), "--firmware", str(flow.tmp / "nowhere"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (flow.out / "app.elf").read_bytes() == elf.read_bytes()
    assert any(x.startswith("updatemem") and f"-data {flow.out / 'app.elf'}" in x for x in steps(r))


def test_identifier_without_python2(flow: Flow) -> None:
    """SUME's format_coe.py is Python 2; without one the flow formats the recipe's rom_data.txt."""
    _break_format_coe(flow, "print 'this is Python 2 code, as in NetFPGA-SUME-live'\n")
    r = flow.run("--firmware", str(flow.firmware))
    assert r.returncode == 0, r.stdout + r.stderr
    # bin/python is this Python 3; build.tcl puts a python2, if there is one, first on PATH
    assert ("format_coe.py is Python 2 and there is no Python 2 here" in r.stdout
            or shutil.which("python2") or shutil.which("python2.7")), r.stdout
    coe = (flow.out / "id_rom16x32.coe").read_text().splitlines()
    assert coe[:2] == ["memory_initialization_radix=16;", "memory_initialization_vector="]
    words = coe[2:]
    assert len(words) == 16 and all(re.fullmatch(r"[0-9A-Fa-f]{8},", w) for w in words[:15])
    assert words[2:6] == ["16028002,", "00000180,", "00000204,", "0000FFFF,"] and words[15] == "FFFF0000;"


def test_sume_build_dry_run(flow: Flow) -> None:
    """scripts/sume_build.sh --dry-run: build.tcl under tclsh with hw/boards/sume/dryrun.tcl's stubs."""
    before = tree_listing(flow.sume)
    env = {**os.environ, **flow.env}
    env.pop("FAKE_RUN_DIR")
    r = subprocess.run(["bash", str(REPO / "scripts" / "sume_build.sh"), "--dry-run", "--flow", "full",
                        "--out", str(flow.out), "--firmware", str(flow.firmware), "--mb-regs"],
                       capture_output=True, text=True, env=env, cwd=flow.tmp, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "dry run complete" in r.stdout
    assert (flow.out / "nf_nrl.bit").read_text().startswith("netfpga-rl dry run: not a bitstream")
    assert (flow.out / "id_rom16x32.coe").exists() and (flow.out / "app.elf").exists()
    assert tree_listing(flow.sume) == before
    r = subprocess.run(["bash", str(REPO / "scripts" / "sume_build.sh"), "--dry-run", "--flow", "full",
                        "--out", str(flow.out), "--firmware", str(flow.firmware)],
                       capture_output=True, text=True, env={**env, "NRL_DRYRUN_VIVADO_VERSION": "2018.2"},
                       cwd=flow.tmp, timeout=120)
    assert r.returncode != 0 and "needs Vivado 2016.4" in r.stderr, r.stdout + r.stderr


# a top.v closer to the reference one: ANSI ports, the datapath on the 200 MHz clock
DDR_TOP_V = """// Stand-in for the reference top.v (ANSI ports, datapath clock and reset)
module top #(
    parameter C_DATA_WIDTH = 256
) (
    input  wire fpga_sysclk_p,
    input  wire fpga_sysclk_n,
    output wire led
);
  wire clk_200;
  wire sys_rst_n_c;
  assign led = 1'b0;
  nf_datapath
  #(
      .C_M_AXIS_DATA_WIDTH (C_DATA_WIDTH),
      .C_S_AXIS_DATA_WIDTH (C_DATA_WIDTH)
  )
  nf_datapath_0 (
      .axis_aclk (clk_200),
      .axis_resetn (sys_rst_n_c),
      .axi_aclk (clk_200),
      .axi_resetn (sys_rst_n_c)
  );
endmodule
"""


def ip_stubs(wrapper: Path) -> str:
    """Verilog stand-ins for the Vivado IPs nf_nrl_ddr.v instantiates: every port it connects,
    inputs 1024 bits wide, so Icarus checks the port names the wrapper uses."""
    text = wrapper.read_text()
    out = []
    for mod in ("nrl_rpl_axi_cc", "nrl_mig"):
        body = text.split(f"\n{mod}\n", 1)[1].split(");", 1)[0]
        ports = re.findall(r"\.(\w+)\(", body)
        out.append(f"module {mod}({', '.join(ports)});\n"
                   + "".join(f"  input [1023:0] {p};\n" for p in ports) + "endmodule\n")
    return "".join(out)


IBUFDS_STUB = """module IBUFDS #(parameter DIFF_TERM = "FALSE", parameter IBUF_LOW_PWR = "TRUE")
  (input I, input IB, output O);
  assign O = I;
endmodule
"""


def test_full_flow_ddr(flow: Flow) -> None:
    """--ddr: the MIG project derived from SUME's nf_sume_ddr3A.prj (512-bit AXI, 1-bit ID),
    mig.tcl after control_sub.tcl, nrl_ddr.xdc (pins, period, BACKBONE) added, the DDR3 pins
    and nf_nrl_ddr in top.v with clk_ref_i on the 200 MHz clock and the MIG's reset active
    high; the patched top.v elaborates on Icarus with the IPs stubbed."""
    (flow.design / "hw" / "hdl" / "top.v").write_text(DDR_TOP_V)
    r = flow.run("--firmware", str(flow.firmware), "--ddr")
    assert r.returncode == 0, r.stdout + r.stderr
    s = steps(r)
    work = flow.out / "sume_tree" / "projects" / "reference_switch" / "hw"
    prj = (work / "create_ip" / "nrl_mig.prj").read_text()
    ref = (flow.sume / "projects" / "acceptance_test" / "hw" / "xml" / "nf_sume_ddr3A.prj").read_text()
    for name, value in [("ModuleName", "nrl_mig"), ("C0_S_AXI_DATA_WIDTH", "512"),
                        ("C0_S_AXI_ID_WIDTH", "1"), ("C0_S_AXI_ADDR_WIDTH", "32"),
                        ("SystemClock", "No Buffer"), ("ReferenceClock", "No Buffer"),
                        ("SysResetPolarity", "ACTIVE HIGH"), ("InputClkFreq", "233.1")]:
        assert f"<{name}>{value}</{name}>" in prj, name
    # everything else as in SUME's file
    strip = r"<(ModuleName|C0_S_AXI_DATA_WIDTH|C0_S_AXI_ID_WIDTH)>[^<]*<"
    assert re.sub(strip, "", prj) == re.sub(strip, "", ref)
    i_mig = s.index("create_ip -name mig_7series -vendor xilinx.com -library ip -module_name nrl_mig")
    i_cc = s.index("create_ip -name axi_clock_converter -vendor xilinx.com -library ip "
                   "-module_name nrl_rpl_axi_cc")
    assert any("CONFIG.XML_INPUT_FILE nrl_mig.prj" in x for x in s)
    assert any("CONFIG.DATA_WIDTH 512" in x and "CONFIG.ACLK_ASYNC 1" in x for x in s)
    i_ddr_v = s.index(f"read_verilog {SUME / 'nf_nrl_ddr.v'}")
    i_xdc = s.index(f"add_files {SUME / 'nrl_ddr.xdc'}")
    assert (s.index("create_bd_design control_sub") < i_mig < i_cc < i_ddr_v < i_xdc
            < s.index("launch_runs impl_1 -jobs 2 -to_step write_bitstream"))
    assert {"generate_target nrl_mig", "generate_target nrl_rpl_axi_cc"} <= set(s)
    xdc = (SUME / "nrl_ddr.xdc").read_text()
    assert re.search(r"^set_property CLOCK_DEDICATED_ROUTE BACKBONE \[get_nets .*nrl_ddr_inst/sys_clk_ibufds/O",
                     xdc, re.M)
    assert "PACKAGE_PIN E34 [get_ports sys_clk_p]" in xdc and "-period 4.288 [get_ports sys_clk_p]" in xdc
    proj = (work / "tcl" / "nrl_reference_switch.tcl").read_text()
    assert re.search(r"source \./tcl/control_sub\.tcl\nsource \"\S+/hw/boards/sume/mig\.tcl\"", proj)
    top = (work / "hdl" / "top.v").read_text()
    assert re.search(r"nf_nrl_top\s*#\(\s*\n\s*\.BUILD_HASH\(32'h[0-9a-f]{8}\),\s*\.RPL_REC_STORE\(1\),", top)
    assert ".axis_aclk(clk_200)" in top and ".sys_rst_n(sys_rst_n_c)" in top
    assert ".clk_ref_i(clk_200)" in top  # the IDELAY reference: the 200 MHz clock top.v has
    wrapper = (SUME / "nf_nrl_ddr.v").read_text()
    mig = wrapper.split("\nnrl_mig\n", 1)[1].split(");", 1)[0]
    assert ".sys_clk_i(sys_clk_i)" in mig and ".clk_ref_i(clk_ref_i)" in mig
    assert ".sys_rst(!sys_rst_n)" in mig  # active high, from the board's active-low reset
    assert "sys_clk_p" not in mig
    # the patched top elaborates with the real wrappers and the IPs stubbed
    iverilog = require_tool("iverilog", "elaborating the --ddr top.v")
    stubs = flow.tmp / "ip_stubs.v"
    stubs.write_text(ip_stubs(SUME / "nf_nrl_ddr.v") + IBUFDS_STUB)
    srcs = [str(x) for x in wrapper_sources()]
    e = subprocess.run([iverilog, "-g2005", "-o", os.devnull, f"-I{REPO / 'hw' / 'rtl'}", "-s", "top",
                        str(work / "hdl" / "top.v"), str(SUME / "nf_nrl_ddr.v"), str(stubs), *srcs],
                       capture_output=True, text=True, timeout=300)
    assert e.returncode == 0, e.stdout + e.stderr
    # the same under sume_build.sh --dry-run (hw/boards/sume/dryrun.tcl), with --mig-prj
    given = flow.tmp / "sodimm.prj"
    given.write_text(ref)
    env = {**os.environ, **flow.env}
    env.pop("FAKE_RUN_DIR")
    r = subprocess.run(["bash", str(REPO / "scripts" / "sume_build.sh"), "--dry-run", "--flow", "full",
                        "--out", str(flow.tmp / "dry"), "--firmware", str(flow.firmware), "--ddr",
                        "--mig-prj", str(given)], capture_output=True, text=True, env=env, cwd=flow.tmp,
                       timeout=120)
    assert r.returncode == 0 and "dry run complete" in r.stdout, r.stdout + r.stderr
    assert "mig.tcl: nrl_mig (from nrl_mig.prj), nrl_rpl_axi_cc, nf_nrl_ddr and nrl_ddr.xdc added" in r.stdout


def test_full_flow_jobs(flow: Flow) -> None:
    """--param JOBS=4: the nf_nrl_top instance gets JOBS and the switch's register window (M01) is
    64 KB for every reader of the copy's defines (control_sub.tcl's address segment,
    export_registers.tcl's header, mb_regs.tcl's segment), 4 KB without; with --ddr too, the
    patched top.v (four jobs, records in DDR3) elaborates on Icarus with the IPs stubbed."""
    def segments(r: subprocess.CompletedProcess[str]) -> list[str]:
        return [x for x in steps(r) if x.startswith("create_bd_addr_seg") and "M01_AXI/Reg" in x]

    r = flow.run("--firmware", str(flow.firmware), "--mb-regs")
    assert r.returncode == 0, r.stdout + r.stderr
    assert {x.split()[2] for x in segments(r)} == {"0x1000"}, segments(r)
    (flow.design / "hw" / "hdl" / "top.v").write_text(DDR_TOP_V)
    before = tree_listing(flow.sume)
    r = flow.run("--firmware", str(flow.firmware), "--mb-regs", "--ddr", "--param", "JOBS=4")
    assert r.returncode == 0, r.stdout + r.stderr
    assert tree_listing(flow.sume) == before  # the copy's defines changed, not the checkout's
    assert segments(r) == [
        "create_bd_addr_seg -range 0x10000 -offset 0x44010000 dma_sub/nf_riffa_dma_1/m_axi_lite "
        "M01_AXI/Reg SEG_M01_AXI_Reg",
        "create_bd_addr_seg -range 0x10000 -offset 0x44010000 nf_mbsys/mbsys/microblaze_0/Data "
        "M01_AXI/Reg SEG_nrl_M01_AXI_Reg"], segments(r)
    # the other segments as the reference has them
    assert any(x.startswith("create_bd_addr_seg -range 0x10000 -offset 0x40600000") for x in steps(r))
    work_design = flow.out / "sume_tree" / "projects" / "reference_switch"
    header = (work_design / "sw" / "embedded" / "src" / "sume_register_defines.h").read_text()
    assert "#define SUME_INPUT_ARBITER_BASEADDR 0x44010000" in header
    assert "#define SUME_INPUT_ARBITER_HIGHADDR 0x4401FFFF" in header
    assert "#define SUME_INPUT_ARBITER_SIZEADDR 0x10000" in header
    assert "#define SUME_NF_RIFFA_DMA_SIZEADDR 0x1000" in header
    top = (work_design / "hw" / "hdl" / "top.v").read_text()
    assert re.search(r"nf_nrl_top\s*#\(\s*\n\s*\.BUILD_HASH\(32'h[0-9a-f]{8}\),\s*\.RPL_REC_STORE\(1\),"
                     r"\s*\.JOBS\(4\),", top), top
    iverilog = require_tool("iverilog", "elaborating the --ddr --param JOBS=4 top.v")
    stubs = flow.tmp / "ip_stubs.v"
    stubs.write_text(ip_stubs(SUME / "nf_nrl_ddr.v") + IBUFDS_STUB)
    e = subprocess.run([iverilog, "-g2005", "-o", os.devnull, f"-I{REPO / 'hw' / 'rtl'}", "-s", "top",
                        str(work_design / "hw" / "hdl" / "top.v"), str(SUME / "nf_nrl_ddr.v"), str(stubs),
                        *map(str, wrapper_sources())], capture_output=True, text=True, timeout=300)
    assert e.returncode == 0, e.stdout + e.stderr


@pytest.mark.parametrize("args, defines, message", [
    (["--param", "JOBS=9"], None, r"--param JOBS=9: the switch serves 1 to 8 jobs"),
    (["--param", "BUILD_HASH=1"], None, r"--param BUILD_HASH: the flow sets BUILD_HASH itself"),
    (["--param", "JOBS"], None, r"--param takes NAME=VALUE"),
    (["--param", "JOBS=2"], ("M02 0x44020000", "M02 0x44018000"),
     r"\w+_BASEADDR = 0x44018000 lies in the 64 KB from M01_BASEADDR = 0x44010000"),
])
def test_full_flow_jobs_refused(flow: Flow, args: list[str], defines: tuple[str, str] | None,
                                message: str) -> None:
    """A JOBS out of range, a parameter the flow sets, a malformed --param, an address map
    with no 64 KB after M01: a clear error, no bitstream, the checkout untouched."""
    if defines is not None:
        f = flow.design / "hw" / "tcl" / "reference_switch_defines.tcl"
        f.write_text(f.read_text().replace(*defines))
    before = tree_listing(flow.sume)
    r = flow.run("--firmware", str(flow.firmware), *args)
    assert r.returncode != 0, r.stdout
    assert re.search(message, r.stdout + r.stderr), r.stdout + r.stderr
    assert not (flow.out / "nf_nrl.bit").exists()
    assert tree_listing(flow.sume) == before


@pytest.mark.parametrize("change, message", [
    (("<SystemClock>No Buffer<", "<SystemClock>Differential<"),
     r"<SystemClock> is 'Differential', not 'No Buffer': nf_nrl_ddr\.v buffers sys_clk_p/n itself"),
    (("<ReferenceClock>No Buffer<", "<ReferenceClock>Differential<"),
     r"<ReferenceClock> is 'Differential', not 'No Buffer'"),
    (("<SysResetPolarity>ACTIVE HIGH<", "<SysResetPolarity>ACTIVE LOW<"),
     r"<SysResetPolarity> is 'ACTIVE LOW', not 'ACTIVE HIGH'"),
    (("<InputClkFreq>233.1<", "<InputClkFreq>200<"), r"<InputClkFreq> is '200', not '233\.1'"),
    (("", ""), r"no \S+/nf_sume_ddr3A\.prj, SUME's MIG project"),
])
def test_full_flow_ddr_mig_project_checked(flow: Flow, change: tuple[str, str], message: str) -> None:
    """A MIG project whose clocks or reset are not what nf_nrl_ddr.v drives stops the flow."""
    (flow.design / "hw" / "hdl" / "top.v").write_text(DDR_TOP_V)
    ref = flow.sume / "projects" / "acceptance_test" / "hw" / "xml" / "nf_sume_ddr3A.prj"
    if change[0]:
        ref.write_text(ref.read_text().replace(*change))
    else:
        ref.unlink()
    r = flow.run("--firmware", str(flow.firmware), "--ddr")
    assert r.returncode != 0 and re.search(message, r.stderr), r.stdout + r.stderr
    assert not (flow.out / "nf_nrl.bit").exists()


def _break_format_coe(flow: Flow, body: str) -> None:
    p = flow.sume / "tools" / "scripts" / "format_coe.py"
    p.write_text(body)


@pytest.mark.parametrize("case, message", [
    ("no NF_DESIGN_DIR", r"\$NF_DESIGN_DIR is not set: source \$SUME_FOLDER/tools/settings\.sh"),
    ("other project", r"\$NF_DESIGN_DIR is \S+/projects/reference_nic, but this flow builds on the "
                      r"reference_switch project.*NF_PROJECT_NAME=reference_switch"),
    ("Vivado 2018.2", r"this is Vivado 2018\.2, but the SUME reference project needs Vivado 2016\.4"),
    ("coe missing", r"ran but did not produce create_ip/id_rom16x32\.coe"),
    ("format_coe writes nothing", r"identifier step \(make identifier in \S+\) failed, so there is no "
                                  r"ID ROM image create_ip/id_rom16x32\.coe\. Output:.*format_coe: nothing"),
    ("identifier fails", r"identifier step \(make identifier in \S+\) failed, so there is no ID ROM "
                         r"image create_ip/id_rom16x32\.coe\. Output:.*format_coe: broken"),
    ("firmware fails", r"building the MicroBlaze firmware failed \(make -C \S+ app\.elf "
                       r"SUME_HW_EXPORT=\S+reference_switch\.hdf BUILD_DIR=\S+/out/firmware\); it needs the Xilinx SDK 2016\.4 "
                       r"toolchain.*mb-gcc not found"),
    ("project firmware without SDK", r"building the MicroBlaze firmware failed \(make -C \S+/hw/boards/sume/"
                                     r"firmware app\.elf .*mb-gcc not found"),
    ("no firmware Makefile", r"no firmware Makefile in \S+: .*pass --elf FILE"),
    ("ELF missing", r"--elf \S+/missing\.elf: no such file"),
    ("not MicroBlaze", r"is an ELF for machine \d+ \(class \d\), not a 32-bit MicroBlaze executable"),
    ("out inside SUME", r"--out \S+ is inside \$SUME_FOLDER"),
])
def test_full_flow_errors(flow: Flow, case: str, message: str) -> None:
    args = ["--firmware", str(flow.firmware)]
    env: dict[str, str | None] = {}
    if case == "no NF_DESIGN_DIR":
        env["NF_DESIGN_DIR"] = None
    elif case == "other project":
        env["NF_DESIGN_DIR"] = str(flow.sume / "projects" / "reference_nic")
        env["NF_PROJECT_NAME"] = "reference_nic"
    elif case == "Vivado 2018.2":
        env["FAKE_VIVADO_VERSION"] = "2018.2"
    elif case == "coe missing":  # a hw/Makefile whose identifier target makes no ROM image
        (flow.design / "hw" / "Makefile").write_text("identifier:\n\t@echo identifier: nothing\n")
    elif case == "format_coe writes nothing":
        _break_format_coe(flow, "print('format_coe: nothing to do')\n")
    elif case == "identifier fails":
        _break_format_coe(flow, "import sys\nsys.exit('format_coe: broken')\n")
    elif case == "firmware fails":
        env["FAIL"] = "1"
    elif case == "project firmware without SDK":  # hw/boards/sume/firmware/Makefile
        env["MB_GCC"] = str(flow.tmp / "no-sdk" / "mb-gcc")
        args = []
    elif case == "no firmware Makefile":
        args = ["--firmware", str(flow.tmp / "nowhere")]
    elif case == "ELF missing":
        args = ["--elf", str(flow.tmp / "missing.elf")]
    elif case == "not MicroBlaze":
        args = ["--elf", os.path.realpath(sys.executable)]
    elif case == "out inside SUME":
        flow.out = flow.sume / "build"
    before = tree_listing(flow.sume)
    r = flow.run(*args, **env)
    assert r.returncode != 0, r.stdout
    assert "build.tcl: " in r.stderr and re.search(message, r.stderr, re.S), r.stderr
    assert not (flow.out / "nf_nrl.bit").exists()
    assert tree_listing(flow.sume) == before
