#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A proxy that stalls mid-record (upstream_enc.sh's stall case).

  stallproxy.py tls --listen A --port P --cert C --key K --ready-file F
      completes a TLS handshake (ssl over memory BIOs, the certificate
      given), then writes half a TLS record
      (its 5-byte header announces 64 bytes, 10 follow) straight to the
      socket and nothing more: the connection is held open, silent.
  stallproxy.py ss --listen A --port P --salt N --ready-file F
      reads the client's first bytes (a Shadowsocks request), then writes
      a salt of N bytes and half of the first chunk's sealed length (9 of
      2 + 16 bytes), and nothing more.

One line per connection on stdout: "CONN n accepted", "CONN n stalled"
(the half record or chunk sent), "CONN n ended: WHY" when the client hangs
up (how s5tund ended the session it cost): the socket is kept open all
the same, as a stalled server would."""
import argparse
import os
import socket
import ssl
import sys
import threading


def log(msg):
    print(msg, flush=True)


def tls_handshake(c, ctx):
    """The server side of a handshake over memory BIOs on socket c; returns
    the SSLObject (so that raw bytes can follow on c itself)."""
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_side=True)
    while True:
        try:
            obj.do_handshake()
            break
        except ssl.SSLWantReadError:
            pending = out.read()
            if pending:
                c.sendall(pending)
            data = c.recv(65536)
            if not data:
                raise ConnectionError("client closed in the handshake")
            inc.write(data)
    pending = out.read()
    if pending:
        c.sendall(pending)
    return obj, inc, out


def serve(c, n, args, ctx):
    try:
        if args.kind == "tls":
            obj, inc, out = tls_handshake(c, ctx)
            c.sendall(bytes([0x17, 0x03, 0x03, 0x00, 0x40]) + os.urandom(10))
        else:
            if not c.recv(65536):
                raise ConnectionError("client closed before its request")
            c.sendall(os.urandom(args.salt) + os.urandom(9))
        log("CONN %d stalled" % n)
        while True:  # silent; the client's bytes are read and dropped
            data = c.recv(65536)
            if not data:
                break
        # The client's FIN: a stalled server does not close (until killed).
        log("CONN %d ended: EOF" % n)
        threading.Event().wait()
    except OSError as e:
        log("CONN %d ended: %s" % (n, e))
    finally:
        c.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("kind", choices=["tls", "ss"])
    p.add_argument("--listen", required=True)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--salt", type=int, default=16)
    p.add_argument("--ready-file", required=True)
    args = p.parse_args()
    ctx = None
    if args.kind == "tls":
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.cert, args.key)
    fam = socket.AF_INET6 if ":" in args.listen else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((args.listen, args.port))
    s.listen(64)
    with open(args.ready_file, "w") as f:
        f.write("ready\n")
    n = 0
    while True:
        c, _ = s.accept()
        n += 1
        log("CONN %d accepted" % n)
        threading.Thread(target=serve, args=(c, n, args, ctx), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
