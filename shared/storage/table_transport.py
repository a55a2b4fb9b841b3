"""The HTTP transport of the table clients: urllib3's connection pool, without `requests`.

Every storage round trip of the queue is a small table request (a row, a query page, a
transaction), and most of the time a request spends in this process is the client's own
Python, not the network: measured on Azurite, a point read costs 0.88 ms of CPU through
azure-core's `RequestsTransport`, of which `requests` (sessions, cookies, hooks, adapters,
header merging) is about 0.2 ms on top of urllib3, which it wraps. This transport hands the
request to urllib3 and the answer back to the pipeline, nothing more: table requests never
stream, follow redirects or carry files, so none of that is needed here. The pipeline's
policies (signing, retries, `RepeatSafeResend`) stay as they are; failures map to the same
azure-core errors `RequestsTransport` raises, which they rely on (a connection that could
not be made is a `ServiceRequestError`, one that dropped before its answer a
`ServiceResponseError`).

Blob and queue clients keep `RequestsTransport`: blobs stream, and queues are few.
"""

from __future__ import annotations

import certifi
import urllib3
from azure.core.exceptions import (ServiceRequestError, ServiceRequestTimeoutError, ServiceResponseError,
                                   ServiceResponseTimeoutError)
from azure.core.pipeline.transport import HttpTransport
from azure.core.rest._http_response_impl import HttpResponseImpl   # what azure-core's own transports build on
from requests.structures import CaseInsensitiveDict

CONNECT_SECONDS = 20.0
READ_SECONDS = 120.0   # a query page or a 100-row transaction; Azure's own limit per operation is 30 s


class TableTransport(HttpTransport):
    """One connection pool per account, shared by its table clients (thread-safe: urllib3's
    pool hands each thread its own connection)."""

    def __init__(self, pool_size: int) -> None:
        # certifi's CAs, as requests used: a host image without system certificates still
        # reaches Azure over HTTPS.
        self._pool = urllib3.PoolManager(num_pools=4, maxsize=pool_size, retries=False, ca_certs=certifi.where(),
                                         timeout=urllib3.Timeout(connect=CONNECT_SECONDS, read=READ_SECONDS))

    def __enter__(self) -> TableTransport:
        return self

    def __exit__(self, *exc) -> None:
        pass   # shared by every client of the account: closed only with the process

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def send(self, request, **kwargs) -> _Response:
        if getattr(request, "files", None):
            raise ValueError("TableTransport sends no multipart files (a table request never has any)")
        headers = dict(request.headers)
        if not request.data and request.method not in ("GET", "HEAD"):
            headers.setdefault("Content-Length", "0")   # as requests sent it (urllib3 leaves a DELETE without)
        try:
            answer = self._pool.urlopen(request.method, request.url, body=request.data, headers=headers,
                                        redirect=False, preload_content=True, enforce_content_length=True)
        except urllib3.exceptions.NewConnectionError as error:   # before its base class, the timeout
            raise ServiceRequestError(error, error=error) from error
        except urllib3.exceptions.ConnectTimeoutError as error:
            raise ServiceRequestTimeoutError(error, error=error) from error
        except urllib3.exceptions.ReadTimeoutError as error:
            raise ServiceResponseTimeoutError(error, error=error) from error
        except (urllib3.exceptions.ProtocolError, urllib3.exceptions.HTTPError) as error:
            # The request may have reached storage: RepeatSafeResend decides what to send again.
            raise ServiceResponseError(error, error=error) from error
        return _Response(request, answer)


class _Response(HttpResponseImpl):
    """urllib3's answer, read whole, as the pipeline's response."""

    def __init__(self, request, answer: urllib3.BaseHTTPResponse) -> None:
        headers = CaseInsensitiveDict(answer.headers)
        super().__init__(request=request, internal_response=answer, status_code=answer.status,
                         reason=answer.reason or "", headers=headers, content_type=headers.get("content-type"),
                         stream_download_generator=_no_stream)
        self._content = answer.data


def _no_stream(**kwargs):
    raise ValueError("TableTransport answers are read whole; nothing streams")
