"""Time-driven sweeps: the claim resolver, the deadline resolver, and the expiry of tasks, workers, task queues and artifacts."""
