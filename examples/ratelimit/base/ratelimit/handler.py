"""Answers requests: a greeting for each client."""


def handle(client: str) -> str:
    """The response for one request from ``client``."""
    return f"hello {client}"
