"""A TCP proxy on loopback that can break the network between clients and a live server on purpose.

Clients connect to the proxy's port; each connection is piped to the server byte for byte (HTTP,
the WebSocket upgrade, frames: nothing is parsed). Two faults, both what a real network does:

- :meth:`Proxy.drop_all` closes every client connection at once (a Wi-Fi change, a NAT timeout);
- :meth:`Proxy.lose_next_answer` lets the next chunk a client sends reach the server, swallows
  whatever the server answers, and then closes that connection: the request was carried out but
  its answer is lost with the connection (what idempotent retries exist for).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time


class _Pipe:
    def __init__(self, client: socket.socket, upstream: socket.socket) -> None:
        self.client = client
        self.upstream = upstream
        self.swallow = False  # drop what the server sends from now on

    def close(self) -> None:
        for sock in (self.client, self.upstream):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()


class Proxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.pipes: list[_Pipe] = []
        self.lock = threading.Lock()
        self._armed = False
        self.cuts = 0  # connections cut by lose_next_answer
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            pipe = _Pipe(client, upstream)
            with self.lock:
                self.pipes.append(pipe)
            threading.Thread(target=self._pump_up, args=(pipe,), daemon=True).start()
            threading.Thread(target=self._pump_down, args=(pipe,), daemon=True).start()

    def _pump_up(self, pipe: _Pipe) -> None:
        try:
            while True:
                data = pipe.client.recv(65536)
                if not data:
                    break
                with self.lock:
                    cut, self._armed = self._armed, False
                    if cut:
                        pipe.swallow = True
                pipe.upstream.sendall(data)
                if cut:
                    # let the server carry the request out and answer into the void, then cut
                    threading.Timer(0.5, self._cut, args=(pipe,)).start()
        except OSError:
            pass
        pipe.close()

    def _cut(self, pipe: _Pipe) -> None:
        self.cuts += 1
        pipe.close()

    def _pump_down(self, pipe: _Pipe) -> None:
        try:
            while True:
                data = pipe.upstream.recv(65536)
                if not data:
                    break
                if not pipe.swallow:
                    pipe.client.sendall(data)
        except OSError:
            pass
        pipe.close()

    def lose_next_answer(self) -> None:
        with self.lock:
            self._armed = True

    def drop_all(self) -> int:
        with self.lock:
            pipes, self.pipes = self.pipes, []
        for pipe in pipes:
            pipe.close()
        return len(pipes)

    def close(self) -> None:
        self.closed = True
        self.listener.close()
        self.drop_all()
        time.sleep(0.05)
