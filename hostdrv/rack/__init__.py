"""Rack tooling (``scripts/rack.py``): ``delay_line`` (link delays between host namespaces),
``probes`` (round-trip time, TCP goodput, where datagrams are lost), ``dpdk_switch``."""
