"""Encrypted payloads on a real dev server: history holds ciphertext; key holders see values."""

from __future__ import annotations

import base64
import json
import os
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from orchestration.plan.encoding import NodeRef
from orchestration.store.sqlite import SqlitePlanStore
from orchestration.testing import PlanSketch
from orchestration.types import StringField
from workers.codec import ENCODING, AesGcmCodec, CodecDecryptError, CodecKeyError
from workers.codec_server import CodecServer
from workers.devserver import DevServer
from workers.worker import build_worker, connect

from .harness import make_toolbox, start_run, unique_plan_id

pytestmark = pytest.mark.asyncio(loop_scope="session")

SECRET = "staged-secret-value"


def key() -> bytes:
    return os.urandom(32)


async def history_payloads(client: Client, workflow_id: str) -> list[Payload]:
    """Every payload in the run's history: the workflow input, activity inputs and results."""
    history = await client.get_workflow_handle(workflow_id).fetch_history()
    found: list[Payload] = []
    for event in history.events:
        for attrs in (
            event.workflow_execution_started_event_attributes.input,
            event.activity_task_scheduled_event_attributes.input,
            event.activity_task_completed_event_attributes.result,
            event.workflow_execution_completed_event_attributes.result,
        ):
            found.extend(attrs.payloads)
    return found


async def test_history_holds_ciphertext_and_the_codec_reads_it(
    dev_server: DevServer, tmp_path: Path
) -> None:
    """Raw history shows only ciphertext under the key id; the codec gives back the values."""
    codec = AesGcmCodec({"old": key(), "k2": key()})
    client = await connect(dev_server.address, payload_codec=codec)
    plain = await connect(dev_server.address)
    plan_id = unique_plan_id("enc")
    view = (
        PlanSketch(plan_id)
        .entry(StringField(path="s"))
        .call(
            "a", "upper", args={"s": NodeRef("entry", path="s")}, output=[StringField(path="value")]
        )
        .chain("entry", "a")
        .view()
    )
    task_queue = f"tq-{plan_id}"
    store = SqlitePlanStore(tmp_path / "plans.sqlite3")
    async with build_worker(client, task_queue=task_queue, toolbox=make_toolbox(), store=store):
        handle, _ = await start_run(client, task_queue, store, view, {"s": SECRET})
        result = await handle.result()
    await store.close()
    assert result.outcome == "completed", result

    raw = await history_payloads(plain, handle.id)
    assert len(raw) >= 4
    for payload in raw:
        assert payload.metadata["encoding"] == ENCODING
        assert payload.metadata["encryption-key-id"] == b"k2"  # the newest key encrypts
        assert SECRET.encode() not in payload.data and plan_id.encode() not in payload.data

    decoded = await codec.decode(raw)
    texts = b"".join(p.data for p in decoded)
    assert SECRET.encode() in texts and SECRET.upper().encode() in texts
    assert all(p.metadata["encoding"] == b"json/plain" for p in decoded)

    # A client without the key cannot even read the result.
    with pytest.raises(Exception) as caught:
        await plain.get_workflow_handle(handle.id).result()
    assert "binary/encrypted" in str(caught.value) or "encoding" in str(caught.value)


async def test_a_wrong_key_fails_with_a_clear_error(dev_server: DevServer) -> None:
    """Wrong material under the right id, or a missing id, raise errors naming the key."""
    writer = AesGcmCodec({"k1": key()})
    sealed = await writer.encode(pydantic_data_converter.payload_converter.to_payloads([SECRET]))
    with pytest.raises(CodecDecryptError, match="'k1'.*wrong or the payload was altered"):
        await AesGcmCodec({"k1": key()}).decode(sealed)
    with pytest.raises(CodecKeyError, match="key 'k1', which this codec does not hold"):
        await AesGcmCodec({"other": key()}).decode(sealed)
    tampered = Payload()
    tampered.CopyFrom(sealed[0])
    tampered.metadata["encryption-key-id"] = b"k0"
    both = AesGcmCodec({"k0": key(), "k1": key()})
    with pytest.raises(CodecDecryptError):
        await both.decode([tampered])


async def test_rotation_reads_old_payloads_and_writes_with_the_newest_key() -> None:
    """A codec with a new key appended still decrypts what the old key wrote."""
    old = key()
    before = AesGcmCodec({"k1": old})
    after = AesGcmCodec({"k1": old, "k2": key()})
    payloads = pydantic_data_converter.payload_converter.to_payloads([{"v": SECRET}])
    sealed = await before.encode(payloads)
    assert await after.decode(sealed) == payloads
    resealed = await after.encode(payloads)
    assert resealed[0].metadata["encryption-key-id"] == b"k2"
    with pytest.raises(CodecKeyError):
        await before.decode(resealed)


def post(url: str, body: dict[str, Any], origin: str) -> tuple[int, dict[str, Any], Any]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Origin": origin, "X-Namespace": "default"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read())


async def test_codec_server_round_trips_for_the_ui() -> None:
    """/encode then /decode gives back the payloads; CORS answers the UI origin only."""
    codec = AesGcmCodec({"k1": key()})
    origin = "http://localhost:8233"
    server = CodecServer(codec, origins=(origin,)).start()
    try:
        plain = {
            "payloads": [
                {
                    "metadata": {"encoding": base64.b64encode(b"json/plain").decode()},
                    "data": base64.b64encode(json.dumps(SECRET).encode()).decode(),
                }
            ]
        }
        status, headers, encoded = post(f"{server.url}/encode", plain, origin)
        assert status == 200 and headers["Access-Control-Allow-Origin"] == origin
        sealed = encoded["payloads"][0]
        assert base64.b64decode(sealed["metadata"]["encoding"]) == ENCODING
        assert SECRET.encode() not in base64.b64decode(sealed["data"])
        status, _, decoded = post(f"{server.url}/decode", encoded, origin)
        assert status == 200 and decoded == plain

        preflight = urllib.request.Request(
            f"{server.url}/decode", method="OPTIONS", headers={"Origin": origin}
        )
        with urllib.request.urlopen(preflight, timeout=10) as response:
            assert response.status == 204
            assert "X-Namespace" in response.headers["Access-Control-Allow-Headers"]
        status, headers, _ = post(f"{server.url}/decode", encoded, "http://evil.example")
        assert "Access-Control-Allow-Origin" not in headers

        other = CodecServer(AesGcmCodec({"k1": key()})).start()
        try:
            status, _, error = post(f"{other.url}/decode", encoded, origin)
            assert status == 400 and "codec_decrypt_failed" in error["message"]
        finally:
            other.stop()
    finally:
        server.stop()
