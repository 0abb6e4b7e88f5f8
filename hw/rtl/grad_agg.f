grad_agg.v
nrl_common_regs.v
nrl_counter_bank.v
grad_agg_regs.v
nrl_fifo.v
fp32_add.v
