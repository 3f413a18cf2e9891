#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Records the seeds of fuzz_tls (test/fuzz/corpus/fuzz_tls/seed-*): what
a real TLS server (Python's ssl, OpenSSL) sends to a client, flight by
flight, for TLS 1.3 and TLS 1.2.

    test/fuzz/record_tls.py CA.pem SERVER.pem SERVER.key [CORPUS_DIR]

SERVER.pem must be signed by CA.pem and carry IP:127.0.0.1 (the address
the harness connects to); fuzz_tls.c holds CA.pem's text (FUZZ_CA), so
that recorded certificates verify and a TLS 1.2 seed gets past the
certificate to the key exchange's signature. Not deterministic (random
values of both ends), unlike gen_corpus.py: rerun only with a new CA, and
put it in fuzz_tls.c. Standard library only.

A seed is fuzz_tls's input: a flags byte (0: verify, the server's FIN at
the end; 1: tls-verify = false; 2: a reset at the end), then the flights
as [length, 2 bytes big-endian][bytes]: the server's answer to each
flight of the client, the last one its answer to the SOCKS5 greeting
after the handshake (05 00). Besides the two recordings: each without
verification, cut inside the ServerHello or the certificate (then a reset
or a FIN), an alert, and an HTTP answer where TLS was expected.
"""
import os
import ssl
import struct
import sys


def record(ca, cert, key, version):
    cctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    cctx.load_verify_locations(ca)
    cctx.check_hostname = False
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(cert, key)
    sctx.minimum_version = sctx.maximum_version = version
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    c = cctx.wrap_bio(c_in, c_out, server_hostname="127.0.0.1")
    s = sctx.wrap_bio(s_in, s_out, server_side=True)
    flights, c_done, s_done = [], False, False
    for _ in range(10):
        if not c_done:
            try:
                c.do_handshake()
                c_done = True
                c.write(b"\x05\x01\x00")  # the SOCKS5 greeting
            except ssl.SSLWantReadError:
                pass
        s_in.write(c_out.read())
        if not s_done:
            try:
                s.do_handshake()
                s_done = True
            except ssl.SSLWantReadError:
                pass
        if s_done:
            try:
                if s.read(64) == b"\x05\x01\x00":
                    s.write(b"\x05\x00")
            except ssl.SSLWantReadError:
                pass
        out = s_out.read()
        if out:
            flights.append(out)
            c_in.write(out)
        if c_done and s_done and not s_out.pending and len(flights) >= 2:
            break
    return flights


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    ca, cert, key = sys.argv[1:4]
    out = sys.argv[4] if len(sys.argv) > 4 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                "corpus", "fuzz_tls")
    os.makedirs(out, exist_ok=True)
    def write(name, flags, flights):
        with open(os.path.join(out, "seed-%s" % name), "wb") as f:
            f.write(bytes([flags]) + b"".join(struct.pack(">H", len(x)) + x for x in flights))
        print("seed-%s: flags %d, %d flights, %s bytes" % (name, flags, len(flights), [len(x) for x in flights]))

    for name, version in (("tls13", ssl.TLSVersion.TLSv1_3), ("tls12", ssl.TLSVersion.TLSv1_2)):
        flights = record(ca, cert, key, version)
        write(name, 0, flights)
        write(name + "-noverify", 1, flights)
        # the server resets inside its first flight (the ServerHello, the certificate)
        write(name + "-reset-hello", 2, [flights[0][:40]])
        write(name + "-reset-cert", 2, [flights[0][:300]])
        write(name + "-fin-cert", 0, [flights[0][:300]])
    write("alert", 0, [bytes.fromhex("15030300020228")])  # handshake_failure
    write("http", 0, [b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"])  # not TLS at all


if __name__ == "__main__":
    main()
