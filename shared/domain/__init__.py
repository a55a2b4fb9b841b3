"""Domain rules of the Queue: task definitions, runs, states and their transitions.

Plain Python: nothing here knows about Azure, HTTP or storage.
"""
