"""Storage adapters: Azure Table Storage and Storage Queues. They know nothing of HTTP.

The stored rows are the truth; index rows (pending hints, claims) are hints that readers
check against the task row before acting on them.
"""
