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


def wait_for_http(url: str, process: subprocess.Popen, timeout_s: float = 120.0) -> None:
    """Poll ``url`` until it answers 200; fail at once if ``process`` has exited, or after ``timeout_s``."""
    import time

    import httpx

    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with status {process.returncode} before {url} answered")
        try:
            if httpx.get(url, timeout=5.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not answer within {timeout_s:g} s")
        time.sleep(0.2)
