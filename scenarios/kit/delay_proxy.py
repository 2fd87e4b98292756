"""A loopback TCP proxy that delays every message by a fixed time: a network's latency for local MPyC parties.

One proxy in front of each listening party delays both directions by ``delay`` seconds, keeping byte order and
throughput; it binds ``127.0.0.1`` only and holds at most :data:`MAX_QUEUED` chunks per direction
(``scenarios.bench_rounds``; docs/benchmarks.md).  Threat model: none (a benchmark tool on loopback)."""
from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import threading
import time
from collections.abc import Sequence

__all__ = ["DelayProxies", "MAX_QUEUED", "free_ports"]

#: chunks in flight per direction before the proxy stops reading (64 KiB each: at most 64 MiB queued)
MAX_QUEUED = 1024
CHUNK = 1 << 16


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on 127.0.0.1 now (the system picks them, all held open at once)."""
    with contextlib.ExitStack() as stack:
        probes = [stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(count)]
        for probe in probes:
            probe.bind(("127.0.0.1", 0))
        return [probe.getsockname()[1] for probe in probes]


async def _pump(source: asyncio.StreamReader, target: asyncio.StreamWriter, delay: float) -> None:
    """Copy ``source`` to ``target``, each chunk written ``delay`` seconds after it was read."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue(MAX_QUEUED)

    async def read() -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while data := await source.read(CHUNK):
                await queue.put((loop.time() + delay, data))
        await queue.put(None)

    reader = asyncio.ensure_future(read())
    try:
        with contextlib.suppress(ConnectionError, OSError):
            while (item := await queue.get()) is not None:
                due, data = item
                wait = due - loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                target.write(data)
                await target.drain()
    finally:
        reader.cancel()
        with contextlib.suppress(ConnectionError, OSError, RuntimeError):
            target.close()


class DelayProxies:
    """Proxies ``127.0.0.1:listen[k] -> 127.0.0.1:target[k]``, each delaying both directions by ``delay`` s.
    Use as a context manager; the proxies accept connections from ``__enter__`` to ``__exit__``.
    :raise ValueError: lists of different lengths, or a negative or non-finite delay."""

    def __init__(self, *, listen: Sequence[int], target: Sequence[int], delay: float) -> None:
        if len(listen) != len(target):
            raise ValueError(f"listen and target ports must pair up, got {len(listen)} and {len(target)}")
        if not 0 <= delay < 60:
            raise ValueError(f"delay must lie in [0, 60) seconds, got {delay}")
        self.listen, self.target, self.delay = list(listen), list(target), float(delay)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._servers: list[asyncio.base_events.Server] = []

    async def _handle(self, port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        for _ in range(200):  # the party behind may still be starting: retry for up to 20 s
            try:
                upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", port)
                break
            except OSError:
                await asyncio.sleep(0.1)
        else:
            writer.close()
            return
        await asyncio.gather(_pump(reader, upstream_writer, self.delay), _pump(upstream_reader, writer, self.delay))

    async def _start(self) -> None:
        for listen, target in zip(self.listen, self.target):
            handle = functools.partial(self._handle, target)
            self._servers.append(await asyncio.start_server(handle, "127.0.0.1", listen))

    async def _stop(self) -> None:
        for server in self._servers:
            server.close()
        for task in asyncio.all_tasks():
            if task is not asyncio.current_task():
                task.cancel()

    def __enter__(self) -> DelayProxies:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop accepting and drop every connection."""
        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=10)
            time.sleep(0.05)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
