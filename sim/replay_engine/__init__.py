"""cocotb testbench of the replay engine (``hw/rtl/replay_engine.v``)."""
