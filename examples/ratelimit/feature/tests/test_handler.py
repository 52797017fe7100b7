from ratelimit import handler
from ratelimit.limiter import RateLimiter


def test_greets_the_client(monkeypatch) -> None:
    monkeypatch.setattr(handler, "limiter", RateLimiter(limit=2, window=60.0))
    assert handler.handle("ada") == "hello ada"


def test_refuses_a_client_over_its_limit(monkeypatch) -> None:
    monkeypatch.setattr(handler, "limiter", RateLimiter(limit=2, window=60.0))
    assert [handler.handle("ada") for _ in range(3)] == ["hello ada", "hello ada", "429 too many requests"]
