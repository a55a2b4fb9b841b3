"""Who is calling and what they may do, in Taskcluster's model; no storage, no domain.

- `scopes`: scope patterns (a final `*` matches any suffix) and AllOf/AnyOf expressions;
- `expressions`: Taskcluster's scope expression templates (`<param>`, `for/in/each`, `if/then`);
- `roles`: role expansion through `assume:<roleId>` (starred and parameterized roles too);
- `certificates`: the `ext` of a Hawk request (temporary credentials, `authorizedScopes`);
- `clients`: the clients a deployment trusts (`STATIC_CLIENTS`), its roles and anonymous scopes;
- `hawk`: verifying a Hawk `Authorization` header or a bewit (HMAC-SHA256), against the
  public URL the client signed.
"""
