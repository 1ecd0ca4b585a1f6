"""A free TCP port on 127.0.0.1 for a server a test starts (Datasette, Dagster, the site)."""
import socket


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
