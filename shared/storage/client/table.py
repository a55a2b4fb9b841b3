"""One table of a storage account: the calls the adapters make, sent straight over HTTP.

The same calls as azure-data-tables' `TableClient` (the in-memory fake has them too), without
its pipeline. Nearly every step of the Queue is a few small table requests, and the host's
CPU, not storage, bounds a lifecycle on a small machine: through the SDK a point read or an
upsert cost 0.77 ms of the host's CPU on Azurite (policies, request building, its serializer,
urllib3), sent here 0.19 ms, and answered in 0.66 ms instead of 1.47.

Kept from the SDK: the value types both ways (`entities`), the filter parameters (`filters`),
and its errors: a missing row is ResourceNotFoundError, an existing one ResourceExistsError, one
changed since its ETag ResourceModifiedError, anything else HttpResponseError with the
service's `error_code`. A delete of a missing row is no error, as there.

Requests safe to repeat (reads, upserts, deletes, transactions of those, table creation)
are sent again when their answer is lost or storage answers busy; an insert or a conditional
write is not: its caller settles it (`lost_responses`), and a transaction holding either
is settled here (`lost_responses.transaction`).
"""

from __future__ import annotations

import json
from typing import Iterator, NamedTuple
from urllib.parse import quote, urlencode

from azure.core import MatchConditions
from azure.core.exceptions import (ClientAuthenticationError, HttpResponseError, ResourceExistsError,
                                   ResourceModifiedError, ResourceNotFoundError)
from azure.data.tables import UpdateMode

from shared.storage.client import transactions
from shared.storage.client.connections import Answer, Connections, send_repeating
from shared.storage.client.entities import Row, from_json, row_path, to_json
from shared.storage.client.filters import substitute
from shared.storage.client import lost_responses
from shared.storage.client.table_endpoint import API_VERSION, TableEndpoint

_HEADERS = {"DataServiceVersion": "3.0", "MaxDataServiceVersion": "3.0;NetFx",
            "Accept": "application/json;odata=minimalmetadata"}
_JSON = "application/json"
_BY_CODE = {
    "ConditionNotMet": ResourceModifiedError, "UpdateConditionNotSatisfied": ResourceModifiedError,
    "ResourceNotFound": ResourceNotFoundError, "TableNotFound": ResourceNotFoundError,
    "EntityNotFound": ResourceNotFoundError, "ResourceAlreadyExists": ResourceExistsError,
    "TableAlreadyExists": ResourceExistsError, "EntityAlreadyExists": ResourceExistsError,
    "InvalidAuthenticationInfo": ClientAuthenticationError, "AuthenticationFailed": ClientAuthenticationError,
}
_BY_STATUS = {404: ResourceNotFoundError, 409: ResourceExistsError, 412: ResourceModifiedError,
              401: ClientAuthenticationError, 403: ClientAuthenticationError}


class Sent(NamedTuple):
    """A request as the operation counter sees it (benchmarks label each by its URL)."""
    method: str
    url: str
    table: str = ""   # a transaction's table (its URL names none)


