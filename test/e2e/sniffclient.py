#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Clients and servers of the [sniff] end-to-end case (sniff.sh), standard
library only:

  sniffclient.py tls HOST PORT NAME [--split-ms MS] [--pad N] [--hold-file F]
      a real TLS ClientHello (Python's ssl module, through a MemoryBIO) for
      NAME, written in two segments MS ms apart (TCP_NODELAY), with N bytes
      of further ALPN names (a ClientHello over 2 KB); then the handshake,
      GET / (once F exists) and the response body printed ("one" or "two")
  sniffclient.py ttfb HOST PORT NAME COUNT
      COUNT connections sending a ClientHello for NAME: the fastest and the
      median ms to the server's first byte (a measurement, not a test)
  sniffclient.py banner HOST PORT COUNT
      COUNT connections that each read a server-first banner ("SSH-..."),
      then close: prints the banners read
  sniffclient.py silent HOST PORT MS
      connects, says nothing for MS ms, then ECHO (target.py) and "hello",
      prints what came back
  sniffclient.py bannerd HOST PORT READY
      the server side of banner: "SSH-2.0-sniff-e2e" to each connection
  sniffclient.py refused HOST PORT READY
      a SOCKS5 proxy that reads a CONNECT and the bytes behind it, logs them
      ("refused CONNECT ... with N bytes behind it, sni one.test"), then
      answers general failure (REP 1)
"""

import os
import socket
import ssl
import struct
import sys
import threading
import time


def tls(host, port, name, split_ms, pad, hold=None):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    protos = ["http/1.1"]
    while pad > 0:
        n = min(pad, 200)
        protos.append("x" * (n - 4) + "%04d" % len(protos))
        pad -= n
    ctx.set_alpn_protocols(protos)
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname=name)
    s = socket.create_connection((host, port), timeout=20)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    hello = out.read()
    cut = len(hello) // 3
    s.sendall(hello[:cut])
    time.sleep(split_ms / 1000.0)
    s.sendall(hello[cut:])
    while True:
        try:
            obj.do_handshake()
            break
        except ssl.SSLWantReadError:
            pending = out.read()
            if pending:
                s.sendall(pending)
            data = s.recv(65536)
            if not data:
                raise SystemExit("EOF during the handshake")
            inc.write(data)
    pending = out.read()
    if pending:
        s.sendall(pending)
    while hold is not None and not os.path.exists(hold):  # an open session, until the test says
        time.sleep(0.05)
    obj.write(b"GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % name.encode())
    s.sendall(out.read())
    body = b""
    while True:
        try:
            chunk = obj.read(65536)
            if not chunk:
                break
            body += chunk
            continue
        except ssl.SSLWantReadError:
            pass
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
            break
        data = s.recv(65536)
        if not data:
            break
        inc.write(data)
    print("hello %d bytes; %s" % (len(hello), body.split(b"\r\n\r\n", 1)[-1].decode().strip()))


def ttfb(host, port, name, count):
    """count connections: ms from the ClientHello sent to the server's first byte; the fastest, the median"""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    got = []
    for _ in range(count):
        out = ssl.MemoryBIO()
        obj = ctx.wrap_bio(ssl.MemoryBIO(), out, server_hostname=name)
        try:
            obj.do_handshake()
        except ssl.SSLWantReadError:
            pass
        s = socket.create_connection((host, port), timeout=20)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        t0 = time.monotonic()
        s.sendall(out.read())
        if not s.recv(1):
            raise SystemExit("no first byte")
        got.append((time.monotonic() - t0) * 1000)
        s.close()
        time.sleep(0.5)
    got.sort()
    print("%.1f %.1f" % (got[0], got[len(got) // 2]))


def banner(host, port, count):
    for _ in range(count):
        s = socket.create_connection((host, port), timeout=20)
        line = s.makefile("rb").readline().decode().strip()
        s.close()
        print(line)


def silent(host, port, ms):
    s = socket.create_connection((host, port), timeout=20)
    time.sleep(ms / 1000.0)
    s.sendall(b"ECHO\nhello")  # no half-close: microsocks would end both ways at once
    got = b""
    while len(got) < 5:
        data = s.recv(65536)
        if not data:
            break
        got += data
    s.close()
    print(got.decode())


def serve(host, port, ready, handle):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, port))
    ls.listen(64)
    open(ready, "w").write("ready\n")
    while True:
        c, _ = ls.accept()
        threading.Thread(target=handle, args=(c,), daemon=True).start()


def bannerd(c):
    try:
        c.sendall(b"SSH-2.0-sniff-e2e\r\n")
        c.settimeout(5)
        c.recv(1024)
    except OSError:
        pass
    c.close()


def exact(c, n):
    b = b""
    while len(b) < n:
        d = c.recv(n - len(b))
        if not d:
            raise EOFError
        b += d
    return b


def refused(c):
    try:
        c.settimeout(10)
        ver, n = exact(c, 2)
        exact(c, n)
        c.sendall(b"\x05\x00")
        ver, cmd, _, atyp = exact(c, 4)
        if atyp == 1:
            dst = socket.inet_ntoa(exact(c, 4))
        elif atyp == 3:
            dst = exact(c, exact(c, 1)[0]).decode()
        else:
            dst = socket.inet_ntop(socket.AF_INET6, exact(c, 16))
        (dport,) = struct.unpack("!H", exact(c, 2))
        behind = c.recv(65536)  # the client's first bytes, right behind the request
        sni = "one.test" if b"one.test" in behind else "-"
        print("refused CONNECT %s:%d with %d bytes behind it, sni %s" % (dst, dport, len(behind), sni),
              flush=True)
        c.sendall(b"\x05\x01\x00\x01" + b"\x00" * 6)
    except (OSError, EOFError, ValueError) as e:
        print("refused: %s" % e, flush=True)
    c.close()


def main():
    a = sys.argv[1:]
    if a[0] == "tls":
        split_ms, pad = 0, 0
        if "--split-ms" in a:
            split_ms = int(a[a.index("--split-ms") + 1])
        if "--pad" in a:
            pad = int(a[a.index("--pad") + 1])
        hold = a[a.index("--hold-file") + 1] if "--hold-file" in a else None
        tls(a[1], int(a[2]), a[3], split_ms, pad, hold)
    elif a[0] == "ttfb":
        ttfb(a[1], int(a[2]), a[3], int(a[4]))
    elif a[0] == "banner":
        banner(a[1], int(a[2]), int(a[3]))
    elif a[0] == "silent":
        silent(a[1], int(a[2]), int(a[3]))
    elif a[0] == "bannerd":
        serve(a[1], int(a[2]), a[3], bannerd)
    elif a[0] == "refused":
        serve(a[1], int(a[2]), a[3], refused)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
