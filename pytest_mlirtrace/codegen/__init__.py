"""Layer `codegen`."""
