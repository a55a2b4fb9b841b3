"""The table adapters: one module per table, each knowing its rows and keys and nothing of HTTP."""
