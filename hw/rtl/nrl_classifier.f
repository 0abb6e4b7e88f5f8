# netfpga-rl classifier and output port lookup (top: nrl_classifier) with its MAC
# learning table; read by Icarus, Verilator and Yosys (nrl_switch.f lists both too).
nrl_l2_learn.v
nrl_classifier.v
