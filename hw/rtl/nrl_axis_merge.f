# AXI4-Stream packet merge (top: nrl_axis_merge) and its output register slice.
nrl_axis_skid.v
nrl_axis_merge.v
