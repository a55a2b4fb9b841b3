"""Dependencies: the dependency tracker (a new task's dependencies), the dependency resolver (what follows a resolution), its queue messages and the repair sweep."""
