"""Layer `trace`."""
