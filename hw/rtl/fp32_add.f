fp32_add.v
