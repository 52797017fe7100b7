from ratelimit.handler import handle


def test_greets_the_client() -> None:
    assert handle("ada") == "hello ada"
