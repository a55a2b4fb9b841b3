"""Which event broker the host publishes to, as `make run` says at start (never a secret).

The app takes EVENTS_AMQP_URL first, then Azure Service Bus (EVENTS_SERVICE_BUS_CONNECTION or
EVENTS_SERVICE_BUS_NAMESPACE: `shared/events/connect.py`); with none of them it publishes
nothing. `make run` starts its own RabbitMQ only when neither names a broker.
"""

from __future__ import annotations

from urllib.parse import urlsplit

AMQP = "EVENTS_AMQP_URL"
SERVICE_BUS = ("EVENTS_SERVICE_BUS_NAMESPACE", "EVENTS_SERVICE_BUS_CONNECTION")


def wants_local_broker(settings: dict[str, str]) -> bool:
    """No broker named: `--broker auto` starts RabbitMQ for the host."""
    return not any(settings.get(name) for name in (AMQP, *SERVICE_BUS))


def describe(settings: dict[str, str], started_here: bool = False) -> str:
    if settings.get(AMQP):
        where = urlsplit(settings[AMQP])
        origin = "RabbitMQ started by `make run`" if started_here else f"the AMQP broker {AMQP} names"
        return (f"==> events: {origin}, {where.hostname}:{where.port or 5672} "
                f"(`python -m taskq listen` prints them; the browser view follows them live)")
    if settings.get(SERVICE_BUS[0]):
        return f"==> events: Azure Service Bus {settings[SERVICE_BUS[0]]} ({SERVICE_BUS[0]})"
    if settings.get(SERVICE_BUS[1]):
        return f"==> events: Azure Service Bus of {SERVICE_BUS[1]}"
    return (f"==> events: none ({AMQP} and {SERVICE_BUS[0]} are unset): nothing is published, and the browser "
            "view polls instead of following events")
