"""Patterns built on the client: keys, buckets and shards, shared reads and writes, countdowns, time indexes, conditional writes."""
