"""The worker manager (Taskcluster's worker-manager): pools, the workers it starts through the
providers (`shared/providers/`), their registration (`shared/domain/registration.py`), and the
provisioner that brings workers to pending tasks."""
