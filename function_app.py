"""The Function App: creates the app and registers the blueprints. Nothing more."""

import azure.functions as func

from shared.functions import (claim_resolver, deadline_resolver, dependency_resolver, expiration, graph_parts,
                              object_http, provisioner, queue_http, repair_sweep, scheduler_http, startup, ui_http,
                              worker_manager_http)

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)
BLUEPRINTS = (queue_http.bp, scheduler_http.bp, object_http.bp, ui_http.bp, worker_manager_http.bp, dependency_resolver.bp,
              graph_parts.bp, claim_resolver.bp, deadline_resolver.bp, repair_sweep.bp, expiration.bp, provisioner.bp,
              startup.bp)
for blueprint in BLUEPRINTS:
    app.register_functions(blueprint)
