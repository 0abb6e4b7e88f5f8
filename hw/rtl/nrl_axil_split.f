# AXI4-Lite register splitter (top: nrl_axil_split) and its job table.
nrl_job_table.v
nrl_axil_split.v
