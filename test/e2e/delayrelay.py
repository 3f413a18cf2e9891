#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A TCP relay that delays every byte by a fixed one-way time, each way.

Puts a far-away proxy in front of a near one: accept on --listen:--port,
connect to --to HOST:PORT, and forward what each side sends --delay-ms
later (order kept; a FIN and a reset too, each after what came before it).
A round trip through it costs 2 x delay;
tests measure that themselves and assert in round trips (the accept is
local, so the upstream TCP handshake is not delayed, unless
--connect-round-trip). Backpressure: a
direction stops reading while more than --buffer bytes wait in it.
SIGUSR1 closes the listening sockets (new connections are refused) and
keeps relaying the open ones: a proxy that died with replies on their way.
--delay-file F: the delay is read from F (ms, one way) instead, again
whenever F changes (write another file and rename it over F), so that a
test can move the proxy nearer or farther while it runs; each chunk takes
the delay in force when it came.
--connect-round-trip: a new connection costs one round trip more, as the
TCP handshake to a proxy that far away does (SYN, SYN-ACK: the client's
connect() returns 2 x delay after it began). The kernel's accept here is
instant, so instead each direction's bytes count as sent no earlier than
2 x delay after the accept: a chunk that came sooner waits until then and
then takes its delay (the first bytes reach the far side 3 x delay after
the connect began, as through a real handshake); later chunks, and
connections opened ahead of time (a warm pool's, older than one round
trip by their first bytes), are not held.

  delayrelay.py --listen 10.200.0.2 --port 1090 --to 10.200.0.2:1081 \
      --delay-ms 25 [--connect-round-trip] [--ready-file F]
  delayrelay.py ... --delay-file F [--ready-file F]
Stdlib only."""
import argparse
import asyncio
import os
import signal
import socket
import sys


RESET = object()  # in a direction's queue: a reset, delivered as one after the delay too


class Delay:
    """The one-way delay in seconds: fixed, or read from a file whenever
    its modification time changes."""

    def __init__(self, ms, path):
        self.seconds = (ms or 0) / 1000.0
        self.path = path
        self.stamp = None
        if path:
            self.now()

    def now(self):
        if not self.path:
            return self.seconds
        try:
            st = os.stat(self.path)
            if st.st_mtime_ns != self.stamp:
                with open(self.path) as f:
                    self.seconds = float(f.read().strip()) / 1000.0
                self.stamp = st.st_mtime_ns
        except (OSError, ValueError) as e:
            print(f"delayrelay: {self.path}: {e} (the delay stays {self.seconds * 1000:g} ms)",
                  file=sys.stderr, flush=True)
        return self.seconds


async def pump(reader, writer, delay, limit, usable=0.0):
    """Forwards reader to writer, each chunk delay.now() seconds after it
    came, or after usable (the loop's time; --connect-round-trip) when it
    came sooner; a FIN as a FIN, a reset as a reset (after what came
    before it)."""
    loop = asyncio.get_running_loop()
    queue = asyncio.Queue()
    room = asyncio.Condition()
    queued = 0

    async def sender():
        nonlocal queued
        dead = False
        while True:
            due, data = await queue.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if data is RESET:
                writer.transport.abort()
                return
            if data is None:
                if not dead and writer.can_write_eof():
                    writer.write_eof()
                return
            if not dead:
                try:
                    writer.write(data)
                    await writer.drain()
                except (ConnectionError, OSError):
                    dead = True  # its reset comes the other way, delayed too
            async with room:
                queued -= len(data)
                room.notify_all()

    task = asyncio.ensure_future(sender())
    try:
        while True:
            data = await reader.read(65536)
            queue.put_nowait((max(loop.time(), usable) + delay.now(), data or None))
            if not data:
                break
            async with room:
                queued += len(data)
                await room.wait_for(lambda: queued <= limit)
    except (ConnectionError, OSError):
        queue.put_nowait((max(loop.time(), usable) + delay.now(), RESET))
    await task


async def handle(creader, cwriter, args):
    # --connect-round-trip: nothing crosses before the handshake's round trip
    usable = asyncio.get_running_loop().time() + 2 * args.delay.now() if args.connect_round_trip else 0.0
    host, port = args.to.rsplit(":", 1)
    try:
        ureader, uwriter = await asyncio.open_connection(host.strip("[]"), int(port))
    except OSError as e:
        print(f"delayrelay: upstream {args.to}: {e}", file=sys.stderr, flush=True)
        cwriter.transport.abort()
        return
    for w in (cwriter, uwriter):
        w.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    await asyncio.gather(pump(creader, uwriter, args.delay, args.buffer, usable),
                         pump(ureader, cwriter, args.delay, args.buffer, usable))
    for w in (cwriter, uwriter):
        w.close()


async def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--listen", action="append", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--to", required=True, help="HOST:PORT ([v6]:PORT)")
    how = ap.add_mutually_exclusive_group(required=True)
    how.add_argument("--delay-ms", type=float, help="one-way delay, each direction")
    how.add_argument("--delay-file", help="a file holding the one-way delay in ms, read again as it changes")
    ap.add_argument("--connect-round-trip", action="store_true",
                    help="charge a new connection one round trip (2 x delay), as its TCP handshake would cost")
    ap.add_argument("--buffer", type=int, default=4 << 20, help="bytes a direction holds at most")
    ap.add_argument("--ready-file")
    args = ap.parse_args()
    args.delay = Delay(args.delay_ms, args.delay_file)
    servers = [await asyncio.start_server(lambda r, w: handle(r, w, args), a, args.port)
               for a in args.listen]
    # SIGUSR1: stop listening (new connections are refused), carry on with
    # the open ones: a proxy that dies while replies are on their way.
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, lambda: [s.close() for s in servers])
    if args.ready_file:
        with open(args.ready_file, "w") as f:
            f.write("ready\n")
    await asyncio.Event().wait()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
