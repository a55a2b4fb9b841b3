"""Errors the domain and services raise; the API turns each into Taskcluster's error shape.

Each class carries the Taskcluster error `code`; the HTTP status belongs to the API layer.
"""


class QueueError(Exception):
    code = "InternalServerError"

    def __init__(self, message: str, **details):
        super().__init__(message)
        self.message = message
        self.details = details


class InvalidInput(QueueError):
    """The request body or a parameter breaks the schema (Taskcluster's InputValidationError)."""

    code = "InputValidationError"


class InputError(InvalidInput):
    """A well-formed request breaks a rule its schema cannot say, or cannot be acted on as
    asked: createTask's rules between fields and its dependencies, an artifact of a run that
    does not take one, a provider that does not exist or does not do this, a proof of
    identity that does not hold. Taskcluster answers these InputError (400)."""

    code = "InputError"


class MalformedPayload(QueueError):
    """The request body is not JSON at all."""

    code = "MalformedPayload"


class NotFound(QueueError):
    code = "ResourceNotFound"


class Conflict(QueueError):
    """The request contradicts the stored state (Taskcluster's RequestConflict)."""

    code = "RequestConflict"


class TooLarge(QueueError):
    code = "PayloadTooLarge"


class Expired(QueueError):
    """The record exists but its `expires` has passed (it is deleted by a later sweep)."""

    code = "ResourceExpired"


class NoMatchingMethod(QueueError):
    """None of the methods a caller proposed is one the service offers."""

    code = "NoMatchingMethod"
