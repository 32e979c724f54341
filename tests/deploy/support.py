"""Processes for the deployment tests: tab replicas and a real nginx in front of them.

Each replica is ``python -m docs.examples.browser_tabs`` with its own headless
Chromium, all sharing one redis-server and one ``HANDLES_SECRET``. nginx (the
Debian package) runs in the foreground from a config written to a temporary
folder, logging for every request the tab id it hashed on and the replica it
chose.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..listening import listens

__all__ = ["NGINX_CONF", "Nginx", "Replica", "free_port", "nginx", "replica"]

ROOT = Path(__file__).resolve().parents[2]
SECRET = "deploy-test-secret-" + "d" * 32
WAIT = 60.0

NGINX_CONF = """\
worker_processes 1;
error_log {folder}/error.log warn;
pid {folder}/nginx.pid;
events {{ worker_connections 512; }}
http {{
    log_format routed '$http_mcp_param_tab_id|$upstream_addr|$status';
    access_log {folder}/access.log routed;
    client_body_temp_path {folder}/body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;

    upstream tabs {{
        # Every call of one tab goes to one replica; a replica that goes away
        # moves only its own tabs (consistent hashing, ketama).
        hash $http_mcp_param_tab_id consistent;
{servers}
    }}

    server {{
        listen 127.0.0.1:{port};
        location /mcp {{
            proxy_pass http://tabs;
            proxy_http_version 1.1;
            proxy_set_header Host $host;
            proxy_buffering off;              # progress arrives as SSE
            proxy_next_upstream error timeout; # a dead replica: try the next
            proxy_connect_timeout 2s;
            proxy_read_timeout 60s;
        }}
    }}
}}
"""
"""The configuration docs/routing.md shows, with paths and ports to fill in."""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    """Until ``process`` itself listens on ``port`` (not another process that took it)."""
    deadline = time.monotonic() + WAIT
    while process.poll() is None and time.monotonic() < deadline:
        if listens(process.pid, port):
            return
        time.sleep(0.1)
    tail = log.read_text(errors="replace")[-3000:]
    raise RuntimeError(f"port {port} did not open (exit {process.poll()}):\n{tail}")


@dataclass
class Replica:
    """One tab server process."""

    port: int
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def lines(self, text: str) -> int:
        """How many lines of the replica's log contain ``text``."""
        return sum(text in line for line in self.log.read_text(errors="replace").splitlines())

    def kill(self) -> None:
        """SIGKILL: the replica dies without closing anything, as in a crash."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=WAIT)


@contextmanager
def replica(folder: Path, redis_url: str, namespace: str, *args: str) -> Iterator[Replica]:
    port = free_port()
    log = folder / f"replica-{port}.log"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", str(folder)),
        "HANDLES_SECRET": SECRET,
        "HANDLES_PRINCIPAL": "deploy-test",
        "PYTHONUNBUFFERED": "1",
    }
    command = [
        sys.executable,
        "-m",
        "docs.examples.browser_tabs",
        "--port",
        str(port),
        "--redis",
        redis_url,
        "--namespace",
        namespace,
        *args,
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out
        )
    try:
        _wait_for_port(port, process, log)
        yield Replica(port, process, log)
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=WAIT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@dataclass
class Nginx:
    port: int
    folder: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def routes(self) -> list[tuple[str, str, str]]:
        """``(tab id or "-", upstream address(es), status)`` per request so far."""
        rows = []
        for line in (self.folder / "access.log").read_text().splitlines():
            tab, upstream, status = line.split("|")
            rows.append((tab, upstream, status))
        return rows


@contextmanager
def nginx(folder: Path, upstreams: Sequence[str]) -> Iterator[Nginx]:
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    assert Path(binary).exists(), "nginx is missing: apt-get install -y nginx"
    port = free_port()
    servers = "\n".join(
        f"        server {address} max_fails=1 fail_timeout=30s;" for address in upstreams
    )
    conf = folder / "nginx.conf"
    conf.write_text(NGINX_CONF.format(folder=folder, port=port, servers=servers))
    log = folder / "nginx.out"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [binary, "-p", str(folder), "-c", str(conf), "-g", "daemon off;"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
        )
    try:
        _wait_for_port(port, process, log)
        yield Nginx(port, folder)
    finally:
        process.terminate()
        process.wait(timeout=WAIT)
