"""cocotb testbench of the switch datapath top (nrl_switch)."""
