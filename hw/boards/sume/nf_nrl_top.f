# NetFPGA SUME user datapath wrapper (top: nf_nrl_top).
# Read together with ../../rtl/nrl_switch.f (the switch and its engines);
# relative paths are relative to this folder.
nf_nrl_axil_null.v
nf_nrl_output_queues.v
nf_nrl_top.v
