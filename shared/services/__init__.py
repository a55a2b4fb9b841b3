"""Application services: each public method is one Queue operation, storage-agnostic in its rules."""
