"""A sliding-window rate limiter: at most ``limit`` requests per client in any ``window`` seconds."""

import time


class RateLimiter:
    def __init__(self, limit: int, window: float) -> None:
        self.limit = limit
        self.window = window
        self._hits: dict[str, list[float]] = {}

    def allow(self, client: str) -> bool:
        """Whether ``client`` may make one more request now; an allowed request is counted."""
        now = time.monotonic()
        recent = [t for t in self._hits.get(client, []) if now - t < self.window]
        if len(recent) >= self.limit:
            self._hits[client] = recent
            return False
        recent.append(now)
        self._hits[client] = recent
        return True
