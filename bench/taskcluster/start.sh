#!/usr/bin/env bash
# Start a local Taskcluster queue (+ auth, which the queue needs to verify Hawk signatures)
# against a private PostgreSQL 15 cluster and a private RabbitMQ broker, behind nginx.
#
#   bash bench/taskcluster/start.sh      # start everything (first run also does the one-time setup)
#   bash bench/taskcluster/stop.sh       # stop everything it started
#
# For `python -m bench.sequential --against http://127.0.0.1:28010` (Taskcluster's own queue
# measured side by side with ours). TC_SRC is a checkout of taskcluster/taskcluster (this was
# written against 106.0.0); the first run installs PostgreSQL, RabbitMQ and nginx from apt,
# Node 24 from npm (the repo's pin), the repo's packages with its own yarn, and makes the
# database and the root client's credentials (in $TC_RUN/credentials.env).
#
# Everything lives in $TC_RUN (default /work/tc-run): pg data, broker data, logs, pids, credentials.
# Ports (all on 127.0.0.1): proxy/rootUrl 28010, auth 28011, queue 28012, postgres 5433,
# AMQP 5673 (+ Erlang distribution 25673).
#
# Env knobs:
#   TC_BACKGROUND=0   do not start the queue's background resolvers (claim/deadline/dependency)
#   TC_LEVEL=info     log level of the services (production default is info)
set -euo pipefail

TC_SRC=${TC_SRC:-/work/tc}
TC_RUN=${TC_RUN:-/work/tc-run}
NODE_DIR=${NODE_DIR:-/work/tc-node}
PROXY_PORT=28010
AUTH_PORT=28011
QUEUE_PORT=28012
PG_PORT=5433
AMQP_PORT=5673
AMQP_DIST_PORT=25673
PGBIN=/usr/lib/postgresql/15/bin
ROOT_URL="http://127.0.0.1:${PROXY_PORT}"
TC_BACKGROUND=${TC_BACKGROUND:-1}
TC_LEVEL=${TC_LEVEL:-info}

T0=$(date +%s.%N)
log() { printf '[%6.1fs] %s\n' "$(echo "$(date +%s.%N) - $T0" | bc)" "$*"; }

