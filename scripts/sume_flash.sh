#!/usr/bin/env bash
# Program the netfpga-rl bitstream into the NetFPGA SUME's Virtex-7 over JTAG,
# then bring the host side up again (or print how).
#
#   scripts/sume_flash.sh [BITFILE] [--url HOST:PORT] [--device N] [--reload]
#
# BITFILE defaults to build/sume/nf_nrl.bit (scripts/sume_build.sh --flow full).
# Programming is what SUME's tools/scripts/download.tcl does, in Vivado's
# hardware manager (batch mode): open_hw, connect_hw_server (default
# localhost:3121; Vivado starts hw_server on demand), the Digilent JTAG target
# (the board's micro-USB port), PROGRAM.FILE, program_hw_devices. Vivado Lab
# Edition is enough. The FPGA configuration is volatile: it is lost at power
# off and has to be programmed again.
#
# Afterwards the host must find the board's PCIe endpoint again. These are
# the steps of SUME's tools/scripts/run_load_image.sh: remove and rescan the
# PCI device 0x7028 (its reconfigure/pci_rescan_run.sh), reload the
# sume_riffa driver, bring nf0..nf3 up. With --reload (as root, with
# $DRIVER_FOLDER set by SUME's tools/settings.sh) this script runs them;
# otherwise it prints them.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
bit="$repo/build/sume/nf_nrl.bit"
url="localhost:3121"
device=""
reload=0

while [ $# -gt 0 ]; do
    case "$1" in
        --url) url="${2:?--url needs HOST:PORT}"; shift 2 ;;
        --device) device="${2:?--device needs the index on the JTAG chain}"; shift 2 ;;
        --reload) reload=1; shift ;;
        -h|--help) sed -n '2,20p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) bit="$1"; shift ;;
    esac
done

if ! command -v vivado >/dev/null 2>&1; then
    echo "sume_flash.sh: error: 'vivado' not found on PATH." >&2
    echo "  Install Vivado 2016.4 (Lab Edition is enough to program) and run" >&2
    echo "  'source <Xilinx install>/Vivado/2016.4/settings64.sh', then retry." >&2
    exit 2
fi
if [ ! -f "$bit" ]; then
    echo "sume_flash.sh: error: bitstream $bit not found; build it with scripts/sume_build.sh --flow full" >&2
    exit 2
fi
if head -c 40 "$bit" | grep -q "netfpga-rl dry run"; then
    echo "sume_flash.sh: error: $bit is the output of scripts/sume_build.sh --dry-run, not a bitstream" >&2
    exit 2
fi
bit="$(cd "$(dirname "$bit")" && pwd)/$(basename "$bit")"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# download.tcl takes the device index as an argument; by default pick the
# xc7vx690t on the chain by name
if [ -n "$device" ]; then
    pick="set dev [lindex [get_hw_devices] $device]"
else
    pick="set dev [lindex [get_hw_devices -quiet xc7vx690t*] 0]"
fi
cat > "$tmp/program.tcl" <<TCL
open_hw
connect_hw_server -url $url
set targets [get_hw_targets */xilinx_tcf/Digilent/*]
if {[llength \$targets] == 0} { error "sume_flash.sh: no Digilent JTAG target at $url: is the SUME's micro-USB (JTAG) cable connected and the board powered?" }
current_hw_target [lindex \$targets 0]
open_hw_target
$pick
if {\$dev eq ""} { error "sume_flash.sh: no xc7vx690t on the JTAG chain (devices: [get_hw_devices])" }
current_hw_device \$dev
set_property PROGRAM.FILE {$bit} \$dev
program_hw_devices \$dev
puts "sume_flash.sh: programmed $bit into \$dev"
close_hw_target
disconnect_hw_server
exit
TCL
vivado -mode batch -nojournal -nolog -source "$tmp/program.tcl"

driver_ko="${DRIVER_FOLDER:-\$SUME_FOLDER/lib/sw/std/driver/sume_riffa_v1_0_0}/sume_riffa.ko"
steps() {
    cat <<EOF
  # 1. PCIe: remove and rescan the SUME endpoint (device id 0x7028), as
  #    SUME's tools/scripts/reconfigure/pci_rescan_run.sh does (or reboot)
  for d in /sys/bus/pci/devices/*; do
      [ "\$(cat \$d/device)" = 0x7028 ] && echo 1 > \$d/remove
  done; sleep 1; echo 1 > /sys/bus/pci/rescan
  # 2. reload the driver (built in \$DRIVER_FOLDER by SUME's tools/settings.sh + make)
  rmmod sume_riffa; insmod $driver_ko
  # 3. bring the four 10G interfaces up
  ip link set nf0 up; ip link set nf1 up; ip link set nf2 up; ip link set nf3 up
EOF
}

if [ "$reload" -eq 0 ]; then
    echo "sume_flash.sh: programmed. Now, as root (what SUME's tools/scripts/run_load_image.sh does):"
    steps
    echo "  then: rwaxi -a 0x44010000 must print 0x4e524c31 (docs/board.md)"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "sume_flash.sh: error: --reload needs root (PCI rescan, rmmod/insmod); the steps are:" >&2
    steps >&2
    exit 1
fi
if [ -z "${DRIVER_FOLDER:-}" ] || [ ! -f "$DRIVER_FOLDER/sume_riffa.ko" ]; then
    echo "sume_flash.sh: error: \$DRIVER_FOLDER/sume_riffa.ko not found: source \$SUME_FOLDER/tools/settings.sh and build the driver (make -C \$DRIVER_FOLDER)" >&2
    exit 1
fi
sleep 1
found=0
for d in /sys/bus/pci/devices/*; do
    if [ "$(cat "$d/device" 2>/dev/null)" = "0x7028" ]; then
        echo 1 > "$d/remove"
        found=1
    fi
done
sleep 1
echo 1 > /sys/bus/pci/rescan
if [ "$found" -eq 0 ]; then
    echo "sume_flash.sh: warning: no PCI device 0x7028 was present before the rescan; if the board does not appear, reboot the host" >&2
fi
sleep 1
rmmod sume_riffa 2>/dev/null || true
sleep 1
insmod "$DRIVER_FOLDER/sume_riffa.ko"
sleep 1
for i in 0 1 2 3; do
    ip link set "nf$i" up
done
echo "sume_flash.sh: PCIe rescanned, sume_riffa reloaded, nf0-nf3 up"
