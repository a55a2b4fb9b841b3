"""The Function App: creates the app and registers the blueprints. Nothing more."""

import azure.functions as func

from shared.functions import (auth_http, dependency_resolver, graph_parts, hooks_http, hooks_scheduler, index_http,
                              object_http, provisioner, queue_http, scheduler_http, secrets_http, startup, sweeps,
                              ui_http, worker_manager_http)

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)
BLUEPRINTS = (queue_http.bp, scheduler_http.bp, object_http.bp, ui_http.bp, hooks_http.bp, index_http.bp,
              secrets_http.bp, worker_manager_http.bp, auth_http.bp, dependency_resolver.bp, graph_parts.bp, sweeps.bp,
              hooks_scheduler.bp, provisioner.bp, startup.bp)
for blueprint in BLUEPRINTS:
    app.register_functions(blueprint)
