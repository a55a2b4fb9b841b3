"""The index service (Taskcluster's index): tasks found by name, and completed tasks indexed by their routes."""
