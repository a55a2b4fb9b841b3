"""Scope expression templates, in Taskcluster's notation (its API references use it):

- a string with `<name>` placeholders, each replaced by the parameter `name` (a string or
  a number): `"queue:resolve-task:<taskId>/<runId>"`;
- `{"AllOf": [...]}` and `{"AnyOf": [...]}` of templates;
- `{"for": "x", "in": "xs", "each": "...<x>..."}`: one scope per item of the list parameter
  `xs`, spliced into the AllOf or AnyOf around it;
- `{"if": "flag", "then": template}` (and `"else"`): by the boolean parameter `flag`.
"""

from __future__ import annotations

import re

_PLACEHOLDER = re.compile(r"<([a-zA-Z][a-zA-Z0-9_]*)>")


def parameters(template) -> set[str]:
    """The parameter names `template` needs to be rendered (a loop's own variable excluded)."""
    if template is None:
        return set()
    if isinstance(template, str):
        return set(_PLACEHOLDER.findall(template))
    if "AllOf" in template or "AnyOf" in template:
        return set().union(*(parameters(item) for item in template.get("AllOf", template.get("AnyOf"))))
    if "for" in template:
        return (parameters(template["each"]) - {template["for"]}) | {template["in"]}
    return {template["if"]} | parameters(template["then"]) | parameters(template.get("else"))


def render(template, params: dict):
    """The expression `template` stands for with `params`; None where an `if` without `else`
    is false. A missing or mistyped parameter is a KeyError or TypeError (a bug in the
    declaration, not in the request)."""
    if isinstance(template, str):
        return _PLACEHOLDER.sub(lambda match: _text(params[match.group(1)], match.group(1)), template)
    for operator in ("AllOf", "AnyOf"):
        if operator in template:
            items = []
            for item in template[operator]:
                rendered = render(item, params)
                if isinstance(rendered, list):
                    items.extend(rendered)
                elif rendered is not None:
                    items.append(rendered)
            return {operator: items}
    if "for" in template:
        values = params[template["in"]]
        if not isinstance(values, (list, tuple)):
            raise TypeError(f"scope parameter {template['in']!r} must be a list")
        return [render(template["each"], {**params, template["for"]: value}) for value in values]
    flag = params[template["if"]]
    if not isinstance(flag, bool):
        raise TypeError(f"scope parameter {template['if']!r} must be a boolean")
    if flag:
        return render(template["then"], params)
    return render(template["else"], params) if "else" in template else None


def _text(value, name: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise TypeError(f"scope parameter {name!r} must be a string or a number")
    return str(value)
