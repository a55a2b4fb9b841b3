"""Azure Storage's throttling, reproduced in front of Azurite.

Azurite serves every request it gets; Azure Storage refuses what goes beyond its scalability
targets (per table partition, per queue, per account) with `503 ServerBusy`, and near them
sometimes answers `500 OperationTimedOut` for a write it carried out. The proxy here sits
between the app and Azurite, enforces those targets divided by a scale factor (so that they
bite on one small machine), answers as Azure does, and counts what each partition served
and refused (see docs/throttling.md):

- `targets`: Azure's published figures, the budgets that enforce them, and the counts;
- `costs`: which partition a request lands on and what it costs there;
- `answers`: Azure's error answers, in each service's own format;
- `proxy`: the HTTP proxy itself (in this process);
- `process`: the proxy in a process of its own, as `make run THROTTLE=<scale>`, the tests
  and the benchmarks start it; `python -m devhost.throttling` is its command line.
"""
