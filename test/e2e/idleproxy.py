#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A SOCKS5 proxy (no authentication, CONNECT only) that closes a connection
idle after its greeting for more than --idle seconds when its request
arrives: what danted does with timeout.negotiate to a pooled connection whose
CONNECT comes late. A request that comes in time is served: connect to the
destination, reply success, relay both ways. One log line per connection
closed that way ("closed-idle") and per one served ("served"). With
--close-idle T it also closes, by itself, every connection whose request has
not come T seconds after its greeting ("closed-timer"), as danted does with a
short timeout.negotiate. Every connection accepted is logged ("accepted").

  idleproxy.py --listen ADDR --port P --idle S [--close-idle T] [--ready-file FILE]
Standard library only."""
import argparse
import asyncio
import ipaddress
import struct
import sys
import time


def log(msg):
    print("idleproxy: " + msg, flush=True)


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        writer.write_eof()
    except (OSError, RuntimeError):
        pass


async def request(reader):
    head = await reader.readexactly(4)
    if head[3] == 1:
        addr = str(ipaddress.IPv4Address(await reader.readexactly(4)))
    elif head[3] == 4:
        addr = str(ipaddress.IPv6Address(await reader.readexactly(16)))
    else:
        n = (await reader.readexactly(1))[0]
        addr = (await reader.readexactly(n)).decode()
    port = struct.unpack("!H", await reader.readexactly(2))[0]
    return addr, port


async def handle(reader, writer, idle, close_idle):
    log("accepted")
    try:
        greet = await reader.readexactly(2)
        await reader.readexactly(greet[1])
        writer.write(b"\x05\x00")
        await writer.drain()
        greeted = time.monotonic()
        try:
            addr, port = await asyncio.wait_for(request(reader), close_idle)
        except asyncio.TimeoutError:
            log("closed-timer after %.2f s" % (time.monotonic() - greeted))
            writer.close()
            return
        if time.monotonic() - greeted > idle:
            # The request (and the client's bytes behind it) arrive at a
            # connection this proxy already gave up on: closed unanswered.
            await asyncio.sleep(0.05)
            log("closed-idle %s:%d after %.2f s" % (addr, port, time.monotonic() - greeted))
            writer.close()
            return
        tr, tw = await asyncio.open_connection(addr, port)
        writer.write(b"\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00")
        await writer.drain()
        log("served %s:%d" % (addr, port))
        await asyncio.gather(pipe(reader, tw), pipe(tr, writer))
        tw.close()
    except (OSError, asyncio.IncompleteReadError):
        pass
    writer.close()


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--idle", type=float, required=True)
    ap.add_argument("--close-idle", type=float, default=None)
    ap.add_argument("--ready-file")
    args = ap.parse_args()
    srv = await asyncio.start_server(lambda r, w: handle(r, w, args.idle, args.close_idle), args.listen, args.port)
    if args.ready_file:
        with open(args.ready_file, "w") as f:
            f.write("ready\n")
    async with srv:
        await srv.serve_forever()


if __name__ == "__main__":
    sys.dont_write_bytecode = True
    asyncio.run(main())
