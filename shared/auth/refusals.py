"""The message of an InsufficientScopes refusal, as Taskcluster words it: what was required,
what is missing, and the scopes the caller had. Used by the API's checks of a caller and by
a service acting in a role's name (a hook's task)."""

from __future__ import annotations

import json

from shared.auth.clients import Caller


def insufficient(caller: Caller, required) -> str:
    """Taskcluster's InsufficientScopes message, with the scopes the caller had."""
    had = held(caller)
    if caller.client_id is None:
        return ("This request requires Taskcluster credentials that satisfy the following scope expression:\n\n"
                f"```\n{shown(required)}\n```\n\nWithout credentials, a caller has the scopes:\n\n```\n{had}\n```")
    return (f"Client ID {caller.client_id} does not have sufficient scopes and is missing the following scopes:\n\n"
            f"```\n{shown(caller.scopes.missing(required))}\n```\n\n"
            "This request requires the client to satisfy the following scope expression:\n\n"
            f"```\n{shown(required)}\n```\n\nThe client has the scopes:\n\n```\n{had}\n```")


def held(caller: Caller) -> str:
    """The caller's scopes, one a line."""
    return "\n".join(caller.scopes.scopes) or "(none)"


def shown(expression) -> str:
    """A scope expression as the message shows it: a scope as it is, else indented JSON."""
    return expression if isinstance(expression, str) else json.dumps(expression, indent=2)
