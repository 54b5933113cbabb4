"""Layer `runtime`."""
