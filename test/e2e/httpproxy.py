#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A misbehaving HTTP CONNECT proxy for the s5tund end-to-end tests.

  httpproxy.py --listen ADDR [--listen ADDR...] --port PORT --ready-file F

Reads a CONNECT request (its header, up to 64 KiB) and answers as the port
it asks for says; every request is logged as one line "CONNECT HOST:PORT
AUTH -> BEHAVIOUR" (AUTH: the Proxy-Authorization value or "-"):

  7101  no-final-crlf   a 200 status line and a field, never the blank line;
                        holds the connection until the client closes it
  7102  endless-header  a 200 status line, then a header field that never
                        ends (up to 1 MiB, until the client closes)
  7103  interim         100 Continue and 102 Processing, then 200, then
                        relays to HOST:7000
  7104  407-body        407 with a Proxy-Authenticate field and a body, then
                        closes
  7105  close-in-header a 200 status line and a field, then closes
  other relay           200 Connection established, then relays to HOST:PORT

Standard library only; one thread per connection; everything bounded.
"""

import argparse
import socket
import sys
import threading
import time

BEHAVIOURS = {7101: "no-final-crlf", 7102: "endless-header", 7103: "interim", 7104: "407-body",
              7105: "close-in-header"}
HEADER_MAX = 65536
HOLD_MAX = 60.0       # no-final-crlf holds a connection at most this long
ENDLESS_MAX = 1 << 20  # endless-header sends at most this many bytes

log_lock = threading.Lock()


def say(line):
    with log_lock:
        print(line, flush=True)


def read_request(conn):
    """The request header, or None if the client closed or sent too much."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(4096)
        if not chunk or len(data) > HEADER_MAX:
            return None
        data += chunk
    return data


def split_hostport(authority):
    if authority.startswith("["):
        host, _, port = authority[1:].partition("]:")
    else:
        host, _, port = authority.rpartition(":")
    return host, int(port)


def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def relay(conn, host, port, head):
    try:
        up = socket.create_connection((host, port), timeout=10)
    except OSError as e:
        conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\n\r\n")
        say("relay to %s:%d failed: %s" % (host, port, e))
        return
    up.settimeout(None)
    conn.sendall(head)
    t = threading.Thread(target=pipe, args=(up, conn), daemon=True)
    t.start()
    pipe(conn, up)
    t.join(HOLD_MAX)
    up.close()


def hold(conn, limit):
    """Until the client closes (or limit seconds)."""
    conn.settimeout(limit)
    try:
        while conn.recv(4096):
            pass
    except OSError:
        pass


def serve(conn):
    conn.settimeout(HOLD_MAX)
    try:
        req = read_request(conn)
        if req is None:
            return
        lines = req.split(b"\r\n")
        parts = lines[0].decode("latin-1").split()
        auth = "-"
        for line in lines[1:]:
            name, _, value = line.decode("latin-1").partition(":")
            if name.lower() == "proxy-authorization":
                auth = value.strip()
        if len(parts) != 3 or parts[0] != "CONNECT":
            say("not a CONNECT: %r" % lines[0][:80])
            conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            return
        host, port = split_hostport(parts[1])
        what = BEHAVIOURS.get(port, "relay")
        say("CONNECT %s %s -> %s" % (parts[1], auth, what))
        if what == "no-final-crlf":
            conn.sendall(b"HTTP/1.1 200 Connection established\r\nServer: httpproxy\r\n")
            hold(conn, HOLD_MAX)
        elif what == "endless-header":
            conn.sendall(b"HTTP/1.1 200 Connection established\r\nX-Filler: ")
            sent = 0
            while sent < ENDLESS_MAX:
                conn.sendall(b"a" * 4096)
                sent += 4096
        elif what == "interim":
            relay(conn, host, 7000, b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\nX: y\r\n\r\n"
                  b"HTTP/1.1 200 Connection established\r\n\r\n")
        elif what == "407-body":
            body = b"<html>authentication required</html>\n"
            conn.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                         b"Proxy-Authenticate: Basic realm=\"httpproxy\"\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        elif what == "close-in-header":
            conn.sendall(b"HTTP/1.1 200 Connection established\r\nVia: 1.1 httpproxy\r\n")
        else:
            relay(conn, host, port, b"HTTP/1.1 200 Connection established\r\n\r\n")
    except OSError as e:
        say("connection ended: %s" % e)
    finally:
        conn.close()


def accept_loop(srv):
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--listen", action="append", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ready-file", required=True)
    args = ap.parse_args()
    for addr in args.listen:
        fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
        srv = socket.socket(fam, socket.SOCK_STREAM)
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((addr, args.port))
        srv.listen(256)
        threading.Thread(target=accept_loop, args=(srv,), daemon=True).start()
    with open(args.ready_file, "w") as f:
        f.write("ready\n")
    say("listening on %s port %d" % (", ".join(args.listen), args.port))
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    sys.exit(main())
