"""A throwaway PostgreSQL server for the shared store's tests and benchmarks/push_time.py.

initdb and pg_ctl from the installed server (Debian: /usr/lib/postgresql/N/bin) in a temporary
directory, listening on 127.0.0.1 at a free port with password (SCRAM) authentication; stopped
and deleted when the block ends; a test may stop and start it in between (a server going away
mid-run). initdb refuses to run as root, so under root the server runs as the `postgres` user that
Debian's package creates.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

USER = "arraybench"


class Unavailable(Exception):
    """No server can start on this machine; the message says why, on one line."""


@dataclass(frozen=True)
class Server:
    host: str
    port: int
    user: str
    password: str
    # pg_ctl ACTION on this server's data directory: "stop" (at once, as a crash would) or "start".
    control: Callable[[str], None] = field(default=lambda action: None, repr=False, compare=False)

    def stop(self) -> None:
        self.control("stop")

    def start(self) -> None:
        self.control("start")

    def url(self, database: str = "postgres") -> str:
        """A database's URL, without the password: libpq reads that from PGPASSWORD or a pgpass file."""
        return f"postgresql://{self.user}@{self.host}:{self.port}/{database}"


def server_bin() -> Path | None:
    """The directory holding initdb and pg_ctl: Debian's newest major version, else the one on PATH."""
    found = [p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/initdb") if p.parts[-3].isdigit()]
    if found:
        return max(found, key=lambda p: int(p.parts[-2]))
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _run(what: str, command: list[str | Path], cwd: Path) -> None:
    done = subprocess.run([str(c) for c in command], cwd=cwd, capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip() or f"exit code {done.returncode}").splitlines()[-1]
        raise Unavailable(f"{what} failed: {said}")


@contextmanager
def throwaway_server(*settings: str) -> Iterator[Server]:
    """A running server for the block; `settings` are postgres `-c name=value` options (e.g. fsync=off)."""
    bin_dir = server_bin()
    if bin_dir is None:
        raise Unavailable("initdb not found (make test installs Debian's postgresql)")
    as_user: list[str | Path] = []
    owner = None
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            raise Unavailable("running as root and no 'postgres' user to run the server as "
                              "(initdb refuses root)") from None
        runuser = shutil.which("runuser")
        if runuser is None:
            raise Unavailable("running as root without runuser to start the server as 'postgres' "
                              "(initdb refuses root)")
        as_user = [runuser, "-u", "postgres", "--"]
    tmp = Path(tempfile.mkdtemp(prefix="arraybench-pg-"))
    data, pwfile, log = tmp / "data", tmp / "pwfile", tmp / "server.log"
    password = f"pw-{secrets.token_hex(16)}"
    try:
        pwfile.write_text(password + "\n")
        if owner is not None:
            for path in (tmp, pwfile):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        _run("initdb", [*as_user, bin_dir / "initdb", "-D", data, "-U", USER, "--pwfile", pwfile,
                        "--auth=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"], tmp)
        pwfile.unlink()
        port = free_port()
        options = " ".join([f"-c listen_addresses=127.0.0.1 -p {port} -k {tmp}", *(f"-c {s}" for s in settings)])
        pg_ctl = [*as_user, bin_dir / "pg_ctl", "-D", data]
        start = [*pg_ctl, "-l", log, "-w", "-t", "60", "-o", options, "start"]
        stop = [*pg_ctl, "-m", "immediate", "-w", "stop"]
        try:
            _run("pg_ctl start", start, tmp)
        except Unavailable as e:
            last = log.read_text(errors="replace").strip().splitlines()[-1:] if log.exists() else []
            raise Unavailable(f"{e}{': ' + last[0] if last else ''}") from None

        def control(action: str) -> None:
            _run(f"pg_ctl {action}", {"start": start, "stop": stop}[action], tmp)

        try:
            yield Server("127.0.0.1", port, USER, password, control)
        finally:
            subprocess.run([str(c) for c in stop], cwd=tmp, capture_output=True, timeout=120)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
