"""Benchmarks: scripts that print figures beside a storage baseline measured in the same run."""
