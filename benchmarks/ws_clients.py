"""Many WebSocket clients reading one streaming session: the latency from a batch entering the tracker to a client
receiving it, and what the clients cost the server.

A real server on 127.0.0.1 (uvicorn, in this process) with a live session: a chain pipeline of ``--operators``
operators, its batches pushed at ``--rate`` batches per second. ``--clients`` WebSocket clients (the ``websockets``
library, in a child process of their own, so their work is not counted as the server's) connect to the session's
stream and read every message for ``--seconds``. For every delta a client receives: its receive time minus the
message's ``t_first`` (when the oldest batch in it was applied; both wall clocks of this machine). Reported: p50,
p95 and max of that latency over all clients, messages per second, and the server process's CPU time per second
(``time.process_time``: its threads, the ingest, the pusher and uvicorn) during the window, first with no client
(the ingest alone), then with the clients; and from the two, the server's CPU time per message sent (what does not
depend on how loaded the machine is: a starved server applies fewer batches and sends fewer messages).

Run (about 30 s)::

    .venv/bin/python benchmarks/ws_clients.py                         # 100 clients, 200 operators, 2000 batches/s
    .venv/bin/python benchmarks/ws_clients.py --clients 10 --seconds 5
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import httpx  # noqa: E402
from bench_browser import Pusher  # noqa: E402  (the same pusher as the browser benchmark's)

from backend.feeds.progress_feeds import PushFeed  # noqa: E402
from backend.web.app import Settings  # noqa: E402
from tests.e2e.logs import pipeline_records  # noqa: E402
from tests.e2e.server import running_server  # noqa: E402


def pct(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


def read_clients(url: str, clients: int, seconds: float, out: multiprocessing.Queue) -> None:
    """The child process: ``clients`` connections reading for ``seconds``; sends (latencies ms, messages, bytes)."""
    import websockets

    latencies: list[float] = []
    counts = [0, 0]

    async def client(ready: asyncio.Event) -> None:
        async with websockets.connect(url, max_size=None, compression=None) as ws:
            ready.set()
            end = time.monotonic() + seconds
            while True:
                left = end - time.monotonic()
                if left <= 0:
                    return
                try:
                    raw = await asyncio.wait_for(ws.recv(), left)
                except TimeoutError:
                    return
                now = time.time()
                counts[0] += 1
                counts[1] += len(raw)
                # the fields read straight from the text: decoding every message would make the clients, not the
                # server, the bottleneck (the server writes "t_first" with orjson: a number or null)
                k = raw.find('"t_first":')
                if k > 0 and raw.startswith('"type":"delta"', raw.find('"type":')):
                    stop = k + 10
                    while raw[stop] not in ",}":
                        stop += 1
                    value = raw[k + 10:stop]
                    if value != "null":
                        latencies.append((now - float(value)) * 1000)

    async def main() -> None:
        events = [asyncio.Event() for _ in range(clients)]
        tasks = [asyncio.create_task(client(e)) for e in events]
        for outcome in await asyncio.gather(*tasks, return_exceptions=True):
            if isinstance(outcome, BaseException):
                print(f"a client failed: {outcome!r}", file=sys.stderr)

    started = time.process_time()
    asyncio.run(main())
    out.put((latencies, counts[0], counts[1], time.process_time() - started))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clients", type=int, default=100)
    ap.add_argument("--operators", type=int, default=200)
    ap.add_argument("--rate", type=float, default=2000, help="batches per second pushed into the session")
    ap.add_argument("--seconds", type=float, default=10)
    args = ap.parse_args()

    records = pipeline_records(args.operators, 1_000_000, in_flight=8, header=False)
    structure = [next(records) for _ in range(2 * args.operators - 1)]
    with running_server(Settings(check_contracts=False)) as srv, httpx.Client(base_url=srv.url, timeout=60) as api:
        feed = PushFeed("ws bench")
        feed.push_many(structure)
        sid = srv.call(srv.manager.add, feed, "ws bench", False).id
        while api.get(f"/api/sessions/{sid}").json()["operators"] < args.operators:
            time.sleep(0.05)
        pusher = Pusher(feed, records, args.rate)
        pusher.start()
        time.sleep(1.0)  # the pipeline fills

        b0, c0, w0 = api.get(f"/api/sessions/{sid}").json()["batches"], time.process_time(), time.perf_counter()
        time.sleep(args.seconds)
        b1, c1, w1 = api.get(f"/api/sessions/{sid}").json()["batches"], time.process_time(), time.perf_counter()
        alone = ((c1 - c0) / (w1 - w0), (b1 - b0) / (w1 - w0))

        ctx = multiprocessing.get_context("spawn")
        out: multiprocessing.Queue = ctx.Queue()
        url = f"{srv.ws_url}/api/sessions/{sid}/stream"
        child = ctx.Process(target=read_clients, args=(url, args.clients, args.seconds, out))
        b0, c0, w0 = api.get(f"/api/sessions/{sid}").json()["batches"], time.process_time(), time.perf_counter()
        child.start()
        latencies, messages, size, client_cpu = out.get(timeout=args.seconds + 120)
        b1, c1, w1 = api.get(f"/api/sessions/{sid}").json()["batches"], time.process_time(), time.perf_counter()
        child.join(30)
        pusher.stop = True
        pusher.join()
    with_clients = ((c1 - c0) / (w1 - w0), (b1 - b0) / (w1 - w0))
    print(f"{args.clients} clients, {args.operators} operators, {args.rate:.0f} batches/s pushed, {args.seconds:.0f} s"
          f" (load: {os.getloadavg()[0]:.1f})")
    print(f"server without clients: {alone[0] * 100:.0f}% of a core, {alone[1]:.0f} batches/s applied")
    print(f"server with clients:    {with_clients[0] * 100:.0f}% of a core, {with_clients[1]:.0f} batches/s applied")
    print(f"clients: {messages} messages ({messages / args.seconds / max(1, args.clients):.1f}/s each, "
          f"{size / max(1, messages) / 1024:.1f} KiB average), their process {client_cpu:.1f} s CPU")
    ingest_cpu = alone[0] / max(alone[1], 1.0)  # CPU seconds per batch applied, without clients
    per_message = (with_clients[0] - ingest_cpu * with_clients[1]) / max(messages / args.seconds, 1e-9)
    print(f"server CPU per client message (the ingest's share taken out): {per_message * 1000:.2f} ms")
    print(f"batch -> client latency: p50 {pct(latencies, 50):.0f} ms, p95 {pct(latencies, 95):.0f} ms, "
          f"max {max(latencies, default=float('nan')):.0f} ms ({len(latencies)} deltas)")


if __name__ == "__main__":
    main()
