from ratelimit.limiter import RateLimiter


def test_allows_up_to_the_limit_then_refuses() -> None:
    limiter = RateLimiter(limit=3, window=60.0)
    assert [limiter.allow("ada") for _ in range(5)] == [True, True, True, False, False]


def test_counts_each_client_on_its_own() -> None:
    limiter = RateLimiter(limit=1, window=60.0)
    assert limiter.allow("ada")
    assert limiter.allow("bob")
    assert not limiter.allow("ada")


def test_requests_older_than_the_window_no_longer_count(monkeypatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr("ratelimit.limiter.time.monotonic", lambda: clock[0])
    limiter = RateLimiter(limit=1, window=60.0)
    assert limiter.allow("ada")
    assert not limiter.allow("ada")
    clock[0] += 61.0
    assert limiter.allow("ada")
