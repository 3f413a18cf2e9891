#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Captures real ClientHellos as fixture files for unit.sniff.

    test/unit/sniff/capture.py [DIR]

Listens on 127.0.0.1, runs `openssl s_client -servername NAME` and `curl
https://NAME:PORT/ --resolve NAME:PORT:127.0.0.1` (Debian's) against it, and
keeps what each client sent until its ClientHello is whole (the records
gathered), as DIR/tls_openssl.bin (openssl.sniff.example) and
DIR/tls_curl.bin (curl.sniff.example). Loopback only; the
connection is closed after the ClientHello, so the clients fail (expected).
"""
import os
import socket
import struct
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))


def read_hello(conn):
    data = b""
    conn.settimeout(5)
    hs = b""
    while True:
        while len(data) < 5:
            chunk = conn.recv(65536)
            if not chunk:
                return data
            data += chunk
        # Records from the start of data, their fragments concatenated.
        at, hs = 0, b""
        while at + 5 <= len(data):
            rlen = struct.unpack("!H", data[at + 3:at + 5])[0]
            hs += data[at + 5:at + 5 + rlen]
            if at + 5 + rlen > len(data):
                break
            at += 5 + rlen
        if len(hs) >= 4 and len(hs) >= 4 + int.from_bytes(hs[1:4], "big"):
            return data
        chunk = conn.recv(65536)
        if not chunk:
            return data
        data += chunk


def capture(cmd_of_port, path):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    got = {}

    def serve():
        conn, _ = srv.accept()
        got["data"] = read_hello(conn)
        conn.close()

    t = threading.Thread(target=serve)
    t.start()
    subprocess.run(cmd_of_port(port), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=20)
    t.join(10)
    srv.close()
    with open(path, "wb") as f:
        f.write(got["data"])
    print(f"{path}: {len(got['data'])} bytes")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    capture(lambda p: ["openssl", "s_client", "-connect", f"127.0.0.1:{p}", "-servername",
                       "openssl.sniff.example"], os.path.join(out, "tls_openssl.bin"))
    capture(lambda p: ["curl", "-s", "--max-time", "5", "--resolve", f"curl.sniff.example:{p}:127.0.0.1",
                       f"https://curl.sniff.example:{p}/"], os.path.join(out, "tls_curl.bin"))


if __name__ == "__main__":
    main()
