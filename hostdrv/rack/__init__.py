"""Rack tooling: ``delay_line`` (link delays between host namespaces, ``scripts/rack.py``)."""
