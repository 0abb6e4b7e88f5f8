# Replay engine (top: replay_engine); read by Icarus, Verilator and Yosys.
nrl_fifo.v
replay_fifo.v
nrl_common_regs.v
nrl_counter_bank.v
replay_regs.v
replay_ingress.v
replay_mul.v
replay_sum_tree.v
replay_engine.v
