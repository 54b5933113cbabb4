"""Layer `plugin`."""
