"""Artifacts and the object service that holds their bytes."""
