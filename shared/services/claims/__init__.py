"""Claims: the work claimer (claimWork, reclaimTask), the pending buffer and work signal behind it, task queues, workers and their credentials."""
