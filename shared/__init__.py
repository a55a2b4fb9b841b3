"""All logic of the Queue: domain rules, storage adapters, application services, API.

Data flows one way: bindings -> api -> services -> domain, with storage beside the
services. Nothing here knows which Functions host runs it.
"""

# The release, as `/__version__` reports it (Dockerflow's version object).
__version__ = "1.0.0"
