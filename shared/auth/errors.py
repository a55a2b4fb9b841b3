"""The two refusals of Taskcluster's auth model, each with its error code.

Messages say why, and never carry a secret: no access token, temporary key, expected MAC
or signature (a MAC the server computed for a forged request would let it be replayed).
"""


class AuthError(Exception):
    code = "AuthenticationFailed"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class AuthenticationFailed(AuthError):
    """The credentials, signature or certificate do not hold up (401)."""

    code = "AuthenticationFailed"


class InsufficientScopes(AuthError):
    """The caller is who it says, but its scopes do not satisfy the endpoint's (403)."""

    code = "InsufficientScopes"
