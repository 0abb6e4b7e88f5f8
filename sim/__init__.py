"""cocotb testbenches for the netfpga-rl RTL (one folder per DUT)."""
