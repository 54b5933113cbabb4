"""Layer `tuning`."""
