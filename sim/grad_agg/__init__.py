"""cocotb testbench of the gradient aggregation engine (``hw/rtl/grad_agg.v``).

Every expected output frame and counter value comes from
:class:`hostdrv.switch.reference.SwitchModel` fed the same register writes and frames.
"""
