#!/usr/bin/env bash
# Build the netfpga-rl switch for NetFPGA SUME with Vivado (2018.x or later).
#
#   scripts/sume_build.sh [--flow ooc|full] [--out DIR] [--jobs N] [--param K=V] ...
#
# Runs `vivado -mode batch -source hw/boards/sume/build.tcl -tclargs ...`;
# every option is passed to build.tcl (see its header and
# hw/boards/sume/README.md). The full flow (bitstream) needs the
# NetFPGA-SUME-live repository: source $SUME_FOLDER/tools/settings.sh first.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
tcl="$repo/hw/boards/sume/build.tcl"

if ! command -v vivado >/dev/null 2>&1; then
    echo "sume_build.sh: error: 'vivado' not found on PATH." >&2
    echo "  Install Vivado 2018.x or later with Virtex-7 support and run" >&2
    echo "  'source <Xilinx install>/Vivado/<version>/settings64.sh', then retry." >&2
    echo "  (Without Vivado, 'make synth' gives a Yosys resource and logic-depth estimate.)" >&2
    exit 2
fi
if [ ! -f "$tcl" ]; then
    echo "sume_build.sh: error: $tcl is missing" >&2
    exit 2
fi

out="$repo/build/sume"
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
    if [ "${args[$i]}" = "--out" ] && [ $((i + 1)) -lt ${#args[@]} ]; then
        out="${args[$((i + 1))]}"
    fi
done
mkdir -p "$out"

cd "$out"
exec vivado -mode batch -nojournal -log "$out/vivado.log" -source "$tcl" -tclargs "$@"
