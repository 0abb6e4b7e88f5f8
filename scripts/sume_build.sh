#!/usr/bin/env bash
# Build the netfpga-rl switch for NetFPGA SUME with Vivado 2016.4.
#
#   scripts/sume_build.sh [--flow ooc|full] [--out DIR] [--jobs N] [--param K=V]
#                         [--elf FILE] [--firmware DIR] [--mb-regs] [--dry-run]
#
# Runs `vivado -mode batch -source hw/boards/sume/build.tcl -tclargs ...`;
# every option is passed to build.tcl (see its header and
# hw/boards/sume/README.md). The full flow (bitstream) needs the
# NetFPGA-SUME-live repository (the 2016.4 release; its reference_switch
# project is written for Vivado 2016.4 and build.tcl stops on any other
# version) and, for the MicroBlaze firmware, the Xilinx SDK 2016.4: source
# $SUME_FOLDER/tools/settings.sh (SUME_FOLDER, NF_DESIGN_DIR, ...) and the
# Vivado and SDK settings64.sh first. The ooc flow runs on 2016.4 or later.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
tcl="$repo/hw/boards/sume/build.tcl"

# --dry-run: build.tcl under tclsh with the Vivado commands stubbed
# (hw/boards/sume/dryrun.tcl): seconds, every step but Vivado's own, output
# in build/sume-dryrun unless --out says otherwise
dry=0
args=()
for a in "$@"; do
    if [ "$a" = "--dry-run" ]; then dry=1; else args+=("$a"); fi
done
set -- ${args[@]+"${args[@]}"}

if [ "$dry" -eq 1 ]; then
    if ! command -v tclsh >/dev/null 2>&1; then
        echo "sume_build.sh: error: --dry-run needs tclsh (apt-get install tcl)" >&2
        exit 2
    fi
    out="$repo/build/sume-dryrun"
    has_out=0
    for ((i = 0; i < $#; i++)); do
        [ "${args[$i]}" = "--out" ] && has_out=1
    done
    [ "$has_out" -eq 1 ] || set -- "$@" --out "$out"
    driver="$(mktemp)"
    trap 'rm -f "$driver"' EXIT
    {
        echo "source {$repo/hw/boards/sume/dryrun.tcl}"
        printf 'set ::argv [list'
        for a in "$@"; do printf ' {%s}' "$a"; done
        echo ']'
        echo "source {$tcl}"
        echo 'puts "sume_build.sh: dry run complete (Vivado stubbed: no real bitstream)"'
    } > "$driver"
    tclsh "$driver"
    exit $?
fi

if ! command -v vivado >/dev/null 2>&1; then
    echo "sume_build.sh: error: 'vivado' not found on PATH." >&2
    echo "  Install Vivado 2016.4 with Virtex-7 support (the SUME reference project needs" >&2
    echo "  exactly 2016.4) and run 'source <Xilinx install>/Vivado/2016.4/settings64.sh', then retry." >&2
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
if [ -n "${SUME_FOLDER:-}" ]; then
    abs_out="$(realpath -m "$out")"
    abs_sume="$(realpath -m "$SUME_FOLDER")"
    case "$abs_out/" in
        "$abs_sume"/*)
            echo "sume_build.sh: error: --out $out is inside \$SUME_FOLDER ($SUME_FOLDER); the build never writes into the SUME checkout: choose another folder" >&2
            exit 2 ;;
    esac
fi
mkdir -p "$out"

cd "$out"
exec vivado -mode batch -nojournal -log "$out/vivado.log" -source "$tcl" -tclargs "$@"
