"""Helpers shared by the cocotb testbenches."""
