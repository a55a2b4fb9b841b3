"""CORS (shared/api/cors.py) through a real host, with raw HTTP as a browser sends it (the
official client makes no preflight): every service answers a preflight 200 without
credentials, with Taskcluster's headers, and puts `Access-Control-Allow-Origin: *` on its
ordinary answers, errors included."""

import pytest
import requests

from shared.api.cors import HEADERS

PREFLIGHT = {"Origin": "http://example.com", "Access-Control-Request-Method": "GET",
             "Access-Control-Request-Headers": "authorization,content-type"}


@pytest.mark.parametrize("path, allowed", [
    ("/queue/v1/task/fN1SbArXTPSVFNUvaOlinQ", "GET,PUT"),
    ("/queue/v1/claim-work/proj%2Flinux", "POST"),
    ("/index/v1/task/x", "GET,PUT,DELETE"),
    ("/secrets/v1/secret/a/b", "PUT,DELETE,GET"),
    ("/hooks/v1/hooks/g/h", "GET,PUT,POST,DELETE"),
    ("/worker-manager/v1/worker-pool/proj%2Flinux", "PUT,POST,DELETE,GET"),
    ("/object/v1/metadata/x", "GET"),
    ("/scheduler/v1/task-graph/fN1SbArXTPSVFNUvaOlinQ", "PUT"),
    ("/auth/v1/clients/", "GET"),
])
def test_a_preflight_is_answered_with_taskclusters_headers_without_credentials(server, path, allowed):
    response = requests.options(f"{server.root_url}/api{path}", headers=PREFLIGHT, timeout=10)
    assert response.status_code == 200
    assert {name: response.headers.get(name) for name in HEADERS} == HEADERS
    assert "Authorization" in response.headers["Access-Control-Allow-Headers"].split(",")
    assert set(response.headers["Allow"].split(",")) == set(allowed.split(","))


def test_a_preflight_for_a_path_nothing_serves_is_a_404_with_the_headers_all_the_same(server):
    response = requests.options(f"{server.root_url}/api/queue/v1/no/such/thing", headers=PREFLIGHT, timeout=10)
    assert (response.status_code, response.json()["code"]) == (404, "ResourceNotFound")
    assert response.headers["Access-Control-Allow-Origin"] == "*"


def test_ordinary_answers_carry_the_origin_header_errors_included(server):
    for url, status in ((f"{server.root_url}/api/index/v1/ping", 200),
                        (f"{server.root_url}/api/secrets/v1/secret/nobody-has-this", 403),   # anonymous
                        (f"{server.root_url}/api/worker-manager/v1/worker-pools", 403)):
        response = requests.get(url, headers={"Origin": "http://example.com"}, timeout=10)
        assert response.status_code == status and response.headers["Access-Control-Allow-Origin"] == "*", url
    signed = requests.get(server.url("/task-queues"), auth=server.auth, timeout=10)
    assert signed.status_code == 200 and signed.headers["Access-Control-Allow-Origin"] == "*"
