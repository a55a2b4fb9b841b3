"""The worker manager (Taskcluster's worker-manager): registration of the workers it starts,
and the providers that start, check and stop them (`providers/`). The provisioner, the API
and the watchdog build on these."""
