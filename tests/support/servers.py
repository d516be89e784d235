"""Real PostgreSQL and Redis servers for the shared-store tests of ``ToolMendHistory`` (issue 31).

Each pytest worker starts its own servers, once per session, on 127.0.0.1 only, with their data
in a temporary directory and a port the system handed out (so the two xdist workers never share
a port or a directory): Debian's ``postgresql`` (``initdb`` and ``postgres`` from
``/usr/lib/postgresql/*/bin``; PostgreSQL refuses to run as root, so under root they run as the
``postgres`` user through ``runuser``) and ``redis-server`` (``apt-get install postgresql
redis-server``; ``.ci/run`` installs them). Durability is off (``fsync=off``, no snapshots):
these servers hold test data only, and start in about a second.

A test that cannot get its server skips, naming what is missing; under CI (``CI=true``) it
fails instead, so CI always runs them. Each test gets a database (PostgreSQL) or a key prefix
(Redis) of its own.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

__all__ = [
    "PostgresServer",
    "RedisServer",
    "ServerUnavailableError",
    "postgres_server",
    "redis_server",
    "running_postgres",
    "running_redis",
    "unavailable",
]

START_SECONDS = 60.0
"""How long a server may take to answer (it takes about a second; a busy machine, more)."""


def unavailable(what: str) -> NoReturn:
    """Skip the test (fail it under CI: CI must run these tests) because ``what`` is missing."""
    message = f"{what} (apt-get install postgresql redis-server; .ci/run installs them)"
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI: {message}")
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for(probe: str, port: int, process: subprocess.Popen[bytes], log: Path) -> None:
    """Wait until ``port`` on 127.0.0.1 takes connections; raise if ``process`` died."""
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{probe} exited: {log.read_text(errors='replace')[-2000:]}")
        with socket.socket() as client:
            if client.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"{probe} did not answer on 127.0.0.1:{port}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class PostgresServer:
    """A running PostgreSQL on 127.0.0.1 (user ``postgres``, no password)."""

    port: int

    def url(self, database: str = "postgres", driver: str = "psycopg") -> str:
        """A SQLAlchemy URL (``postgresql+psycopg://...``) for ``database``."""
        return f"postgresql+{driver}://postgres@127.0.0.1:{self.port}/{database}"

    def dsn(self, database: str = "postgres") -> str:
        """A libpq connection string, for psycopg."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database for one test; its name."""
        import psycopg

        name = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.dsn(), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name}")
        return name


@dataclass
class RedisServer:
    """A running redis-server on 127.0.0.1."""

    port: int

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    @staticmethod
    def new_prefix() -> str:
        """A key prefix of one test's own."""
        return f"t{uuid.uuid4().hex[:12]}:"


def _postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))
    return Path(found[-1]).parent if found else None


def _as_postgres(command: list[str]) -> list[str]:
    """``command`` run as the ``postgres`` user when we are root (PostgreSQL refuses root)."""
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", "postgres", "--", *command]


class ServerUnavailableError(Exception):
    """No server can be started here; the message says what is missing."""


@contextlib.contextmanager
def running_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server on 127.0.0.1 for the ``with`` block (:class:`ServerUnavailableError` if there
    is none to start)."""
    bin_dir = _postgres_bin()
    if bin_dir is None:
        raise ServerUnavailableError("no PostgreSQL server binaries in /usr/lib/postgresql/*/bin")
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        raise ServerUnavailableError("PostgreSQL cannot run as root and runuser is missing")
    home = Path(tempfile.mkdtemp(prefix="toolmend-pg-"))
    data, log = home / "data", home / "log"
    try:
        if os.geteuid() == 0:
            shutil.chown(home, "postgres", "postgres")
        initdb = [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust"]
        done = subprocess.run(
            _as_postgres([*initdb, "--no-sync", "-E", "UTF8", "--locale", "C"]),
            capture_output=True,
            check=False,
        )
        if done.returncode != 0:
            raise ServerUnavailableError(
                f"initdb failed: {done.stderr.decode(errors='replace')[-500:]}"
            )
        port = _free_port()
        settings = {
            "listen_addresses": "127.0.0.1",
            "port": str(port),
            "unix_socket_directories": str(home),
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "200",
        }
        options = [part for name, value in settings.items() for part in ("-c", f"{name}={value}")]
        with log.open("wb") as out:
            process = subprocess.Popen(
                _as_postgres([str(bin_dir / "postgres"), "-D", str(data), *options]),
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        try:
            _wait_for("postgres", port, process, log)
            _ready(PostgresServer(port))
            yield PostgresServer(port)
        finally:
            _stop(process)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _ready(server: PostgresServer) -> None:
    """Wait until the server accepts a login (it listens a moment before it does)."""
    import psycopg

    deadline = time.monotonic() + START_SECONDS
    while True:
        try:
            with psycopg.connect(server.dsn(), connect_timeout=5):
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@contextlib.contextmanager
def running_redis() -> Iterator[RedisServer]:
    """A redis-server on 127.0.0.1 for the ``with`` block (:class:`ServerUnavailableError` if there is
    none to start)."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise ServerUnavailableError("no redis-server on PATH")
    home = Path(tempfile.mkdtemp(prefix="toolmend-redis-"))
    log = home / "log"
    port = _free_port()
    command = [binary, "--bind", "127.0.0.1", "--port", str(port), "--dir", str(home)]
    command += ["--save", "", "--appendonly", "no", "--protected-mode", "yes"]
    try:
        with log.open("wb") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        try:
            _wait_for("redis-server", port, process, log)
            yield RedisServer(port)
        finally:
            _stop(process)
    finally:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """This worker's PostgreSQL server (skips, or fails under CI, when there is none)."""
    pytest.importorskip("psycopg")
    with contextlib.ExitStack() as stack:
        try:
            server = stack.enter_context(running_postgres())
        except ServerUnavailableError as error:
            unavailable(str(error))
        yield server


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    """This worker's redis-server (skips, or fails under CI, when there is none)."""
    pytest.importorskip("redis")
    with contextlib.ExitStack() as stack:
        try:
            server = stack.enter_context(running_redis())
        except ServerUnavailableError as error:
            unavailable(str(error))
        yield server
