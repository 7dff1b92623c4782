"""A real MongoDB wire-protocol server for the tests: SecantusDB (MongoDB's WiredTiger engine behind the
MongoDB wire protocol), started on a free loopback port, answering ``ping`` before a test gets its URI.

SecantusDB is GPL and a test server only: ``make mongo-server`` installs it into its own virtualenv
(``.venv-mongo``) and nothing in the project imports it; the tests talk to it over a socket with pymongo, as
the store does to a real MongoDB. ``make test`` and ``make test-fast`` install it first and set
``TRADECRAFT_TEST_MONGO=require``, so there a missing server fails the MongoDB tests instead of skipping them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pymongo
from e2e_helpers import ROOT, free_port
from pymongo.errors import PyMongoError

SERVER_COMMAND = ROOT / ".venv-mongo" / "bin" / "secantusd-py"
URI_VARIABLE = "TRADECRAFT_TEST_MONGO_URI"
"""Set it to test against another MongoDB (``mongodb://HOST:PORT``); then no server is started."""
REQUIRE_VARIABLE = "TRADECRAFT_TEST_MONGO"
"""``require``: a missing server is a failure, not a skip (the Makefile's test targets set it)."""
INSTALL_HINT = (
    "run `make mongo-server` (make test and make test-fast do it) to install the test MongoDB server"
)
CACHE_SIZE = "64M"
"""WiredTiger's cache (its default is 1 GB): the tests' databases are tiny and each xdist worker runs one."""


class MongoWireServer:
    """``secantusd-py`` in a subprocess with its data (and log) in ``folder``; :meth:`stop` ends it."""

    def __init__(self, folder: Path, command: Path = SERVER_COMMAND) -> None:
        self.folder = folder
        self.command = command
        self.port = 0
        self.log_path = folder / "secantusd.log"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"mongodb://127.0.0.1:{self.port}"

    def start(self, timeout: float = 30, attempts: int = 3) -> MongoWireServer:
        """Start on a free port and wait for ``ping``; another process may take the port between our probe
        and the server's bind, so a server that exits at once is started again on another port."""
        for _attempt in range(attempts):
            self.port = free_port()
            data = self.folder / f"data-{self.port}"
            with self.log_path.open("ab") as log:
                self.proc = subprocess.Popen(
                    [
                        str(self.command),
                        "--host",
                        "127.0.0.1",
                        "--port",
                        str(self.port),
                        "--storage-path",
                        str(data),
                        "--cache-size",
                        CACHE_SIZE,
                        "--log-level",
                        "WARNING",
                    ],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            if self._wait_for_ping(timeout):
                return self
            shutil.rmtree(data, ignore_errors=True)
        raise RuntimeError(f"the MongoDB test server did not start ({self.command}):\n{self.log()}")

    def _wait_for_ping(self, timeout: float) -> bool:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            client: pymongo.MongoClient[dict[str, object]] = pymongo.MongoClient(
                self.uri, serverSelectionTimeoutMS=300, connectTimeoutMS=300
            )
            try:
                client.admin.command("ping")
                return True
            except PyMongoError:
                time.sleep(0.1)
            finally:
                client.close()
        self.stop()
        raise RuntimeError(f"the MongoDB test server did not answer ping in {timeout} s:\n{self.log()}")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""


def server_required() -> bool:
    return os.environ.get(REQUIRE_VARIABLE, "").lower() == "require"


def database_uri(base_uri: str, database: str) -> str:
    """``base_uri`` (``mongodb://HOST:PORT[/DB][?OPTIONS]``) naming ``database`` instead of its own."""
    base, _, query = base_uri.partition("?")
    base = base.rstrip("/")
    if base.count("/") > 2:  # the URI names a database: replace it
        base = base.rsplit("/", 1)[0]
    return f"{base}/{database}" + (f"?{query}" if query else "")


def drop_database(uri: str) -> None:
    client: pymongo.MongoClient[dict[str, object]] = pymongo.MongoClient(uri)
    try:
        database = client.get_default_database().name
        client.drop_database(database)
    finally:
        client.close()
