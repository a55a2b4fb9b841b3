"""Task groups: membership, sealing, resolution, listing, and the browser's feeds of a group's events."""