wait_port() { # host port seconds name
  local i
  for ((i = 0; i < $3 * 10; i++)); do
    if (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "timeout waiting for $4 on $1:$2" >&2
  return 1
}
wait_http() { # url seconds name
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    if curl -sf -o /dev/null "$1"; then return 0; fi
    sleep 0.1
  done
  echo "timeout waiting for $3 at $1" >&2
  return 1
}
alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

mkdir -p "$TC_RUN"/{logs,pids}

########################################################################################
# One-time setup (idempotent; skipped when already done)
########################################################################################
command -v bc >/dev/null || { apt-get install -y -q bc >/dev/null; }
if ! dpkg -s postgresql rabbitmq-server nginx-light locales >/dev/null 2>&1; then
  log "installing Debian packages (postgresql rabbitmq-server nginx-light)"
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql rabbitmq-server nginx-light locales >/dev/null
fi
# Taskcluster refuses a database whose collation is not en_US.utf8-like
if ! locale -a | grep -qi '^en_US.utf8$'; then
  log "generating en_US.UTF-8 locale"
  sed -i 's/^# *en_US.UTF-8 UTF-8/en_US.UTF-8 UTF-8/' /etc/locale.gen
  locale-gen >/dev/null
fi
# The repo pins Node 24.19.0 (.nvmrc, engines); Debian/this machine has Node 20.
# The npm registry's `node` package ships the official binary.
NODE_VER=$(cat "$TC_SRC/.nvmrc")
if [ "$("$NODE_DIR/node_modules/node/bin/node" --version 2>/dev/null)" != "v$NODE_VER" ]; then
  log "installing node@$NODE_VER from the npm registry into $NODE_DIR"
  mkdir -p "$NODE_DIR"
  (cd "$NODE_DIR" && npm install --no-audit --no-fund "node@$NODE_VER" >/dev/null)
fi
export PATH="$NODE_DIR/node_modules/node/bin:$PATH"
if [ ! -e "$TC_SRC/node_modules/@taskcluster/lib-api" ]; then
  log "yarn install (repo-pinned yarn from .yarn/releases)"
  # Four worker-manager-only cloud SDK versions pinned by the repo are not on the registry
  # reachable here (404); the queue and auth never load them, so drop them from the manifest.
  sed -i -E '/"(@azure\/arm-network|@azure\/arm-resourcesdeployments|@googleapis\/compute|@googleapis\/iam)":/d' "$TC_SRC/package.json"
  (cd "$TC_SRC" && YARN_NPM_REGISTRY_SERVER=https://registry.npmjs.org \
    YARN_HTTPS_CA_FILE_PATH=/etc/ssl/certs/ca-certificates.crt YARN_ENABLE_TELEMETRY=0 \
    node .yarn/releases/yarn-*.cjs install --mode=skip-build >"$TC_RUN/logs/yarn-install.log" 2>&1)
fi
# Credentials: generated once, kept in $TC_RUN/credentials.env
if [ ! -f "$TC_RUN/credentials.env" ]; then
  TOKEN=$(python3 -c 'import secrets; print(secrets.token_urlsafe(33))')
  CRYPTO=$(python3 -c 'import secrets,base64; print(base64.b64encode(secrets.token_bytes(32)).decode())')
  cat >"$TC_RUN/credentials.env" <<EOF
TC_ROOT_CLIENT_ID=static/taskcluster/root
TC_ACCESS_TOKEN=$TOKEN
TC_DB_CRYPTO_KEY=$CRYPTO
EOF
  chmod 600 "$TC_RUN/credentials.env"
fi
# shellcheck disable=SC1091
. "$TC_RUN/credentials.env"

########################################################################################
# PostgreSQL 15: private cluster in $TC_RUN/pg, trust auth on 127.0.0.1:5433
########################################################################################
chown postgres "$TC_RUN" "$TC_RUN/logs"
touch "$TC_RUN/logs/postgres.log" && chown postgres "$TC_RUN/logs/postgres.log"
if [ ! -f "$TC_RUN/pg/PG_VERSION" ]; then
  log "initdb $TC_RUN/pg"
  (cd /tmp && su postgres -c "$PGBIN/initdb -D $TC_RUN/pg -A trust -U postgres -E UTF8 --locale=C.UTF-8" >"$TC_RUN/logs/initdb.log")
fi
if ! (cd /tmp && su postgres -c "$PGBIN/pg_ctl -D $TC_RUN/pg status" >/dev/null 2>&1); then
  log "starting postgres on 127.0.0.1:$PG_PORT"
  (cd /tmp && su postgres -c "$PGBIN/pg_ctl -D $TC_RUN/pg -l $TC_RUN/logs/postgres.log \
     -o '-p $PG_PORT -k /tmp -c listen_addresses=127.0.0.1 -c max_connections=200' -w start" >/dev/null)
fi
PSQL="$PGBIN/psql -h 127.0.0.1 -p $PG_PORT -U postgres -v ON_ERROR_STOP=1 -qtA"
if [ -z "$($PSQL -c "select 1 from pg_database where datname='taskcluster'")" ]; then
  log "creating database taskcluster and per-service users"
  $PSQL -c "CREATE DATABASE taskcluster TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'en_US.UTF-8' LC_CTYPE 'en_US.UTF-8'"
  # same users as the repo's docker-compose dev stack (docker/postgres/init.sql)
  sed -e '/taskcluster-test/d' "$TC_SRC/docker/postgres/init.sql" | $PSQL -d taskcluster >/dev/null
fi
log "db upgrade (schema + per-service grants; no-op when current)"
(cd "$TC_SRC" && ADMIN_DB_URL="postgresql://postgres@127.0.0.1:$PG_PORT/taskcluster" USERNAME_PREFIX=taskcluster \
  node db/src/main.js upgrade >"$TC_RUN/logs/db-upgrade.log" 2>&1) || { tail -20 "$TC_RUN/logs/db-upgrade.log"; exit 1; }

########################################################################################
# RabbitMQ 3.10 (Debian): private node tcqueue@localhost on 127.0.0.1:5673
########################################################################################
RB="$TC_RUN/rabbit"
mkdir -p "$RB"/{mnesia,log,gen,plugins-expand}
[ -f "$RB/enabled_plugins" ] || echo '[].' >"$RB/enabled_plugins"
chown -R rabbitmq "$RB"
export RABBITMQ_MNESIA_BASE=$RB/mnesia RABBITMQ_LOG_BASE=$RB/log \
  RABBITMQ_FEATURE_FLAGS_FILE=$RB/feature_flags RABBITMQ_ENABLED_PLUGINS_FILE=$RB/enabled_plugins \
  RABBITMQ_PLUGINS_EXPAND_DIR=$RB/plugins-expand RABBITMQ_GENERATED_CONFIG_DIR=$RB/gen \
  RABBITMQ_PID_FILE=$RB/rabbit.pid RABBITMQ_NODENAME=tcqueue@localhost \
  RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_NODE_PORT=$AMQP_PORT RABBITMQ_DIST_PORT=$AMQP_DIST_PORT \
  RABBITMQ_CONFIG_FILE=$RB/rabbitmq \
  RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
if ! alive "$RB/rabbit.pid"; then
  log "starting rabbitmq on 127.0.0.1:$AMQP_PORT"
  (cd "$RB" && exec setsid rabbitmq-server >"$TC_RUN/logs/rabbitmq.out" 2>&1 </dev/null) &
fi
wait_port 127.0.0.1 $AMQP_PORT 60 rabbitmq
# lib-pulse hard-codes port 5672 (amqp) after PULSE_HOSTNAME and appends "/<vhost>?frameMax=0".
# Put the real port, vhost "/" and frameMax into PULSE_HOSTNAME and turn the appended part into an
# ignored query parameter (amqplib parses with WHATWG URL and takes the first value of a key):
#   amqp://guest:guest@127.0.0.1:5673/%2F?frameMax=0&_=:5672/x?frameMax=0
PULSE_HOST_HACK="127.0.0.1:${AMQP_PORT}/%2F?frameMax=0&_="

########################################################################################
# Taskcluster services
########################################################################################
common_env() {
  cat <<EOF
NODE_ENV=production
TASKCLUSTER_ROOT_URL=$ROOT_URL
FORCE_SSL=false
TRUST_PROXY=true
LEVEL=$TC_LEVEL
PULSE_USERNAME=guest
PULSE_PASSWORD=guest
PULSE_HOSTNAME=$PULSE_HOST_HACK
PULSE_VHOST=x
PULSE_AMQPS=false
EOF
}
STATIC_CLIENTS=$(python3 - "$TC_ACCESS_TOKEN" <<'EOF'
import json, sys
tok = sys.argv[1]
names = ["built-in-workers", "github", "hooks", "index", "notify", "object", "purge-cache",
         "queue", "secrets", "web-server", "worker-manager", "root"]
print(json.dumps([{"clientId": f"static/taskcluster/{n}", "accessToken": tok} for n in names]))
EOF
)
{
  common_env
  cat <<EOF
PORT=$AUTH_PORT
STATIC_CLIENTS=$STATIC_CLIENTS
READ_DB_URL=postgresql://taskcluster_auth@127.0.0.1:$PG_PORT/taskcluster
WRITE_DB_URL=postgresql://taskcluster_auth@127.0.0.1:$PG_PORT/taskcluster
DB_CRYPTO_KEYS=[{"id":"local","algo":"aes-256","key":"$TC_DB_CRYPTO_KEY"}]
EOF
} >"$TC_RUN/auth.env"
{
  common_env
  cat <<EOF
PORT=$QUEUE_PORT
TASKCLUSTER_CLIENT_ID=static/taskcluster/queue
TASKCLUSTER_ACCESS_TOKEN=$TC_ACCESS_TOKEN
READ_DB_URL=postgresql://taskcluster_queue@127.0.0.1:$PG_PORT/taskcluster
WRITE_DB_URL=postgresql://taskcluster_queue@127.0.0.1:$PG_PORT/taskcluster
PUBLIC_ARTIFACT_BUCKET=public-bucket
PRIVATE_ARTIFACT_BUCKET=private-bucket
AWS_ACCESS_KEY_ID=dummy
AWS_SECRET_ACCESS_KEY=dummy
ARTIFACT_REGION=us-east-1
AWS_ENDPOINT=http://127.0.0.1:9/
AWS_FORCE_PATH_STYLE=true
AWS_SKIP_CORS_CONFIGURATION=true
EOF
} >"$TC_RUN/queue.env"
chmod 600 "$TC_RUN"/*.env

start_node() { # name envfile service proc
  local name=$1 envfile=$2 service=$3 proc=$4
  if alive "$TC_RUN/pids/$name.pid"; then return 0; fi
  log "starting $name ($service $proc)"
  (
    cd "$TC_SRC"
    while IFS= read -r line; do [ -n "$line" ] && export "$line"; done <"$envfile"
    setsid node "services/$service/src/main.js" "$proc" >"$TC_RUN/logs/$name.log" 2>&1 </dev/null &
    echo $! >"$TC_RUN/pids/$name.pid"
  )
}
start_node auth "$TC_RUN/auth.env" auth server
start_node queue "$TC_RUN/queue.env" queue server
if [ "$TC_BACKGROUND" = 1 ]; then
  start_node queue-claim-resolver "$TC_RUN/queue.env" queue claim-resolver
  start_node queue-deadline-resolver "$TC_RUN/queue.env" queue deadline-resolver
  start_node queue-dependency-resolver "$TC_RUN/queue.env" queue dependency-resolver
fi

########################################################################################
# nginx: one origin (the rootUrl) for /api/auth/ and /api/queue/, like a real deployment's ingress
########################################################################################
mkdir -p "$TC_RUN/nginx"
cat >"$TC_RUN/nginx/nginx.conf" <<EOF
worker_processes 1;
pid $TC_RUN/pids/nginx.pid;
error_log $TC_RUN/logs/nginx-error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $TC_RUN/nginx/body;
  proxy_temp_path $TC_RUN/nginx/proxy;
  fastcgi_temp_path $TC_RUN/nginx/fastcgi;
  uwsgi_temp_path $TC_RUN/nginx/uwsgi;
  scgi_temp_path $TC_RUN/nginx/scgi;
  client_max_body_size 10m;
  upstream tc_auth  { server 127.0.0.1:$AUTH_PORT;  keepalive 32; }
  upstream tc_queue { server 127.0.0.1:$QUEUE_PORT; keepalive 32; }
  server {
    listen 127.0.0.1:$PROXY_PORT;
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_set_header Host \$http_host;
    proxy_set_header X-Forwarded-For \$remote_addr;
    proxy_set_header X-Forwarded-Proto http;
    proxy_read_timeout 120s;
    # no URI part on proxy_pass: the request line (with %2F inside parameters) goes through unchanged
    location /api/auth/  { proxy_pass http://tc_auth; }
    location /api/queue/ { proxy_pass http://tc_queue; }
  }
}
EOF
if ! alive "$TC_RUN/pids/nginx.pid"; then
  log "starting nginx on 127.0.0.1:$PROXY_PORT"
  nginx -p "$TC_RUN/nginx" -c "$TC_RUN/nginx/nginx.conf" -e "$TC_RUN/logs/nginx-error.log"
fi

wait_http "http://127.0.0.1:$AUTH_PORT/api/auth/v1/ping" 90 auth || { tail -30 "$TC_RUN/logs/auth.log"; exit 1; }
wait_http "http://127.0.0.1:$QUEUE_PORT/api/queue/v1/ping" 90 queue || { tail -30 "$TC_RUN/logs/queue.log"; exit 1; }
wait_http "$ROOT_URL/api/queue/v1/ping" 10 proxy
log "all up"
cat <<EOF

TASKCLUSTER_ROOT_URL=$ROOT_URL
TASKCLUSTER_CLIENT_ID=$TC_ROOT_CLIENT_ID
TASKCLUSTER_ACCESS_TOKEN=$TC_ACCESS_TOKEN
# (also in $TC_RUN/credentials.env; queue direct, without nginx: http://127.0.0.1:$QUEUE_PORT)
EOF
