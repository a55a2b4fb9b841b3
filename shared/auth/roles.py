"""Role expansion: holding `assume:<roleId>` grants the role's scopes, recursively.

As in Taskcluster:
- a role id ending in `*` applies to every role id it is a prefix of (`repo:github.com/*`
  applies to `assume:repo:github.com/org/app`), and `<..>` in its scopes is replaced by the
  part the star matched (`project-admin:*` with `secrets:get:<..>/*` gives
  `secrets:get:zap/*` to `assume:project-admin:zap`);
- a held scope ending in `*` assumes every role it is a prefix of (`assume:repo:*`, and `*`
  assumes them all); if the matched part itself ends in that star, whatever follows `<..>`
  is covered by it and dropped (`assume:project-admin:ops*` gives `secrets:get:ops*`).
Expansion runs to a fixed point; it is refused past `MAX_SCOPES` (a parameterized role can
grow a scope without end).
"""

from __future__ import annotations

from bisect import bisect_left
from functools import lru_cache
from typing import Iterable

from shared.auth.scopes import normalize

ASSUME = "assume:"
PARAMETER = "<..>"
MAX_SCOPES = 10_000


class RoleExpansionTooLarge(ValueError):
    pass


class Roles:
    """The roles, indexed so that finding those a scope assumes costs a few look-ups, not a
    pass over every role (a role written is checked against every role's expansion: see
    `Realm.check_roles`; a pass over all of them made that quadratic in the roles)."""

    def __init__(self, roles: dict[str, Iterable[str]]) -> None:
        rules = {ASSUME + role_id: tuple(scopes) for role_id, scopes in roles.items()}
        self._rules = rules
        self._patterns = sorted(rules)   # for a starred scope: the patterns it is a prefix of
        self._starred = {pattern[:-1]: pattern for pattern in rules if pattern.endswith("*")}
        lengths = [len(prefix) for prefix in self._starred]
        self._prefix_lengths = range(min(lengths, default=0), max(lengths, default=-1) + 1)
        self.expand = lru_cache(maxsize=4096)(self._expand)

    def expand_all(self, scopes: Iterable[str]) -> tuple[str, ...]:
        """`scopes` with everything their roles grant, normalized (cached by input)."""
        return self.expand(tuple(sorted(set(scopes))))

    def _expand(self, scopes: tuple[str, ...]) -> tuple[str, ...]:
        found = set(scopes)
        waiting = [scope for scope in scopes if _may_assume(scope)]
        done: set[str] = set()
        while waiting:
            scope = waiting.pop()
            if scope in done:
                continue
            done.add(scope)
            for pattern in self._assumed(scope):
                matched = _match(scope, pattern)
                if matched is None:
                    continue
                for template in self._rules[pattern]:
                    new = _substitute(template, matched)
                    if new not in found:
                        found.add(new)
                        if _may_assume(new):
                            waiting.append(new)
            if len(found) > MAX_SCOPES:
                raise RoleExpansionTooLarge(f"role expansion grew past {MAX_SCOPES} scopes")
        return normalize(found)

    def _assumed(self, scope: str) -> set[str]:
        """The patterns `scope` may assume (`_match` decides): its own, the starred ones whose
        prefix it starts with, and, for a starred scope, every one it is a prefix of."""
        candidates = {scope} & self._rules.keys()
        for end in self._prefix_lengths[:max(0, len(scope) + 1 - self._prefix_lengths.start)]:
            pattern = self._starred.get(scope[:end])
            if pattern is not None:
                candidates.add(pattern)
        if scope.endswith("*"):
            prefix = scope[:-1]
            for at in range(bisect_left(self._patterns, prefix), len(self._patterns)):
                if not self._patterns[at].startswith(prefix):
                    break
                candidates.add(self._patterns[at])
        return candidates


def _may_assume(scope: str) -> bool:
    return scope.startswith(ASSUME) or (scope.endswith("*") and ASSUME.startswith(scope[:-1]))


def _match(scope: str, pattern: str) -> str | None:
    """The part of `scope` a role pattern's star matched ("" for a role without one), or
    None if `scope` does not assume the role."""
    starred_scope = scope.endswith("*")
    if pattern.endswith("*"):
        prefix = pattern[:-1]
        if scope.startswith(prefix):
            return scope[len(prefix):]
        return "*" if starred_scope and prefix.startswith(scope[:-1]) else None
    if scope == pattern or (starred_scope and pattern.startswith(scope[:-1])):
        return ""
    return None


def _substitute(template: str, matched: str) -> str:
    at = template.find(PARAMETER)
    if at < 0:
        return template
    if matched.endswith("*"):
        return template[:at] + matched
    return template[:at] + matched + template[at + len(PARAMETER):]
