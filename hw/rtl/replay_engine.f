# Replay engine (top: replay_engine); read by Icarus, Verilator and Yosys.
nrl_fifo.v
nrl_axil_regif.v
nrl_common_regs.v
nrl_counter_bank.v
replay_regs.v
nrl_hdr_check.v
replay_ingress.v
replay_mul.v
replay_sum_tree.v
replay_rate_limiter.v
replay_executor.v
replay_stack.v
replay_responder.v
replay_rec_store_bram.v
replay_rec_store_axi.v
replay_engine.v
