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
# The host side: the board's PCIe endpoint (device 0x7028) disappears while
# the FPGA is reconfigured, so programming with sume_riffa still bound to it
# can hang or crash the host. As SUME's blueswitch run_load_image.sh does,
# the driver is unloaded and the PCI device removed first, then the FPGA
# programmed, then the bus rescanned (SUME's reconfigure/pci_rescan_run.sh),
# the driver loaded again and nf0..nf3 brought up. With --reload (as root,
# with $DRIVER_FOLDER set by SUME's tools/settings.sh) this script does all
# of it; without, it programs only when the driver is not loaded and prints
# the steps before and after.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sysfs="${NRL_SYSFS:-/sys}"  # another root only for tests
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
        -h|--help) sed -n '2,29p' "${BASH_SOURCE[0]}"; exit 0 ;;
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

driver_ko="${DRIVER_FOLDER:-\$SUME_FOLDER/lib/sw/std/driver/sume_riffa_v1_0_0}/sume_riffa.ko"
steps_before() {
    cat <<EOF
  # before programming: unload the driver, remove the SUME endpoint (0x7028)
  rmmod sume_riffa
  for d in $sysfs/bus/pci/devices/*; do
      [ "\$(cat \$d/device)" = 0x7028 ] && echo 1 > \$d/remove
  done
EOF
}
steps_after() {
    cat <<EOF
  # after programming: rescan the bus (or reboot), reload the driver, interfaces up
  echo 1 > $sysfs/bus/pci/rescan
  insmod $driver_ko
  ip link set nf0 up; ip link set nf1 up; ip link set nf2 up; ip link set nf3 up
EOF
}
driver_loaded() { [ -d "$sysfs/module/sume_riffa" ]; }

if [ "$reload" -eq 1 ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "sume_flash.sh: error: --reload needs root (rmmod/insmod, PCI remove and rescan); the steps are:" >&2
        steps_before >&2
        echo "  # program: scripts/sume_flash.sh $bit" >&2
        steps_after >&2
        exit 1
    fi
    if [ -z "${DRIVER_FOLDER:-}" ] || [ ! -f "$DRIVER_FOLDER/sume_riffa.ko" ]; then
        echo "sume_flash.sh: error: \$DRIVER_FOLDER/sume_riffa.ko not found: source \$SUME_FOLDER/tools/settings.sh and build the driver (make -C \$DRIVER_FOLDER)" >&2
        exit 1
    fi
    if driver_loaded; then
        rmmod sume_riffa
        echo "sume_flash.sh: sume_riffa unloaded"
    fi
    for d in "$sysfs"/bus/pci/devices/*; do
        if [ "$(cat "$d/device" 2>/dev/null)" = "0x7028" ]; then
            echo 1 > "$d/remove"
            echo "sume_flash.sh: PCI device $(basename "$d") (0x7028) removed"
        fi
    done
elif driver_loaded; then
    echo "sume_flash.sh: error: sume_riffa is loaded: programming under a bound driver can hang the host." >&2
    echo "  Run with --reload as root (unload, program, rescan, reload), or first, as root:" >&2
    steps_before >&2
    exit 1
fi

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

if [ "$reload" -eq 0 ]; then
    echo "sume_flash.sh: programmed. Now, as root (what SUME's run_load_image.sh does after programming):"
    steps_after
    echo "  then: rwaxi -a 0x44010000 must print 0x4e524c31 (docs/board.md)"
    exit 0
fi
sleep 1
echo 1 > "$sysfs/bus/pci/rescan"
sleep 1
found=0
for d in "$sysfs"/bus/pci/devices/*; do
    [ "$(cat "$d/device" 2>/dev/null)" = "0x7028" ] && found=1
done
if [ "$found" -eq 0 ]; then
    echo "sume_flash.sh: warning: no PCI device 0x7028 after the rescan; if the board does not appear, reboot the host" >&2
fi
insmod "$DRIVER_FOLDER/sume_riffa.ko"
sleep 1
for i in 0 1 2 3; do
    ip link set "nf$i" up
done
echo "sume_flash.sh: PCIe rescanned, sume_riffa reloaded, nf0-nf3 up"
