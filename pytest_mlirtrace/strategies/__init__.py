"""Layer `strategies`."""
