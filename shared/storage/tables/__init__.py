"""The table adapters: one module per table."""
