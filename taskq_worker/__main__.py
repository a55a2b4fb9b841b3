from taskq_worker.cli import main_exit

main_exit()
