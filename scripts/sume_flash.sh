#!/usr/bin/env bash
# Program the netfpga-rl bitstream into the NetFPGA SUME's Virtex-7 over JTAG.
#
#   scripts/sume_flash.sh [BITFILE] [--url HOST:PORT]
#
# BITFILE defaults to build/sume/nf_nrl.bit (scripts/sume_build.sh --flow full).
# Uses xsct (Vivado SDK / Vitis) when available, else Vivado's hardware
# manager in batch mode; both talk to hw_server (default localhost:3121,
# started on demand by the tools). The board's micro-USB JTAG port must be
# connected. The configuration is volatile: after programming, rescan or
# reboot so the host sees the PCIe endpoint (see hw/boards/sume/README.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
bit="$repo/build/sume/nf_nrl.bit"
url="localhost:3121"

while [ $# -gt 0 ]; do
    case "$1" in
        --url) url="${2:?--url needs HOST:PORT}"; shift 2 ;;
        -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) bit="$1"; shift ;;
    esac
done

tool=""
if command -v xsct >/dev/null 2>&1; then
    tool="xsct"
elif command -v vivado >/dev/null 2>&1; then
    tool="vivado"
else
    echo "sume_flash.sh: error: 'vivado' (or 'xsct') not found on PATH." >&2
    echo "  Install Vivado 2018.x or later (Lab Edition is enough) and run" >&2
    echo "  'source <Xilinx install>/Vivado/<version>/settings64.sh', then retry." >&2
    exit 2
fi
if [ ! -f "$bit" ]; then
    echo "sume_flash.sh: error: bitstream $bit not found; build it with scripts/sume_build.sh --flow full" >&2
    exit 2
fi
bit="$(cd "$(dirname "$bit")" && pwd)/$(basename "$bit")"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

if [ "$tool" = "xsct" ]; then
    cat > "$tmp/flash.tcl" <<TCL
connect -url tcp:$url
targets -set -filter {name =~ "xc7vx690t*"}
fpga -file {$bit}
puts "sume_flash.sh: programmed $bit"
disconnect
TCL
    xsct "$tmp/flash.tcl"
else
    cat > "$tmp/flash.tcl" <<TCL
open_hw_manager
connect_hw_server -url $url
open_hw_target
set dev [lindex [get_hw_devices xc7vx690t*] 0]
if {\$dev eq ""} { error "sume_flash.sh: no xc7vx690t on the JTAG chain" }
current_hw_device \$dev
set_property PROGRAM.FILE {$bit} \$dev
program_hw_devices \$dev
puts "sume_flash.sh: programmed $bit"
close_hw_target
disconnect_hw_server
TCL
    vivado -mode batch -nojournal -nolog -source "$tmp/flash.tcl"
fi
echo "sume_flash.sh: done; now rescan PCIe (or reboot) so the host finds the board"
