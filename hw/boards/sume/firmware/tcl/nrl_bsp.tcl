# Generate the standalone BSP (and an empty application, for its linker script)
# for the SUME MicroBlaze from a hardware export; run by `make bsp` in the
# workspace folder:  xsdk -batch -source nrl_bsp.tcl <project>.hdf <processor>
# The same steps as the SUME reference project's sw/embedded/tcl/*_xsdk.tcl.
set hdf  [lindex $argv 0]
set proc [lindex $argv 1]
setws .
createhw -name hw_platform -hwspec $hdf
createbsp -name bsp -hwproject hw_platform -proc $proc -os standalone
createapp -name app -hwproject hw_platform -proc $proc -os standalone -lang C \
    -app {Empty Application} -bsp bsp
projects -build
exit
