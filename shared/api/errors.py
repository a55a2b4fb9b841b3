"""Errors in Taskcluster's shape: `{code, message, requestInfo}` with Taskcluster's statuses."""

from __future__ import annotations

from shared.auth.errors import AuthError
from shared.domain.errors import QueueError
from shared.domain.timestamps import to_iso, utcnow
from shared.api.http import ApiResponse

STATUS_BY_CODE = {
    "InputValidationError": 400,
    "InputError": 400,
    "InvalidRequestArguments": 400,
    "MalformedPayload": 400,
    "AuthenticationFailed": 401,
    "InsufficientScopes": 403,
    "ResourceNotFound": 404,
    "NoMatchingMethod": 406,
    "RequestConflict": 409,
    "ResourceExpired": 410,
    "PayloadTooLarge": 413,
    "InternalServerError": 500,
    "ServiceUnavailable": 503,   # not Taskcluster's: the event bus behind a feed is down
}


class InvalidRequestArguments(QueueError):
    """A URL parameter or query option breaks its pattern."""

    code = "InvalidRequestArguments"


def error_response(error: QueueError | AuthError, endpoint: str, params: dict, payload: object) -> ApiResponse:
    body = {
        "code": error.code,
        "message": error.message,
        "requestInfo": {"method": endpoint, "params": params, "payload": payload, "time": to_iso(utcnow())},
    }
    return ApiResponse(STATUS_BY_CODE.get(error.code, 500), body)
