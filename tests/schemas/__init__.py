"""Tests of the JSON schemas in schemas/v1, by the folder they sit in."""
