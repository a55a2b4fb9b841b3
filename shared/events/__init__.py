"""Publishing the Queue's events (seed 004) on a message bus: the port and its adapters."""
