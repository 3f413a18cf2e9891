#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A SOCKS5 server whose UDP relay misbehaves, for the s5tund e2e tests.

  udpbadproxy.py --listen 10.200.0.2 --port 1090 --bnd 192.0.2.1 [--ready-file F]

Only "no authentication" and UDP ASSOCIATE. The reply names --bnd as
BND.ADDR (an unroutable or unspecified address, to exercise s5tund's
[socks5] udp-address and its fallback to the proxy's own address) with the
port of the association's UDP socket, which listens on the --listen address.

No target is involved: every datagram from the client is answered by the
relay itself, first with broken datagrams that s5tund must drop (their
payloads start with "BAD", so a client that sees one knows it leaked), then
with the datagram echoed from the destination the client named:

  1. 2 bytes (truncated RSV/FRAG)
  2. an IPv4 header cut inside the address
  3. ATYP 9
  4. a domain name whose length byte runs past the end of the datagram
  5. FRAG = 1 (a fragment: dropped per RFC 1928)
  6. a source of the other address family than the client's
"""

import argparse
import os
import socket
import struct
import sys
import threading

sys.dont_write_bytecode = True


def log(msg):
    print("udpbadproxy: " + msg, flush=True)


def recv_exact(c, n):
    b = b""
    while len(b) < n:
        k = c.recv(n - len(b))
        if not k:
            raise ConnectionError("EOF")
        b += k
    return b


def parse_header(d):
    atyp = d[3]
    if atyp == 1:
        return d[:4], d[4:8], d[8:10], d[10:]
    if atyp == 4:
        return d[:4], d[4:20], d[20:22], d[22:]
    raise ValueError("ATYP %d" % atyp)


def relay(u, stop):
    u.settimeout(0.5)
    n = 0
    while not stop.is_set():
        try:
            d, peer = u.recvfrom(65535)
        except socket.timeout:
            continue
        except OSError:
            return
        try:
            head, addr, port, payload = parse_header(d)
        except (ValueError, IndexError) as e:
            log("bad datagram from the client: %s" % e)
            continue
        atyp = head[3]
        other = b"\x00\x00\x00\x04" + b"\xfd" + b"\x00" * 15 if atyp == 1 else b"\x00\x00\x00\x01\x0a\x00\x00\x01"
        bad = [
            b"\x00\x00",
            b"\x00\x00\x00\x01\x0a\xc9",
            b"\x00\x00\x00\x09" + addr + port + b"BAD" + payload,
            b"\x00\x00\x00\x03\xff" + b"BADname",
            b"\x00\x00\x01" + bytes([atyp]) + addr + port + b"BAD" + payload,
            other + port + b"BAD" + payload,
        ]
        for b in bad:
            u.sendto(b, peer)
        u.sendto(b"\x00\x00\x00" + bytes([atyp]) + addr + port + payload, peer)
        n += 1
    log("association relayed %d datagrams" % n)


def handle(c, args):
    stop = threading.Event()
    u = None
    try:
        ver, nm = recv_exact(c, 2)
        recv_exact(c, nm)
        c.sendall(b"\x05\x00")
        ver, cmd, _, atyp = recv_exact(c, 4)
        alen = {1: 4, 4: 16}.get(atyp) or recv_exact(c, 1)[0]
        recv_exact(c, alen + 2)
        if cmd != 3:
            c.sendall(b"\x05\x07\x00\x01" + b"\x00" * 6)
            return
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.bind((args.listen, 0))
        port = u.getsockname()[1]
        c.sendall(b"\x05\x00\x00\x01" + socket.inet_aton(args.bnd) + struct.pack("!H", port))
        log("UDP ASSOCIATE: relay on port %d, told BND %s" % (port, args.bnd))
        t = threading.Thread(target=relay, args=(u, stop), daemon=True)
        t.start()
        while c.recv(4096):
            pass
    except (OSError, ConnectionError, ValueError) as e:
        log("control connection: %s" % e)
    finally:
        stop.set()
        c.close()
        if u is not None:
            u.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--bnd", required=True)
    ap.add_argument("--ready-file")
    args = ap.parse_args()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((args.listen, args.port))
    s.listen(128)
    if args.ready_file:
        with open(args.ready_file, "w") as f:
            f.write("%d\n" % os.getpid())
    log("listening on %s port %d" % (args.listen, args.port))
    while True:
        c, _ = s.accept()
        threading.Thread(target=handle, args=(c, args), daemon=True).start()


if __name__ == "__main__":
    main()
