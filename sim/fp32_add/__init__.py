"""cocotb testbench for the pipelined binary32 adder ``fp32_add``."""
