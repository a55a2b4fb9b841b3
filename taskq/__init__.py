"""`taskq`: the command line for people who use the Queue (create, watch, follow, download, listen).

Everything goes through the official `taskcluster` client, so the same commands work against
this Queue and against Taskcluster itself.
"""
