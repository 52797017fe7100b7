"""Answers requests: a greeting for each client, at most ``LIMIT`` requests per client per minute."""

from ratelimit.limiter import RateLimiter

LIMIT = 5
limiter = RateLimiter(limit=LIMIT, window=60.0)


def handle(client: str) -> str:
    """The response for one request from ``client``: a greeting, or 429 once the client is over its limit."""
    if not limiter.allow(client):
        return "429 too many requests"
    return f"hello {client}"
