"""The README's main job, run as a new user would: `orch demo` end to end."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from temporalio.api.common.v1 import Payload

from workers.codec import AesGcmCodec, parse_keys

from .cli import ORCH


def test_demo_runs_the_whole_story(tmp_path: Path) -> None:
    """The demo authors, diffs, freezes, renders, approves, runs once and refuses a second run."""
    result = subprocess.run(
        [ORCH, "demo", "--data", str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = result.stdout
    assert result.returncode == 0, result.stderr + out
    for marker in (
        "frozen: the plan is now reviewable",
        "Total authority requested (the approval binds exactly this set)",
        "approved digest",
        "run settled: completed",
        "a second run is refused: [run_already_claimed]",
    ):
        assert marker in out, marker
    digest = re.search(r"approved digest ([0-9a-f]{64})", out)
    assert digest and f"digest: {digest.group(1)}" in out
    report = tmp_path / "demo" / "workspace" / "report.txt"
    assert report.read_text().splitlines() == [
        "invoice-001.txt",
        "invoice-002.txt",
        "notes.md",
        "orders.sqlite3",
    ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def shell(command: str, **kwargs: Any) -> Any:
    """Run a printed command line as a user would paste it: bash, with the venv's bin on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ORCH_", "TEMPORAL_"))}
    env["PATH"] = f"{Path(ORCH).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.Popen(
        ["bash", "-c", command], env=env, text=True, start_new_session=True, **kwargs
    )


def stop(proc: Any, how: signal.Signals) -> None:
    """Signal the session a `shell` line started (the shell and what it runs), then reap it."""
    os.killpg(proc.pid, how)
    proc.wait(timeout=60)


def test_demo_runs_with_encrypted_payloads_and_says_how_to_read_them(tmp_path: Path) -> None:
    """`orch demo --encrypt`: the story runs encrypted, and its closing lines work as printed.

    The key is kept in DATA/codec-keys (owner-only) under the plan's id; the printed
    `orch dev` and `orch run show` lines read the run back (and refuse without the key); the
    printed codec-server line serves the key to the Web UI.
    """
    data = tmp_path / "demo"
    result = subprocess.run(
        [ORCH, "demo", "--data", str(data), "--encrypt"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    out = result.stdout
    assert result.returncode == 0, result.stderr + out
    assert "payloads are encrypted (AES-GCM" in out
    assert "run settled: completed" in out
    assert "outputs:" in out  # the closed run's log was rebuilt through the codec
    plan_id = re.search(r"workflow id: plan/(demo-[0-9a-f]+)", out)
    assert plan_id is not None
    key_file = data / "codec-keys"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    keys = parse_keys(key_file.read_text())
    assert list(keys) == [plan_id[1]] and len(keys[plan_id[1]]) == 32
    prefix = f'ORCH_CODEC_KEYS="$(cat {key_file})"'
    lines = out.splitlines()
    assert f"the run's payloads are encrypted; the key (id {plan_id[1]!r}) is in {key_file}" in out
    dev_line, show_line, server_line = (
        next(line.strip() for line in lines if line.strip().startswith(f"{prefix} {what}"))
        for what in ("orch dev", "orch run show", sys.executable)
    )
    assert show_line == f"{prefix} orch run show {plan_id[1]} --store {data / 'plans.sqlite3'}"
    assert server_line.endswith(
        " -m workers.codec_server --port 8081 --origin http://localhost:8233"
    )

    port, ui_port = free_port(), free_port()
    address = ["--address", f"127.0.0.1:{port}"]
    dev = shell(f"{dev_line} --port {port} --ui-port {ui_port}", stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL)
    try:
        assert dev.stdout is not None
        ready = dev.stdout.readline()
        assert ready.startswith(f"Temporal at 127.0.0.1:{port}"), ready
        shown = shell(f"{show_line} {' '.join(address)}", stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE)
        shown_out, shown_err = shown.communicate(timeout=120)
        assert shown.returncode == 0, shown_err
        assert shown_out.startswith(f"run plan/{plan_id[1]}: completed\n")
        keyless = shell(show_line.removeprefix(prefix) + " " + " ".join(address),
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _, keyless_err = keyless.communicate(timeout=120)
        assert keyless.returncode == 2 and keyless_err.startswith("error[codec_key]: ")
    finally:
        stop(dev, signal.SIGINT)

    codec_port = free_port()
    server = shell(server_line.replace("--port 8081", f"--port {codec_port}"),
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        sealed = asyncio.run(AesGcmCodec(keys).encode([Payload(data=b'"the secret"')]))[0]
        body = json.dumps({"payloads": [json.loads(json_format.MessageToJson(sealed))]}).encode()
        decoded = None
        for _ in range(100):
            try:
                request = urllib.request.Request(
                    f"http://127.0.0.1:{codec_port}/decode", data=body, method="POST",
                    headers={"Content-Type": "application/json"},
                )
                with urllib.request.urlopen(request, timeout=5) as response:
                    decoded = json.loads(response.read())
                break
            except OSError:
                time.sleep(0.1)
        assert decoded is not None
        assert base64.b64decode(decoded["payloads"][0]["data"]) == b'"the secret"'
    finally:
        stop(server, signal.SIGTERM)
