"""The task-graph scheduler (seed 000): graphs created, extended, inspected, and created part by part."""
