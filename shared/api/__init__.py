"""The HTTP API, declared as data: endpoints, validation, errors. Knows nothing of Azure."""
