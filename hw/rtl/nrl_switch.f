# netfpga-rl switch datapath (top: nrl_switch); read by Icarus, Verilator and Yosys.
# Flat list: the aggregation engine's files (grad_agg.f), the replay
# engine's files (replay_engine.f), then the switch's own modules.
fp32_add.v
nrl_fifo.v
nrl_axil_regif.v
nrl_common_regs.v
nrl_counter_bank.v
nrl_hdr_check.v
grad_agg_regs.v
grad_agg_verdict.v
grad_agg_accum.v
grad_agg_ingress.v
grad_agg_egress.v
grad_agg_job.v
grad_agg.v
replay_regs.v
replay_ingress.v
replay_mul.v
replay_sum_tree.v
replay_rate_limiter.v
replay_credits.v
replay_draw.v
replay_leaf_update.v
replay_executor.v
replay_stack.v
replay_responder.v
replay_rec_store_bram.v
replay_rec_store_axi.v
replay_egress.v
replay_engine.v
nrl_l2_learn.v
nrl_classifier.v
nrl_axis_skid.v
nrl_axis_merge.v
nrl_job_table.v
nrl_axil_split.v
nrl_switch.v
