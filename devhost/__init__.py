"""A local stand-in for the Azure Functions host, in the spirit of Azurite.

The Core Tools (`func`) cannot be installed here, so this host reads the same app
(`function_app.app`, v2 programming model) and the same `host.json`, and calls the same
user functions Azure would call with real `azure.functions` request objects: HTTP
triggers through a threaded HTTP server, queue triggers by polling storage queues (with
poison queues), timer triggers on their NCRONTAB schedules.
"""
