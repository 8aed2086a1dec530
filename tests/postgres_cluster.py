"""A throwaway PostgreSQL cluster for the tests: initdb into a temp dir, listen on loopback.

The tests never skip when PostgreSQL is missing: CI installs it (``.ci/run``), and a machine
without it fails with the command that installs it. As root, the server runs as the
unprivileged ``postgres`` user (PostgreSQL refuses to run as root).
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import psycopg

INSTALL_HINT = "apt-get update && apt-get install -y postgresql"


class PostgresNotFoundError(RuntimeError):
    """No PostgreSQL server binaries on this machine."""


def find_bindir() -> Path:
    """The folder holding ``initdb``, ``pg_ctl`` and ``postgres``; newest Debian version first."""
    candidates = [os.environ.get("PG_BINDIR", "")]
    which = shutil.which("pg_ctl")
    if which:
        candidates.append(str(Path(which).resolve().parent))
    candidates += sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]), reverse=True
    )
    for folder in candidates:
        if folder and all((Path(folder) / name).exists() for name in ("initdb", "pg_ctl")):
            return Path(folder)
    raise PostgresNotFoundError(
        f"PostgreSQL server binaries (initdb, pg_ctl) not found; install them with: {INSTALL_HINT}"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class PostgresCluster:
    """One cluster in a temp dir on ``127.0.0.1:<free port>``, trust auth, superuser ``orch``."""

    def __init__(self) -> None:
        self.bindir = find_bindir()
        self.root = Path(tempfile.mkdtemp(prefix="orch-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self._as_root = os.geteuid() == 0

    def _run(self, *args: str) -> None:
        command = list(args)
        if self._as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=120)

    def start(self) -> PostgresCluster:
        if self._as_root:
            shutil.chown(self.root, "postgres", "postgres")
        self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "orch",
            "--auth=trust",
            "--no-sync",
            "-E",
            "UTF8",
        )
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} "
            f"-c unix_socket_directories={self.root} -c fsync=off -c max_connections=200"
        )
        self._run(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.root / "server.log"),
            "-o",
            options,
            "-w",
            "start",
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                with psycopg.connect(self.dsn("postgres"), connect_timeout=2):
                    return self
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def dsn(self, database: str) -> str:
        return f"postgresql://orch@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty namespace on the cluster; returns a DSN whose tables land in it.

        A schema on the search path stands in for a database: as isolated for the store (every
        table name is unqualified) and about 50 times cheaper to create than ``CREATE DATABASE``.
        """
        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')  # type: ignore[arg-type]
        return f"{self.dsn('postgres')}?options=-csearch_path%3D{name}"

    def stop(self) -> None:
        try:
            self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