class Table:
    def __init__(self, endpoint: TableEndpoint, connections: Connections, name: str, counter) -> None:
        self.table_name = name
        self._endpoint, self._connections, self._counter = endpoint, connections, counter
        self._path = f"{endpoint.base_path}/{name}"

    def create_table(self) -> None:
        """ResourceExistsError if it exists."""
        self._expect((201, 204), self._send("POST", f"{self._endpoint.base_path}/Tables",
                                            body=json.dumps({"TableName": self.table_name}).encode(),
                                            headers={"Prefer": "return-no-content"}))

    def get_entity(self, partition_key: str, row_key: str, select: list[str] | None = None) -> Row:
        answer = self._expect((200,), self._send("GET", row_path(self._path, partition_key, row_key),
                                                 query={"$select": ",".join(select)} if select else None))
        return from_json(json.loads(answer.data), answer.headers.get("ETag"))

    def query_entities(self, query_filter: str, parameters: dict | None = None, select: list[str] | None = None,
                       results_per_page: int | None = None) -> Iterator[Row]:
        """Every row matching, in key order, a page at a time as they are iterated."""
        query = {"$filter": substitute(query_filter, parameters)} if query_filter else {}
        if select:
            query["$select"] = ",".join(select)
        if results_per_page:
            query["$top"] = str(results_per_page)
        while True:
            answer = self._expect((200,), self._send("GET", self._path + "()", query=query))
            yield from (from_json(item) for item in json.loads(answer.data)["value"])
            partition = answer.headers.get("x-ms-continuation-NextPartitionKey")
            if partition is None:
                return
            query["NextPartitionKey"] = partition
            query["NextRowKey"] = answer.headers.get("x-ms-continuation-NextRowKey") or ""

    def list_entities(self) -> Iterator[Row]:
        return self.query_entities("")

    def create_entity(self, entity: dict) -> dict:
        """ResourceExistsError if the row exists."""
        return _written(self._expect((201, 204), self._send(
            "POST", self._path, body=to_json(entity).encode(), headers={"Prefer": "return-no-content"})))

    def update_entity(self, entity: dict, mode: UpdateMode = UpdateMode.MERGE, etag: str | None = None,
                      match_condition: MatchConditions | None = None) -> dict:
        """A merge (or replacement) of an existing row, if unchanged since `etag` when asked:
        ResourceNotFoundError if it is missing, ResourceModifiedError if it changed."""
        if_match = etag if match_condition == MatchConditions.IfNotModified else "*"
        return _written(self._expect((204,), self._send(
            _VERB[mode], row_path(self._path, entity["PartitionKey"], entity["RowKey"]),
            body=to_json(entity).encode(), headers={"If-Match": if_match})))

    def upsert_entity(self, entity: dict, mode: UpdateMode = UpdateMode.MERGE) -> dict:
        return _written(self._expect((204,), self._send(
            _VERB[mode], row_path(self._path, entity["PartitionKey"], entity["RowKey"]),
            body=to_json(entity).encode())))

    def delete_entity(self, partition_key: str, row_key: str, etag: str | None = None,
                      match_condition: MatchConditions | None = None) -> None:
        """Deleted, or missing already; ResourceModifiedError if it changed since `etag` when asked."""
        if_match = etag if match_condition == MatchConditions.IfNotModified else "*"
        answer = self._send("DELETE", row_path(self._path, partition_key, row_key), headers={"If-Match": if_match})
        if answer.status != 404:
            self._expect((204,), answer)

    def submit_transaction(self, operations: list[tuple]) -> list[dict]:
        """Operations on rows of one partition, applied all or none (see `transactions`); one
        that creates or conditionally updates rows is settled, never repeated blindly, when
        its answer is uncertain (see `lost_responses.transaction`)."""
        return lost_responses.transaction(self, operations, self._transaction)

    def _transaction(self, operations: list[tuple], repeatable: bool) -> list[dict]:
        content_type, body = transactions.body(self._endpoint.origin + self._path, API_VERSION, operations)
        answer = self._send("POST", f"{self._endpoint.base_path}/$batch", body=body, content_type=content_type,
                            repeatable=repeatable, table=self.table_name)
        return transactions.outcome(answer.status, answer.reason, answer.data)

    def _send(self, method: str, path: str, query: dict | None = None, body: bytes | None = None,
              headers: dict | None = None, content_type: str = _JSON, repeatable: bool | None = None,
              table: str = "") -> Answer:
        """One call: its request, sent again while storage is busy or the answer is lost,
        if that is safe to repeat (`repeatable`; by default, as `lost_responses.unrepeatable` says)."""
        headers = {**_HEADERS, **(headers or {})}
        content_type = content_type if body is not None else ""
        if content_type:
            headers["Content-Type"] = content_type
        target = path + _query(query, self._endpoint.sas)
        self._counter.on_request(Sent(method, self._endpoint.origin + target, table))
        if body is None and method != "GET":
            body = b""   # a DELETE says Content-Length: 0, as the SDK's did
        return send_repeating(self._connections, method, target, body,
                              lambda: {**headers, **self._endpoint.headers(method, path, content_type)},
                              repeatable=repeatable if repeatable is not None else
                              not lost_responses.unrepeatable(method, path, headers.get("If-Match", "*")))

    def _expect(self, statuses: tuple[int, ...], answer: Answer) -> Answer:
        if answer.status in statuses:
            return answer
        raise _refusal(answer, self.table_name)


_VERB = {UpdateMode.MERGE: "PATCH", UpdateMode.REPLACE: "PUT"}


def _query(query: dict | None, sas: str) -> str:
    text = urlencode(query, quote_via=quote) if query else ""
    text = "&".join(part for part in (text, sas) if part)
    return "?" + text if text else ""


def _written(answer: Answer) -> dict:
    return {"etag": answer.headers.get("ETag")}


def _refusal(answer: Answer, table_name: str) -> HttpResponseError:
    """Storage's refusal as the SDK raises it."""
    code, message = answer.headers.get("x-ms-error-code"), answer.data[:500].decode(errors="replace")
    try:
        error = json.loads(answer.data)["odata.error"]
        code, message = error.get("code") or code, error.get("message", {}).get("value") or message
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    kind = _BY_CODE.get(code) or _BY_STATUS.get(answer.status, HttpResponseError)
    refusal = kind(message=f"{table_name}: {message}\nErrorCode:{code}")
    refusal.status_code, refusal.reason, refusal.error_code = answer.status, answer.reason, code
    return refusal
