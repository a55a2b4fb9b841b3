"""Storage outcomes the services act on, so that they never import Azure's exceptions."""


class AlreadyExists(Exception):
    """An insert found a row with the same keys."""


class ChangedSinceRead(Exception):
    """A conditional write lost: the row's ETag moved on since it was read. `fresh`: the row
    as read since, when the writer that lost has read it already."""

    def __init__(self, *args, fresh=None) -> None:
        super().__init__(*args)
        self.fresh = fresh


class Closed(Exception):
    """Rows were to be added to an owner closed to new ones (a sealed group's members)."""
