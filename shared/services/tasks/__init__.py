"""Tasks: createTask, the calls on one task, reportCompleted/Failed/Exception, and the one way a task's status changes (the task updater)."""
