#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""delayrelay: a TCP relay that holds every chunk for a fixed time each way.

    delayrelay.py relay --listen ADDR:PORT --upstream ADDR:PORT --delay-ms MS
                        [--ready-file FILE]
    delayrelay.py probe --connect ADDR:PORT [--rounds N] [--timeout S]

relay: accepts on ADDR:PORT and, per client, connects to the upstream; each
chunk read on either side is written to the other MS milliseconds later (in
order), so a round trip through the relay costs 2*MS more, as a proxy MS
away each way would. The relay's own accept and upstream connect are local
and not delayed: the proxy's TCP handshake, one more round trip in real
life, is not counted. The ready file gets "ready" once it listens.

probe: measures the relay's round trip, in front of an echo server: one
connection, then N rounds of one byte sent and echoed, timed each; prints
"rtt_min_ms=... rtt_p50_ms=... rounds=N". The bench states time to first
byte in multiples of this measured value, never of MS.
"""
import argparse
import asyncio
import socket
import statistics
import sys
import time

CHUNK = 65536


def hostport(s):
    host, _, port = s.rpartition(":")
    return host.strip("[]"), int(port)


async def pump(reader, writer, delay):
    """Copies reader to writer, each chunk released `delay` s after it came.

    A queue keeps the order; the reader is not held back by the delay (the
    data in flight is bounded by the kernel's buffers and the queue's size).
    """
    loop = asyncio.get_running_loop()
    q = asyncio.Queue(maxsize=256)

    async def release():
        while True:
            due, data = await q.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if data is None:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    task = asyncio.create_task(release())
    try:
        while True:
            data = await reader.read(CHUNK)
            await q.put((loop.time() + delay, data or None))
            if not data:
                break
        await task
    except (ConnectionError, OSError):
        task.cancel()
        writer.close()


async def serve_client(creader, cwriter, upstream, delay):
    try:
        ureader, uwriter = await asyncio.open_connection(*upstream)
    except OSError as e:
        print(f"delayrelay: upstream {upstream}: {e}", file=sys.stderr)
        cwriter.close()
        return
    for w in (cwriter, uwriter):
        w.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    await asyncio.gather(pump(creader, uwriter, delay), pump(ureader, cwriter, delay), return_exceptions=True)
    for w in (cwriter, uwriter):
        w.close()


async def relay(args):
    upstream = hostport(args.upstream)
    delay = args.delay_ms / 1000.0
    host, port = hostport(args.listen)
    server = await asyncio.start_server(
        lambda r, w: serve_client(r, w, upstream, delay), host, port, backlog=1024, reuse_address=True
    )
    if args.ready_file:
        with open(args.ready_file, "w") as f:
            f.write("ready\n")
    async with server:
        await server.serve_forever()


def probe(args):
    host, port = hostport(args.connect)
    rtts = []
    with socket.create_connection((host, port), timeout=args.timeout) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(args.rounds):
            t0 = time.monotonic()
            s.sendall(b"p")
            if not s.recv(1):
                raise SystemExit("delayrelay probe: the upstream closed before answering")
            rtts.append((time.monotonic() - t0) * 1000.0)
    print(f"rtt_min_ms={min(rtts):.2f} rtt_p50_ms={statistics.median(rtts):.2f} rounds={len(rtts)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("relay")
    r.add_argument("--listen", required=True)
    r.add_argument("--upstream", required=True)
    r.add_argument("--delay-ms", type=float, required=True)
    r.add_argument("--ready-file")
    p = sub.add_parser("probe")
    p.add_argument("--connect", required=True)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--timeout", type=float, default=5.0)
    args = ap.parse_args()
    if args.cmd == "relay":
        try:
            asyncio.run(relay(args))
        except KeyboardInterrupt:
            pass
    else:
        probe(args)


if __name__ == "__main__":
    main()
