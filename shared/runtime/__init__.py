"""The process's threads: its pools, what runs periodically, and independent steps of one request run at once."""
