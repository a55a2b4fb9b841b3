"""The Function App: creates the app and registers the blueprints. Nothing more."""

import azure.functions as func

from shared.functions import queue_http

app = func.FunctionApp(http_auth_level=func.AuthLevel.ANONYMOUS)
app.register_functions(queue_http.bp)
