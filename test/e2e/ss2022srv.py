#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A Shadowsocks 2022 server of the tests' own (e2e.upstream_ss), written
from the spec (SIP022, SIP023) with python3-cryptography's AEADs and AES,
and Debian's b3sum for BLAKE3: there is no 2022 server in Debian. TCP:
reads the salt, (with --users) the identity header naming the user, the
fixed header (type 0, timestamp within 30 s, the variable header's
length), the variable header (target, padding, first payload), connects to
the target and relays: up, length and payload chunks; down, its own salt,
the fixed header (type 1, timestamp, the request's salt, the first chunk's
length), that chunk, then length and payload chunks. Logs "connect to
HOST:PORT" per request ("closed with nothing sent" for a connection that
ended before its salt: a pooled one recycled). --skew S: answers at once, without connecting,
with a timestamp S seconds off (the clock-skew case).

--udp: the same port's UDP too (SIP022 3.2, 4.1): the separate header
(session id, packet id; AES-ECB with the first key) and the body (subkey of
the user's key and the session id, nonce separate header[4..16]), or for
chacha20 XChaCha20-Poly1305 with the PSK and a random 24-byte nonce (its
HChaCha20 here, from draft-irtf-cfrg-xchacha, checked against the draft's
vector at start). Each client session gets its own server session id and
a socket to the targets; answers carry the client's session id. Logs "udp
to HOST:PORT" per session and target. --dup: every answer sent twice (the
same packet id: the client's replay window must drop the second).

--users K1,K2...: a multi-user server (SIP023 identity headers): --key is
its identity key (iPSK), these are the users' keys (uPSK); a request's
identity header names its user, whose key then does the rest. Logs "user
N" for the user a request named.
"""
import argparse
import base64
import functools
import os
import socket
import struct
import subprocess
import sys
import threading
import time

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

METHODS = {"2022-blake3-aes-128-gcm": (16, AESGCM), "2022-blake3-aes-256-gcm": (32, AESGCM),
           "2022-blake3-chacha20-poly1305": (32, ChaCha20Poly1305)}


@functools.lru_cache(maxsize=4096)  # a UDP session's subkey and the users' hashes: b3sum once each
def b3(data, n, context=None):
    """BLAKE3 by b3sum: its hash, or derive_key with context."""
    argv = ["b3sum", "--raw", "-l", str(n)] + (["--derive-key", context] if context else [])
    return subprocess.run(argv, input=data, capture_output=True, check=True).stdout


def subkey(psk, salt):
    return b3(psk + salt, len(psk), "shadowsocks 2022 session subkey")


def ecb(key, block, enc=True):
    c = Cipher(algorithms.AES(key), modes.ECB())
    x = c.encryptor() if enc else c.decryptor()
    return x.update(block) + x.finalize()


def hchacha20(key, nonce):
    """HChaCha20 (draft-irtf-cfrg-xchacha 2.2): 20 ChaCha rounds, no final addition, words 0-3 and 12-15."""
    m = 0xFFFFFFFF
    x = [0x61707865, 0x3320646E, 0x79622D32, 0x6B206574] + list(struct.unpack("<8I", key)) + \
        list(struct.unpack("<4I", nonce))

    def qr(a, b, c, d):
        for (p, q, r, k) in ((a, b, d, 16), (c, d, b, 12), (a, b, d, 8), (c, d, b, 7)):
            x[p] = (x[p] + x[q]) & m
            x[r] ^= x[p]
            x[r] = ((x[r] << k) | (x[r] >> (32 - k))) & m

    for _ in range(10):
        qr(0, 4, 8, 12), qr(1, 5, 9, 13), qr(2, 6, 10, 14), qr(3, 7, 11, 15)
        qr(0, 5, 10, 15), qr(1, 6, 11, 12), qr(2, 7, 8, 13), qr(3, 4, 9, 14)
    return struct.pack("<8I", *(x[0:4] + x[12:16]))


def xchacha(key, nonce, data, seal):
    a = ChaCha20Poly1305(hchacha20(key, nonce[:16]))
    n = bytes(4) + nonce[16:]
    return a.encrypt(n, data, None) if seal else a.decrypt(n, data, None)


# draft-irtf-cfrg-xchacha-03 section 2.2.1: the HChaCha20 vector, checked before anything runs.
assert hchacha20(bytes(range(32)), bytes.fromhex("000000090000004a0000000031415927")) == bytes.fromhex(
    "82413b4227b27bfed30e42508a877d73a0f9e4d58a74a853c12ec41326d3ecdc")


def addr_bytes(host, port):
    if ":" in host:
        return b"\x04" + socket.inet_pton(socket.AF_INET6, host) + struct.pack(">H", port)
    return b"\x01" + socket.inet_pton(socket.AF_INET, host) + struct.pack(">H", port)


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


def user_of(args, hash16):
    """The user (index, key) whose key's BLAKE3 starts with hash16."""
    for i, k in enumerate(args.user_keys):
        if b3(k, 32)[:16] == hash16:
            return i, k
    raise ValueError("no user for identity %s" % hash16.hex())


def handle(c, args, psk, klen, cls):
    try:
        try:
            salt = recv_exact(c, klen)
        except EOFError:  # a client's warm pool closing one it held ready: nothing to answer
            print("closed with nothing sent", flush=True)
            return
        if args.user_keys:  # the identity header: the user's key's hash under the identity subkey
            ik = b3(psk + salt, klen, "shadowsocks 2022 identity subkey")
            n, psk = user_of(args, ecb(ik, recv_exact(c, 16), enc=False))
            print("user %d" % n, flush=True)
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


class Udp:
    """The UDP side: client sessions by client session id, each with a server session and a target socket."""

    def __init__(self, args, psk, klen):
        self.args, self.psk, self.klen, self.sessions = args, psk, klen, {}
        fam = socket.AF_INET6 if ":" in args.listen else socket.AF_INET
        self.s = socket.socket(fam, socket.SOCK_DGRAM)
        self.s.bind((args.listen, args.port))
        self.chacha = args.method.endswith("chacha20-poly1305")

    def open(self, pkt):
        """(client session id, user key, target host, port, payload) of a client packet."""
        if self.chacha:
            b = xchacha(self.psk, pkt[:24], pkt[24:], False)
            sep, body, upsk = b[:16], b[16:], self.psk
        else:
            sep = ecb(self.psk, pkt[:16], enc=False)
            rest, upsk = pkt[16:], self.psk
            if self.args.user_keys:
                x = ecb(self.psk, rest[:16], enc=False)
                n, upsk = user_of(self.args, bytes(a ^ b for a, b in zip(x, sep)))
                print("udp user %d" % n, flush=True)
                rest = rest[16:]
            body = AESGCM(subkey(upsk, sep[:8])).decrypt(sep[4:16], rest, None)
        typ, ts, pad = struct.unpack(">BQH", body[:11])
        if typ != 0 or abs(ts - time.time()) > 30:
            raise ValueError("udp packet type %d, timestamp %d" % (typ, ts))
        host, port, payload = addr_of(body[11 + pad:])
        return sep[:8], upsk, host, port, payload

    def seal(self, sess, host, port, payload):
        sid, upsk = sess["sid"], sess["upsk"]
        sep = sid + struct.pack(">Q", sess["pid"])
        sess["pid"] += 1
        main = struct.pack(">BQ", 1, int(time.time())) + sess["csid"] + struct.pack(">H", 0)
        body = main + addr_bytes(host, port) + payload
        if self.chacha:
            nonce = os.urandom(24)
            return nonce + xchacha(self.psk, nonce, sep + body, True)
        return ecb(upsk, sep) + AESGCM(subkey(upsk, sid)).encrypt(sep[4:16], body, None)

    def back(self, sess):
        while True:
            d, a = sess["t"].recvfrom(65535)
            pkt = self.seal(sess, a[0], a[1], d)
            self.s.sendto(pkt, sess["client"])
            if self.args.dup:
                self.s.sendto(pkt, sess["client"])

    def run(self):
        while True:
            pkt, client = self.s.recvfrom(65535)
            try:
                csid, upsk, host, port, payload = self.open(pkt)
            except Exception as e:  # one packet
                print("udp packet refused: %r" % e, flush=True)
                continue
            sess = self.sessions.get(csid)
            if sess is None:
                fam = socket.AF_INET6 if ":" in host else socket.AF_INET
                sess = {"sid": os.urandom(8), "pid": 0, "csid": csid, "upsk": upsk, "seen": set(),
                        "t": socket.socket(fam, socket.SOCK_DGRAM)}
                self.sessions[csid] = sess
                threading.Thread(target=self.back, args=(sess,), daemon=True).start()
            sess["client"] = client
            if (host, port) not in sess["seen"]:
                sess["seen"].add((host, port))
                print("udp to %s:%d" % (host, port), flush=True)
            sess["t"].sendto(payload, (host, port))


def addr_of(b):
    """(host, port, rest) of a SOCKS address at the start of b."""
    if b[0] == 1:
        host, i = socket.inet_ntop(socket.AF_INET, b[1:5]), 5
    elif b[0] == 4:
        host, i = socket.inet_ntop(socket.AF_INET6, b[1:17]), 17
    else:
        host, i = b[2:2 + b[1]].decode(), 2 + b[1]
    return host, struct.unpack(">H", b[i:i + 2])[0], b[i + 2:]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--listen", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--method", required=True, choices=sorted(METHODS))
    ap.add_argument("--key", required=True, help="base64 PSK")
    ap.add_argument("--skew", type=int, default=0)
    ap.add_argument("--udp", action="store_true")
    ap.add_argument("--dup", action="store_true")
    ap.add_argument("--users", default="", help="the users' base64 keys, ','-separated: --key is the identity key")
    args = ap.parse_args()
    klen, cls = METHODS[args.method]
    psk = base64.b64decode(args.key, validate=True)
    args.user_keys = [base64.b64decode(k, validate=True) for k in args.users.split(",") if k]
    for k in [psk] + args.user_keys:
        if len(k) != klen:
            sys.exit("a key is %d bytes, %s takes %d" % (len(k), args.method, klen))
    if args.udp:
        threading.Thread(target=Udp(args, psk, klen).run, daemon=True).start()
    s = socket.create_server((args.listen, args.port), family=socket.AF_INET6 if ":" in args.listen else socket.AF_INET)
    while True:
        c, _ = s.accept()
        threading.Thread(target=handle, args=(c, args, psk, klen, cls), daemon=True).start()


if __name__ == "__main__":
    main()
