"""The hooks service (Taskcluster's hooks): rendering a hook's task, checking what triggers it."""
