"""The deployment path: the package `func azure functionapp publish` uploads, built and checked here."""
