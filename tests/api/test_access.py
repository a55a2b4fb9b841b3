"""The host and port a client signed: QUEUE_PUBLIC_URL, else the forwarded headers, else Host."""

from shared.api.access import signed_origin


def test_the_public_url_wins_over_anything_a_request_says():
    headers = {"host": "evil.example", "x-forwarded-host": "evil.example", "x-forwarded-port": "1"}
    assert signed_origin("http", "10.0.0.5:7071", headers, "https://queue.example.com") == ("queue.example.com", 443)
    assert signed_origin("http", "x", {}, "http://queue.example.com:8080/ignored") == ("queue.example.com", 8080)


def test_forwarded_headers_then_host_then_the_url():
    assert signed_origin("http", "10.0.0.5:7071", {"host": "10.0.0.5:7071"}) == ("10.0.0.5", 7071)
    assert signed_origin("http", "10.0.0.5:7071", {"host": "app.azurewebsites.net",
                                                   "x-forwarded-proto": "https"}) == ("app.azurewebsites.net", 443)
    assert signed_origin("http", "10.0.0.5:7071", {"host": "10.0.0.5:7071", "x-forwarded-host": "q.example:8443",
                                                   "x-forwarded-proto": "https"}) == ("q.example", 8443)
    assert signed_origin("http", "h", {"x-forwarded-host": "a.example, b.example", "x-forwarded-port": "444, 80",
                                       "x-forwarded-proto": "https"}) == ("a.example", 444)
    assert signed_origin("http", "Q.Example:80", {}) == ("q.example", 80)
    assert signed_origin("http", "[::1]:7071", {}) == ("::1", 7071)
    assert signed_origin("https", "h:notaport", {"x-forwarded-port": "x"}) == ("", 443)
    assert signed_origin("http", "h", {"host": "[::1"}) == ("", 80)      # malformed: matches no signature
