#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Target server for the s5tund end-to-end tests (protocol: see e2elib.py).

  target.py --listen 10.201.0.1 --listen fd00:201::1 --port 7000 \\
            [--ready-file FILE]

asyncio, one task per connection, so hundreds of concurrent connections are
fine. Writes one log line per finished connection to stdout, and creates
--ready-file once every listening socket is bound.
"""

import argparse
import asyncio
import hashlib
import os
import signal
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402

READ = 256 * 1024
stats = {"conns": 0, "active": 0, "errors": 0}


def log(msg):
    print("target: " + msg, flush=True)


async def do_echo(reader, writer):
    total = 0
    while True:
        data = await reader.read(READ)
        if not data:
            break
        total += len(data)
        writer.write(data)
        await writer.drain()
    return "echo %d bytes" % total


async def do_upload(reader, writer, want):
    h = hashlib.sha256()
    total = 0
    while want is None or total < want:
        n = READ if want is None else min(READ, want - total)
        data = await reader.read(n)
        if not data:
            if want is not None:
                raise ConnectionError("EOF after %d of %d bytes" % (total, want))
            break
        h.update(data)
        total += len(data)
    writer.write((h.hexdigest() + "\n").encode())
    await writer.drain()
    return "upload %d bytes sha256 %s" % (total, h.hexdigest())


async def do_download(reader, writer, n, seed):
    for chunk in e2elib.stream(seed, n):
        writer.write(chunk)
        await writer.drain()
    return "download %d bytes seed %d" % (n, seed)


async def do_hold(reader, writer, tag):
    """HOLD <tag>: says "HELD <tag>" once, then sends nothing and reads until
    the peer ends the connection; the log line says how it ended (EOF or
    reset), which is what the tests that end connections look for."""
    writer.write(b"HELD %s\n" % tag.encode())
    await writer.drain()
    total = 0
    try:
        while True:
            data = await reader.read(READ)
            if not data:
                return "hold %s ended: eof after %d bytes" % (tag, total), True
            total += len(data)
    except ConnectionResetError:
        return "hold %s ended: reset after %d bytes" % (tag, total), False
    except OSError as e:
        return "hold %s ended: error %s after %d bytes" % (tag, e, total), False


async def do_later(reader, writer, ms, tag):
    """LATER <ms> <tag>: sends nothing for ms milliseconds, then "LATE <tag>\n"
    and closes: a client waiting on an idle connection for a late reply."""
    await asyncio.sleep(ms / 1000.0)
    writer.write(b"LATE %s\n" % tag.encode())
    await writer.drain()
    return "later %d ms %s answered" % (ms, tag)


HTTP_BODY = b"s5tund e2e target\n"


async def do_http(reader, writer, line):
    """GET (HTTP/1.0 or 1.1, what ab sends): reads the header up to its
    blank line, answers 200 with a short body and closes, like an HTTP/1.0
    server without keep-alive: the target closes first."""
    if not line.rstrip().endswith((b"HTTP/1.0", b"HTTP/1.1")):
        raise ValueError("not an HTTP request: %r" % line[:80])
    while (await reader.readuntil(b"\n")).strip():
        pass
    writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n"
                 b"Connection: close\r\n\r\n%s" % (len(HTTP_BODY), HTTP_BODY))
    await writer.drain()
    return "http %s" % line.split()[1][:60].decode("ascii", "replace")


async def handle(reader, writer):
    stats["conns"] += 1
    stats["active"] += 1
    peer = writer.get_extra_info("peername")
    what = "?"
    alive = True   # False: the peer reset the connection, nothing more to send
    try:
        line = await reader.readuntil(b"\n")
        words = line.decode("ascii", "replace").split()
        cmd = words[0].upper() if words else ""
        if cmd == "ECHO":
            what = await do_echo(reader, writer)
        elif cmd == "UPLOAD" and len(words) == 1:
            what = await do_upload(reader, writer, None)
        elif cmd == "UPLOAD" and len(words) == 2:
            what = await do_upload(reader, writer, int(words[1]))
        elif cmd == "DOWNLOAD" and len(words) == 3:
            what = await do_download(reader, writer, int(words[1]), int(words[2]))
        elif cmd == "LATER" and len(words) == 3:
            what = await do_later(reader, writer, int(words[1]), words[2])
        elif cmd == "HOLD" and len(words) == 2:
            what, alive = await do_hold(reader, writer, words[1])
        elif cmd == "GET" and len(words) == 3:
            what = await do_http(reader, writer, line)
        else:
            writer.write(b"ERR unknown command\n")
            what = "bad command %r" % line[:80]
        # Orderly close: FIN after everything was sent.
        if alive:
            if writer.can_write_eof():
                writer.write_eof()
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, OSError, ValueError) as e:
        stats["errors"] += 1
        what = "%s: error %s: %s" % (what, type(e).__name__, e)
    finally:
        stats["active"] -= 1
        writer.close()
        try:
            await writer.wait_closed()
        except (ConnectionError, OSError):
            pass
    log("%s %s" % (peer, what))


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", action="append", required=True)
    ap.add_argument("--port", type=int, default=7000)
    ap.add_argument("--ready-file")
    args = ap.parse_args()

    servers = []
    for addr in args.listen:
        srv = await asyncio.start_server(handle, host=addr, port=args.port,
                                         backlog=1024, limit=READ)
        servers.append(srv)
        log("listening on %s port %d" % (addr, args.port))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if args.ready_file:
        with open(args.ready_file, "w") as f:
            f.write("%d\n" % os.getpid())
    await stop.wait()
    log("stopping: %d connections, %d errors, %d active"
        % (stats["conns"], stats["errors"], stats["active"]))
    for srv in servers:
        srv.close()


if __name__ == "__main__":
    asyncio.run(main())
