"""Layer `cli`."""
