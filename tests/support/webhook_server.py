"""A real HTTP server on 127.0.0.1 that keeps what an alert webhook posts to it."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET_PATH = "/services/T000/B000/XXXXXXXXXXXXsecretpath"  # a webhook's path is its credential


class Receiver:
    """An HTTP server that keeps what it is posted; ``delay_s`` before answering, ``status`` to answer."""

    def __init__(self, port: int = 0, delay_s: float = 0.0, status: int = 200):
        self.bodies: list[dict] = []
        self.paths: list[str] = []
        self.delay_s, self.status = delay_s, status
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                receiver.paths.append(self.path)
                time.sleep(receiver.delay_s)
                if receiver.status == 200:
                    receiver.bodies.append(body)
                self.send_response(receiver.status)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}{SECRET_PATH}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
