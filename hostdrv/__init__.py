"""netfpga-rl host driver: protocol, reference switch model, soft switch and clients."""
