"""A codec server: lets the Temporal UI and CLI show encrypted payloads to a key holder.

The UI (Settings → Codec Server, or ``TEMPORAL_CODEC_ENDPOINT`` on the UI server) posts
``{"payloads": [...]}`` in protobuf JSON form to ``<endpoint>/decode`` and ``/encode`` and
expects the same shape back. The browser calls the endpoint directly, so the server answers
CORS preflights for the configured UI origin. Keys never leave this process: run it next to
the operator (or behind the same authentication as the UI), never open to the world.

``python -m workers.codec_server --port 8081 --origin http://localhost:8233`` reads its keys
from ``ORCH_CODEC_KEYS``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf import json_format
from temporalio.api.common.v1 import Payloads
from temporalio.converter import PayloadCodec

from orchestration.errors import OrchestrationError
from workers.codec import KEYS_ENV, codec_from_env

__all__ = ["CodecServer", "main"]


class CodecServer:
    """An HTTP ``/encode`` + ``/decode`` endpoint over ``codec``, served on a thread.

    Args:
        codec: The payload codec (the same keys the workers use).
        host: Interface to bind; loopback by default.
        port: Port to bind; ``0`` picks a free one (see :attr:`port`).
        origins: Browser origins allowed to call the endpoint (the UI's address).

    """

    def __init__(
        self,
        codec: PayloadCodec,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        origins: tuple[str, ...] = ("http://localhost:8233",),
    ) -> None:
        self.codec = codec
        self.origins = origins
        self._httpd = ThreadingHTTPServer((host, port), _handler(self))
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port."""
        port: int = self._httpd.server_address[1]
        return port

    @property
    def url(self) -> str:
        """The endpoint to configure in the UI."""
        host = self._httpd.server_address[0]
        return f"http://{host if isinstance(host, str) else host.decode()}:{self.port}"

    def start(self) -> CodecServer:
        """Serve on a daemon thread."""
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve on the calling thread until interrupted."""
        self._httpd.serve_forever()

    def stop(self) -> None:
        """Stop serving and release the port."""
        self._httpd.shutdown()
        self._httpd.server_close()

    def transcode(self, path: str, body: bytes) -> bytes:
        """Run ``/encode`` or ``/decode`` over a protobuf-JSON ``Payloads`` body."""
        payloads = Payloads()
        json_format.Parse(body or b"{}", payloads)
        action = self.codec.decode if path == "/decode" else self.codec.encode
        result = asyncio.run(action(list(payloads.payloads)))
        return json_format.MessageToJson(Payloads(payloads=result)).encode()


def _handler(server: CodecServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _cors(self) -> None:
            origin = self.headers.get("Origin")
            if origin and origin in server.origins:
                self.send_header("Access-Control-Allow-Origin", origin)
                self.send_header("Access-Control-Allow-Credentials", "true")
                self.send_header("Access-Control-Allow-Methods", "POST, OPTIONS")
                self.send_header(
                    "Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization"
                )
                self.send_header("Vary", "Origin")

        def _reply(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self._cors()
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_OPTIONS(self) -> None:  # noqa: N802 - the stdlib's naming
            self.send_response(204)
            self._cors()
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:  # noqa: N802 - the stdlib's naming
            path = self.path.split("?", 1)[0].rstrip("/")
            if not path.endswith(("/encode", "/decode")):
                self._reply(404, b'{"message": "POST /encode or /decode"}')
                return
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = server.transcode(path[path.rfind("/") :], self.rfile.read(length))
            except OrchestrationError as exc:
                self._reply(400, json.dumps({"message": str(exc)}).encode())
                return
            except json_format.ParseError as exc:
                self._reply(400, json.dumps({"message": f"not a Payloads body: {exc}"}).encode())
                return
            self._reply(200, body)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return  # request lines would bypass the JSON log stream

    return Handler


def main(argv: list[str] | None = None) -> int:
    """``python -m workers.codec_server``: serve the codec for the UI until interrupted."""
    parser = argparse.ArgumentParser(prog="python -m workers.codec_server", description=__doc__)
    parser.add_argument("--host", default=os.environ.get("ORCH_CODEC_HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("ORCH_CODEC_PORT", "8081")))
    parser.add_argument(
        "--origin",
        action="append",
        default=None,
        help="UI origin allowed to call the endpoint (repeatable; default http://localhost:8233)",
    )
    args = parser.parse_args(argv)
    codec = codec_from_env()
    if codec is None:
        raise SystemExit(f"set {KEYS_ENV} to the keys the workers encrypt with")
    server = CodecServer(
        codec,
        host=args.host,
        port=args.port,
        origins=tuple(args.origin or ("http://localhost:8233",)),
    )
    print(f"codec server on {server.url}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
