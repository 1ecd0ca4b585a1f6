"""A free TCP port on 127.0.0.1 for a server a test starts (Datasette, Dagster, the site), and its stop."""
import socket
import subprocess


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(process: subprocess.Popen) -> None:
    """Ask a test's server to stop; kill it if it has not gone within 30 s."""
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
