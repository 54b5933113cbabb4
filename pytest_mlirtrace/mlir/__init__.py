"""Layer `mlir`."""
