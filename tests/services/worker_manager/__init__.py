"""Tests of shared/services/worker_manager: registration, the providers, and the local stand-in for ARM."""
