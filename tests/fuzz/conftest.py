"""Fault-finding acceptance: `mlirtrace fuzz` run as a subprocess (slow ones run with -m slow)."""
