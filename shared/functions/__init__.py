"""Function bindings (blueprints): thin translations from Functions triggers to the API and services."""
