#!/usr/bin/env bash
# Stop everything start-tc-queue.sh started (only those processes, by their pid files).
set -uo pipefail
TC_RUN=${TC_RUN:-/work/tc-run}
PGBIN=/usr/lib/postgresql/15/bin

stop_pidfile() { # name pidfile
  local pid
  [ -f "$2" ] || return 0
  pid=$(cat "$2")
  if kill -0 "$pid" 2>/dev/null; then
    echo "stopping $1 (pid $pid)"
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -0 "$pid" 2>/dev/null && { kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid"; }
  fi
  rm -f "$2"
}

if [ -f "$TC_RUN/pids/nginx.pid" ] && kill -0 "$(cat "$TC_RUN/pids/nginx.pid")" 2>/dev/null; then
  echo "stopping nginx"
  nginx -p "$TC_RUN/nginx" -c "$TC_RUN/nginx/nginx.conf" -e "$TC_RUN/logs/nginx-error.log" -s quit
  for _ in $(seq 50); do [ -f "$TC_RUN/pids/nginx.pid" ] || break; sleep 0.1; done
fi
for n in queue-claim-resolver queue-deadline-resolver queue-dependency-resolver queue auth; do
  stop_pidfile "$n" "$TC_RUN/pids/$n.pid"
done

RB="$TC_RUN/rabbit"
if [ -f "$RB/rabbit.pid" ] && kill -0 "$(cat "$RB/rabbit.pid")" 2>/dev/null; then
  echo "stopping rabbitmq (tcqueue@localhost)"
  RABBITMQ_NODENAME=tcqueue@localhost rabbitmqctl -n tcqueue@localhost stop "$RB/rabbit.pid" >/dev/null 2>&1 ||
    stop_pidfile rabbitmq "$RB/rabbit.pid"
fi

if [ -f "$TC_RUN/pg/postmaster.pid" ]; then
  echo "stopping postgres"
  (cd /tmp && su postgres -c "$PGBIN/pg_ctl -D $TC_RUN/pg -m fast -w stop" >/dev/null)
fi
echo "stopped"
