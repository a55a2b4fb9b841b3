"""`taskq-worker`: claims tasks from one task queue and runs generic-worker's payload.

`payload` reads and checks a payload; `task_run` runs one claimed run to its resolution;
`run_watch` reclaims it and notices when it was cancelled; `cancel_listener` hears the
cancellations on AMQP; `live_log` serves the log while it grows; `artifacts` uploads through
the object protocol; `worker` is the claim loop; `cli` the command line.
"""
