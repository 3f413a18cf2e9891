#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A Shadowsocks 2022 TCP server of the tests' own (e2e.upstream_ss), written
from the spec (SIP022) with python3-cryptography's AEADs and Debian's b3sum
for BLAKE3: there is no 2022 server in Debian. Reads the salt, the fixed
header (type 0, timestamp within 30 s, the variable header's length), the
variable header (target, padding, first payload), connects to the target
and relays: up, length and payload chunks; down, its own salt, the fixed
header (type 1, timestamp, the request's salt, the first chunk's length),
that chunk, then length and payload chunks. Logs "connect to HOST:PORT"
per request ("closed with nothing sent" for a connection that ended
before its salt: a pooled one recycled). --skew S: answers at once, without connecting, with a
timestamp S seconds off (the clock-skew case).
"""
import argparse
import base64
import os
import socket
import struct
import subprocess
import sys
import threading
import time

from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

METHODS = {"2022-blake3-aes-128-gcm": (16, AESGCM), "2022-blake3-aes-256-gcm": (32, AESGCM),
           "2022-blake3-chacha20-poly1305": (32, ChaCha20Poly1305)}


def subkey(psk, salt):
    return subprocess.run(["b3sum", "--derive-key", "shadowsocks 2022 session subkey", "--raw", "-l",
                           str(len(psk))], input=psk + salt, capture_output=True, check=True).stdout


class Aead:
    def __init__(self, cls, key):
        self.a, self.n = cls(key), 0

    def _nonce(self):
        self.n += 1
        return (self.n - 1).to_bytes(12, "little")

    def seal(self, b):
        return self.a.encrypt(self._nonce(), b, None)

    def open(self, b):
        return self.a.decrypt(self._nonce(), b, None)


def recv_exact(s, n):
    b = b""
    while len(b) < n:
        d = s.recv(n - len(b))
        if not d:
            raise EOFError
        b += d
    return b


def target_of(var):
    atyp, i = var[0], 1
    if atyp == 1:
        host, i = socket.inet_ntop(socket.AF_INET, var[1:5]), 5
    elif atyp == 4:
        host, i = socket.inet_ntop(socket.AF_INET6, var[1:17]), 17
    else:
        host, i = var[2:2 + var[1]].decode(), 2 + var[1]
    port, pad = struct.unpack(">HH", var[i:i + 4])
    return host, port, var[i + 4 + pad:]


def up(c, t, dec):
    try:
        while True:
            n = struct.unpack(">H", dec.open(recv_exact(c, 18)))[0]
            t.sendall(dec.open(recv_exact(c, n + 16)))
    except (EOFError, OSError):
        pass
    try:
        t.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def handle(c, args, psk, klen, cls):
    try:
        try:
            salt = recv_exact(c, klen)
        except EOFError:  # a client's warm pool closing one it held ready: nothing to answer
            print("closed with nothing sent", flush=True)
            return
        dec = Aead(cls, subkey(psk, salt))
        typ, ts, vlen = struct.unpack(">BQH", dec.open(recv_exact(c, 11 + 16)))
        if typ != 0 or abs(ts - time.time()) > 30:
            raise ValueError("request type %d, timestamp %d" % (typ, ts))
        host, port, payload = target_of(dec.open(recv_exact(c, vlen + 16)))
        print("connect to %s:%d" % (host, port), flush=True)
        ssalt = os.urandom(klen)
        enc = Aead(cls, subkey(psk, ssalt))

        def head(n):
            return ssalt + enc.seal(struct.pack(">BQ", 1, int(time.time()) + args.skew) + salt + struct.pack(">H", n))

        if args.skew:  # then read to the end: a close with bytes unread would be a reset, not our answer
            c.sendall(head(1) + enc.seal(b"x"))
            c.shutdown(socket.SHUT_WR)
            while c.recv(65536):
                pass
            return
        t = socket.create_connection((host, port))
        t.sendall(payload)
        threading.Thread(target=up, args=(c, t, dec), daemon=True).start()
        first = True
        while True:
            d = t.recv(0xFFFF)
            if first:
                c.sendall(head(len(d)) + enc.seal(d))
                first = False
            elif d:
                c.sendall(enc.seal(struct.pack(">H", len(d))) + enc.seal(d))
            if not d:
                break
        c.shutdown(socket.SHUT_WR)
    except Exception as e:  # one session
        print("session failed: %r" % e, flush=True)
    finally:
        c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--method", required=True, choices=sorted(METHODS))
    ap.add_argument("--key", required=True, help="base64 PSK")
    ap.add_argument("--skew", type=int, default=0)
    args = ap.parse_args()
    klen, cls = METHODS[args.method]
    psk = base64.b64decode(args.key, validate=True)
    if len(psk) != klen:
        sys.exit("the key is %d bytes, %s takes %d" % (len(psk), args.method, klen))
    s = socket.create_server((args.listen, args.port), family=socket.AF_INET6 if ":" in args.listen else socket.AF_INET)
    while True:
        c, _ = s.accept()
        threading.Thread(target=handle, args=(c, args, psk, klen, cls), daemon=True).start()


if __name__ == "__main__":
    main()
