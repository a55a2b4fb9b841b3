"""The browser view: static pages under `/api/ui/` that draw a task group as its graph."""
