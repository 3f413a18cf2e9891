#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Client for the s5tund end-to-end tests (target protocol: see e2elib.py).

  client.py [common options] echo [--count N] [--halfclose] [--retry-for S]
  client.py [common options] bulk [--size 64M] [--upload-mode eof|length]
  client.py [common options] concurrent N [--retry-for S]
  client.py [common options] hold [--hold S]
  client.py [common options] idle-echo --wait-file F [--idle-max S]
  client.py [common options] expect-refused [--accept-eof]
  client.py [common options] rst --tag T
  client.py [common options] silent --tag T [--expect reset|eof]
  client.py [common options] read-end --expect-data BYTES --expect-end reset|eof [--fill N] [--pause S]
  client.py [common options] talk [--interval S] [--duration S]
  client.py [common options] limit N [--retry-for S]

Common options: --host ADDR --port PORT --timeout S (every socket operation),
and, for the harness self-check only, --socks5 ADDR:PORT [--user U
--password P] to go through a SOCKS5 proxy directly instead of through
s5tund's TUN device.

Exit status 0 when every check passed, 1 otherwise; the last line printed
says what happened.
"""

import argparse
import hashlib
import os
import random
import socket
import struct
import sys
import threading
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402


class Mismatch(Exception):
    """Data came back wrong: a real failure, never retried."""


def log(msg):
    print("client: " + msg, flush=True)


def open_conn(args):
    return e2elib.connect(args.host, args.port, args.timeout, args.socks5,
                          args.user, args.password, args.bind)


def recv_until_eof(sock, limit=None):
    buf = bytearray()
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return bytes(buf)
        buf += chunk
        if limit is not None and len(buf) > limit:
            raise Mismatch("more than %d bytes before EOF" % limit)


# ---------------------------------------------------------------- echo

def echo_once(args, rng):
    s = open_conn(args)
    try:
        s.sendall(b"ECHO\n")
        # Ping-pong: messages small enough to always fit in the buffers of
        # the path, so send-then-receive cannot deadlock.
        sizes = [1, 2, 100, 536, 1400, 1460, 4096, 9000, 16384]
        total = 0
        for i in range(args.count):
            msg = rng.randbytes(sizes[i % len(sizes)])
            s.sendall(msg)
            got = e2elib.recv_exact(s, len(msg))
            if got != msg:
                raise Mismatch("echo message %d (%d bytes) came back different"
                               % (i, len(msg)))
            total += len(msg)
        # Streaming: 1 MiB sent by a thread while this one reads it back.
        block = rng.randbytes(args.stream_size)
        err = []

        def sender():
            try:
                s.sendall(block)
            except OSError as e:
                err.append(e)

        t = threading.Thread(target=sender, daemon=True)
        t.start()
        got = e2elib.recv_exact(s, len(block))
        t.join(args.timeout)
        if err:
            raise err[0]
        if got != block:
            raise Mismatch("streamed block of %d bytes came back different" % len(block))
        total += len(block)
        if args.halfclose:
            # Half-close: our FIN must reach the target, and the target's
            # echo of the last message must still come back after it.
            last = rng.randbytes(5000)
            s.sendall(last)
            s.shutdown(socket.SHUT_WR)
            got = recv_until_eof(s, limit=len(last))
            if got != last:
                raise Mismatch("after half-close got %d bytes back, expected the %d "
                               "bytes sent before it" % (len(got), len(last)))
            total += len(last)
            return "%d bytes echoed, half-close ok" % total
        return "%d bytes echoed" % total
    finally:
        s.close()


def cmd_echo(args):
    rng = random.Random(args.seed)
    deadline = time.monotonic() + args.retry_for
    attempt = 0
    while True:
        attempt += 1
        try:
            what = echo_once(args, rng)
            log("echo %s:%d ok: %s (attempt %d)" % (args.host, args.port, what, attempt))
            return 0
        except Mismatch as e:
            log("echo %s:%d FAILED: %s" % (args.host, args.port, e))
            return 1
        except (OSError, ConnectionError, e2elib.Socks5Error) as e:
            if time.monotonic() >= deadline:
                log("echo %s:%d FAILED after %d attempt(s): %s: %s"
                    % (args.host, args.port, attempt, type(e).__name__, e))
                return 1
            if attempt == 1 or attempt % 10 == 0:
                log("attempt %d: %s: %s; retrying" % (attempt, type(e).__name__, e))
            time.sleep(args.retry_interval)


# ---------------------------------------------------------------- bulk

def bulk_upload(args, n, seed):
    s = open_conn(args)
    try:
        h = hashlib.sha256()
        if args.upload_mode == "eof":
            s.sendall(b"UPLOAD\n")
        else:
            s.sendall(b"UPLOAD %d\n" % n)
        t0 = time.monotonic()
        for chunk in e2elib.stream(seed, n):
            h.update(chunk)
            s.sendall(chunk)
        if args.upload_mode == "eof":
            s.shutdown(socket.SHUT_WR)
        reply = recv_until_eof(s, limit=200).decode("ascii", "replace").strip()
        dt = time.monotonic() - t0
    finally:
        s.close()
    if reply != h.hexdigest():
        raise Mismatch("upload of %d bytes: target got sha256 %r, sent %s"
                       % (n, reply, h.hexdigest()))
    log("upload %d bytes ok (%s, %.1f MiB/s), sha256 %s"
        % (n, args.upload_mode, n / (1 << 20) / max(dt, 1e-6), reply))


def bulk_download(args, n, seed):
    expect = e2elib.stream_sha256(seed, n)
    s = open_conn(args)
    try:
        s.sendall(b"DOWNLOAD %d %d\n" % (n, seed))
        h = hashlib.sha256()
        got = 0
        t0 = time.monotonic()
        buf = bytearray(1 << 18)
        view = memoryview(buf)
        while True:
            k = s.recv_into(buf)
            if k == 0:
                break
            h.update(view[:k])
            got += k
        dt = time.monotonic() - t0
    finally:
        s.close()
    if got != n or h.hexdigest() != expect:
        raise Mismatch("download: got %d bytes sha256 %s, expected %d bytes sha256 %s"
                       % (got, h.hexdigest(), n, expect))
    log("download %d bytes ok (%.1f MiB/s), sha256 %s"
        % (n, n / (1 << 20) / max(dt, 1e-6), expect))


def cmd_bulk(args):
    n = e2elib.parse_size(args.size)
    try:
        if args.direction in ("both", "up"):
            bulk_upload(args, n, args.seed)
        if args.direction in ("both", "down"):
            bulk_download(args, n, args.seed + 1)
    except Mismatch as e:
        log("bulk FAILED: %s" % e)
        return 1
    except (OSError, ConnectionError, e2elib.Socks5Error) as e:
        log("bulk FAILED: %s: %s" % (type(e).__name__, e))
        return 1
    log("bulk %s:%d ok: %d bytes each way" % (args.host, args.port, n))
    return 0


# ---------------------------------------------------------------- concurrent

def concurrent_once(args, n):
    socks = [None] * n
    errors = []
    lock = threading.Lock()

    def record(i, what, e):
        with lock:
            errors.append("conn %d: %s: %s: %s" % (i, what, type(e).__name__, e))

    def opener(i):
        try:
            s = open_conn(args)
            s.sendall(b"ECHO\n")
            socks[i] = s
        except (OSError, ConnectionError, e2elib.Socks5Error) as e:
            record(i, "connect", e)

    def exchanger(i):
        s = socks[i]
        rng = random.Random(i * 7919 + args.seed)
        try:
            for r in range(args.rounds):
                msg = ("conn %d round %d " % (i, r)).encode() + rng.randbytes(2000)
                s.sendall(msg)
                got = e2elib.recv_exact(s, len(msg))
                if got != msg:
                    with lock:
                        errors.append("conn %d round %d: echo came back different" % (i, r))
                    return
        except (OSError, ConnectionError, Mismatch) as e:
            record(i, "exchange", e)

    def run_all(fn, idx):
        threads = [threading.Thread(target=fn, args=(i,), daemon=True) for i in idx]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    try:
        # Phase 1: open all n connections; they stay open together.
        run_all(opener, range(n))
        opened = sum(1 for s in socks if s is not None)
        if errors:
            return False, "%d of %d connections opened; first errors: %s" % (
                opened, n, "; ".join(sorted(errors)[:5]))
        # Phase 2: every connection does its echo exchange at the same time.
        run_all(exchanger, range(n))
        if errors:
            return False, "%d of %d exchanges failed; first errors: %s" % (
                len(errors), n, "; ".join(sorted(errors)[:5]))
        return True, "%d concurrent connections, %d rounds each, all ok" % (n, args.rounds)
    finally:
        for s in socks:
            if s is not None:
                s.close()


def cmd_concurrent(args):
    deadline = time.monotonic() + args.retry_for
    attempt = 0
    while True:
        attempt += 1
        ok, what = concurrent_once(args, args.n)
        if ok:
            log("concurrent %s:%d ok: %s (attempt %d)" % (args.host, args.port, what, attempt))
            return 0
        if time.monotonic() >= deadline:
            log("concurrent %s:%d FAILED (attempt %d): %s" % (args.host, args.port, attempt, what))
            return 1
        log("attempt %d failed: %s; retrying" % (attempt, what))
        time.sleep(args.retry_interval)


# ---------------------------------------------------------------- hold

def open_echoed(args, tag):
    """A connection that has echoed tag once (the target echoes everything
    after its first ECHO line); raises Mismatch if the echo differs."""
    s = open_conn(args)
    s.sendall(b"ECHO\n" + tag + b"\n")
    if e2elib.recv_exact(s, len(tag) + 1) != tag + b"\n":
        s.close()
        raise Mismatch("echo came back different")
    return s


def cmd_hold(args):
    """One echo exchange, then keeps the connection open (a live session)
    until the peer closes it, --hold seconds pass, or this process is killed."""
    try:
        s = open_echoed(args, b"hold")
    except Mismatch as e:
        log("hold FAILED: %s" % e)
        return 1
    except (OSError, ConnectionError, e2elib.Socks5Error) as e:
        log("hold FAILED: %s: %s" % (type(e).__name__, e))
        return 1
    log("hold: connection to %s:%d open" % (args.host, args.port))
    s.settimeout(args.hold)
    try:
        data = s.recv(4096)
        log("hold: peer closed the connection (%s)" % ("EOF" if not data else "data"))
    except socket.timeout:
        log("hold: still open after %.0f s" % args.hold)
    except OSError as e:
        log("hold: connection ended: %s" % e)
    s.close()
    return 0


def cmd_idle_echo(args):
    """One echo, then the connection idles until --wait-file exists (the
    test's signal, e.g. after a reload), then one more echo on it: an open
    session must keep working."""
    try:
        s = open_echoed(args, b"before")
        log("idle-echo: connection to %s:%d open, idling" % (args.host, args.port))
        end = time.monotonic() + args.idle_max
        while not os.path.exists(args.wait_file):
            if time.monotonic() > end:
                log("idle-echo FAILED: %s did not appear within %.0f s" % (args.wait_file, args.idle_max))
                return 1
            time.sleep(0.1)
        s.sendall(b"after\n")   # the connection echoes from its first ECHO line on
        if e2elib.recv_exact(s, 6) != b"after\n":
            log("idle-echo FAILED: second echo came back different")
            return 1
    except Mismatch as e:
        log("idle-echo FAILED: %s" % e)
        return 1
    except (OSError, ConnectionError, e2elib.Socks5Error) as e:
        log("idle-echo FAILED: %s: %s" % (type(e).__name__, e))
        return 1
    s.close()
    log("idle-echo ok: the connection opened before worked after the wait")
    return 0


# ---------------------------------------------------------------- expect-refused

def probe_refused(args, accept_eof=False):
    """One connection that should be refused: (True, how) when it was,
    (False, what happened instead) otherwise."""
    s = socket.socket(e2elib.family_of(args.host), socket.SOCK_STREAM)
    s.settimeout(args.timeout)
    try:
        try:
            s.connect((args.host, args.port))
        except ConnectionRefusedError:
            return True, "connect refused (ECONNREFUSED)"
        except ConnectionResetError:
            return True, "connection reset during connect"
        except socket.timeout:
            return False, ("connect neither completed nor was refused within %.0f s"
                           % args.timeout)
        except OSError as e:
            return False, "connect failed with %s, expected ECONNREFUSED" % e
        # Connected (the TUN side may accept before the proxy answers): the
        # connection must now be reset without delivering anything.
        try:
            s.sendall(b"ECHO\nprobe\n")
            data = s.recv(4096)
        except (ConnectionResetError, BrokenPipeError) as e:
            return True, "connected, then reset before any data (%s)" % type(e).__name__
        except socket.timeout:
            return False, ("connected, then neither data, reset nor close within %.0f s (hang)"
                           % args.timeout)
        except OSError as e:
            return False, "connected, then %s" % e
        if data:
            return False, "connection works, got %d bytes back: %r" % (len(data), data[:40])
        if accept_eof:
            return True, "connected, then closed (FIN) without data"
        return False, "connected, then closed cleanly (FIN) instead of being reset"
    finally:
        s.close()


def cmd_expect_refused(args):
    """Passes when the connection is refused (RST to the SYN) or reset before
    any data came back. Fails when data comes back (the connection works),
    when nothing at all happens within --timeout (a hang), and, unless
    --accept-eof, when the connection is closed cleanly (FIN)."""
    ok, what = probe_refused(args, args.accept_eof)
    log("expect-refused %s:%d %s: %s" % (args.host, args.port, "ok" if ok else "FAILED", what))
    return 0 if ok else 1


# ---------------------------------------------------------------- ends of connections

def recv_line(sock, limit=200):
    buf = bytearray()
    while not buf.endswith(b"\n"):
        chunk = sock.recv(1)
        if not chunk:
            raise ConnectionError("EOF after %r, expected a line" % bytes(buf))
        buf += chunk
        if len(buf) > limit:
            raise Mismatch("no end of line in %d bytes" % limit)
    return bytes(buf)


def open_hold(args):
    """A connection in the target's HOLD mode, after its "HELD" answer."""
    s = open_conn(args)
    try:
        s.sendall(b"HOLD %s\n" % args.tag.encode())
        line = recv_line(s)
        if line != b"HELD %s\n" % args.tag.encode():
            raise Mismatch("HOLD %s answered %r" % (args.tag, line))
    except BaseException:
        s.close()
        raise
    return s


def read_to_end(sock):
    """Reads until the connection ends: (ending, bytes read), the ending being
    'eof', 'reset', 'timeout' (nothing for --timeout seconds) or 'error ...'."""
    buf = bytearray()
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return "eof", bytes(buf)
            buf += chunk
    except ConnectionResetError:
        return "reset", bytes(buf)
    except socket.timeout:
        return "timeout", bytes(buf)
    except OSError as e:
        return "error %s" % e, bytes(buf)


def cmd_rst(args):
    """HOLD --tag through the tunnel, then ends the connection with a RST
    (SO_LINGER {1, 0} and close). Passes when the connection was open."""
    where = "%s:%d" % (args.host, args.port)
    try:
        s = open_hold(args)
    except (OSError, ConnectionError, Mismatch, e2elib.Socks5Error) as e:
        log("rst %s FAILED: HOLD %s: %s: %s" % (where, args.tag, type(e).__name__, e))
        return 1
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()
    log("rst %s ok: HOLD %s was open, closed it with a RST" % (where, args.tag))
    return 0


def cmd_silent(args):
    """HOLD --tag, then silence: passes when the other side ends the
    connection with --expect (reset or eof) within --timeout seconds, with no
    byte arriving first."""
    where = "%s:%d" % (args.host, args.port)
    try:
        s = open_hold(args)
    except (OSError, ConnectionError, Mismatch, e2elib.Socks5Error) as e:
        log("silent %s FAILED: HOLD %s: %s: %s" % (where, args.tag, type(e).__name__, e))
        return 1
    t0 = time.monotonic()
    try:
        end, data = read_to_end(s)
    finally:
        s.close()
    waited = time.monotonic() - t0
    what = "HOLD %s silent, then %s after %.1f s" % (args.tag, end, waited)
    if data:
        what += " (with %d unexpected bytes first: %r)" % (len(data), data[:40])
    if end == args.expect and not data:
        log("silent %s ok: %s" % (where, what))
        return 0
    log("silent %s FAILED: %s, expected %s" % (where, what, args.expect))
    return 1


def cmd_read_end(args):
    """Connects, sends nothing and reads until the connection ends (after
    --pause seconds): passes when exactly --fill pattern bytes and
    --expect-data arrived and the end was --expect-end (reset: ECONNRESET
    after the data; eof: a clean close after it)."""
    where = "%s:%d" % (args.host, args.port)
    want = args.expect_data.encode().decode("unicode_escape").encode("latin-1")
    if args.fill:
        pattern = bytes(range(256))
        want = (pattern * (args.fill // 256 + 1))[:args.fill] + want
    s = socket.socket(e2elib.family_of(args.host), socket.SOCK_STREAM)
    s.settimeout(args.timeout)
    early = ""
    try:
        try:
            s.connect((args.host, args.port))
        except ConnectionResetError:
            # Data and RST can both arrive before connect() returns: the
            # kernel then reports the reset already (SO_ERROR), while the
            # data still waits in the receive queue.
            early = "reset"
        except OSError as e:
            log("read-end %s FAILED: connect: %s: %s" % (where, type(e).__name__, e))
            return 1
        if args.pause:
            time.sleep(args.pause)   # let the peer fill the path and end first
        end, data = read_to_end(s)
        if early:
            end = "%s (reported by connect, before the data was read)" % early
    finally:
        s.close()
    what = "got %d bytes %r, then %s" % (len(data), data[-60:], end)
    if data != want:
        log("read-end %s FAILED: %s; expected the %d bytes ...%r" % (where, what, len(want),
                                                                   want[-60:]))
        return 1
    if end.split()[0] != args.expect_end:
        log("read-end %s FAILED: %s; expected %s after the data" % (where, what, args.expect_end))
        return 1
    log("read-end %s ok: %s" % (where, what))
    return 0


# ---------------------------------------------------------------- talk

def cmd_talk(args):
    """ECHO, then one small message every --interval seconds for --duration
    seconds, each echoed back; then a half-close whose EOF must come back.
    Passes when every echo came back and the connection was never reset."""
    where = "%s:%d" % (args.host, args.port)
    n = 0
    try:
        s = open_conn(args)
    except (OSError, ConnectionError, e2elib.Socks5Error) as e:
        log("talk %s FAILED: connect: %s: %s" % (where, type(e).__name__, e))
        return 1
    try:
        s.sendall(b"ECHO\n")
        t0 = time.monotonic()
        while True:
            msg = b"talk %d\n" % n
            s.sendall(msg)
            if e2elib.recv_exact(s, len(msg)) != msg:
                raise Mismatch("message %d came back different" % n)
            n += 1
            if time.monotonic() - t0 >= args.duration:
                break
            time.sleep(args.interval)
        s.shutdown(socket.SHUT_WR)
        end, data = read_to_end(s)
        if end != "eof" or data:
            raise Mismatch("after %d messages and a half-close: %s with %d bytes, expected "
                           "eof" % (n, end, len(data)))
    except (OSError, ConnectionError, Mismatch) as e:
        log("talk %s FAILED after %d messages: %s: %s" % (where, n, type(e).__name__, e))
        return 1
    finally:
        s.close()
    log("talk %s ok: %d messages, one every %.1f s for %.1f s, then a clean half-close"
        % (where, n, args.interval, args.duration))
    return 0


# ---------------------------------------------------------------- limit

def cmd_limit(args):
    """The session limit: N echo connections open together, the next one
    refused, the N still working; one closed, then a new one accepted
    (retried for --retry-for seconds, as the freed session ends
    asynchronously), and with N open again the next one refused again."""
    where = "%s:%d" % (args.host, args.port)
    conns = []
    rng = random.Random(args.seed)

    def ping(s, i):
        msg = b"conn %d " % i + rng.randbytes(100)
        s.sendall(msg)
        if e2elib.recv_exact(s, len(msg)) != msg:
            raise Mismatch("echo on connection %d came back different" % i)

    def open_echo(i, retry_for):
        """An echo connection, retried while refused (bounded)."""
        deadline = time.monotonic() + retry_for
        refused = 0
        while True:
            try:
                s = open_conn(args)
                s.sendall(b"ECHO\n")
                ping(s, i)
                return s, refused
            except (ConnectionRefusedError, ConnectionResetError) as e:
                refused += 1
                if time.monotonic() >= deadline:
                    raise ConnectionError("connection %d still refused after %d attempts "
                                          "in %.0f s: %s" % (i, refused, retry_for, e))
                time.sleep(args.retry_interval)

    def expect_refused(step):
        ok, what = probe_refused(args)
        if not ok or not what.startswith("connect refused"):
            # Beyond the limit the SYN itself gets the RST: ECONNREFUSED.
            raise Mismatch("%s: connection %d with %d open: %s" % (step, args.n + 1,
                                                                  len(conns), what))
        log("%s: connection %d with %d open refused as it must be: %s"
            % (step, args.n + 1, len(conns), what))

    try:
        for i in range(args.n):
            s, refused = open_echo(i, args.retry_for)
            conns.append(s)
            if refused:
                log("connection %d opened after %d refusals (earlier sessions still ending)"
                    % (i, refused))
        log("%d connections open, each echoes" % args.n)
        expect_refused("at the limit")
        for i, s in enumerate(conns):
            ping(s, i)
        log("the %d open connections still echo" % args.n)
        conns.pop(0).close()
        s, refused = open_echo(args.n, args.retry_for)
        conns.append(s)
        log("one closed: a new connection was accepted (after %d refusals while the closed "
            "session ended)" % refused)
        expect_refused("at the limit again")
        for i, s in enumerate(conns):
            ping(s, i)
    except (OSError, ConnectionError, Mismatch) as e:
        log("limit %d %s FAILED: %s: %s" % (args.n, where, type(e).__name__, e))
        return 1
    finally:
        for s in conns:
            s.close()
    log("limit %d %s ok" % (args.n, where))
    return 0


def main():
    def add_common(parser, top):
        # Accepted before and after the subcommand; only the top level has
        # defaults so that a subcommand does not reset what was given before it.
        d = (lambda v: v) if top else (lambda v: argparse.SUPPRESS)
        parser.add_argument("--host", default=d(None))
        parser.add_argument("--port", type=int, default=d(7000))
        parser.add_argument("--timeout", type=float, default=d(30.0),
                            help="limit for every socket operation, seconds")
        parser.add_argument("--socks5", default=d(None),
                            help="self-check only: go through this SOCKS5 proxy")
        parser.add_argument("--user", default=d(None))
        parser.add_argument("--password", default=d(None))
        parser.add_argument("--seed", type=int, default=d(1))
        parser.add_argument("--bind", default=d(None),
                            help="connect from this local address")

    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common(ap, True)
    common = argparse.ArgumentParser(add_help=False)
    add_common(common, False)
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("echo", parents=[common])
    p.add_argument("--count", type=int, default=20)
    p.add_argument("--stream-size", type=int, default=1 << 20)
    p.add_argument("--halfclose", action="store_true")
    p.add_argument("--retry-for", type=float, default=0.0)
    p.add_argument("--retry-interval", type=float, default=0.3)
    p.set_defaults(fn=cmd_echo)

    p = sub.add_parser("bulk", parents=[common])
    p.add_argument("--size", default="64M")
    p.add_argument("--upload-mode", choices=["eof", "length"], default="eof")
    p.add_argument("--direction", choices=["both", "up", "down"], default="both")
    p.set_defaults(fn=cmd_bulk)

    p = sub.add_parser("concurrent", parents=[common])
    p.add_argument("n", type=int)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--retry-for", type=float, default=0.0)
    p.add_argument("--retry-interval", type=float, default=0.5)
    p.set_defaults(fn=cmd_concurrent)

    p = sub.add_parser("hold", parents=[common])
    p.add_argument("--hold", type=float, default=60.0)
    p.set_defaults(fn=cmd_hold)

    p = sub.add_parser("idle-echo", parents=[common])
    p.add_argument("--wait-file", required=True)
    p.add_argument("--idle-max", type=float, default=60.0)
    p.set_defaults(fn=cmd_idle_echo)

    p = sub.add_parser("expect-refused", parents=[common])
    p.add_argument("--accept-eof", action="store_true")
    p.set_defaults(fn=cmd_expect_refused)

    p = sub.add_parser("rst", parents=[common])
    p.add_argument("--tag", required=True)
    p.set_defaults(fn=cmd_rst)

    p = sub.add_parser("silent", parents=[common])
    p.add_argument("--tag", required=True)
    p.add_argument("--expect", choices=["reset", "eof"], default="reset")
    p.set_defaults(fn=cmd_silent)

    p = sub.add_parser("read-end", parents=[common])
    p.add_argument("--expect-data", required=True,
                   help="the bytes expected before the end (backslash escapes allowed)")
    p.add_argument("--expect-end", choices=["reset", "eof"], required=True)
    p.add_argument("--fill", type=int, default=0,
                   help="that many bytes of the pattern 0..255 come before --expect-data")
    p.add_argument("--pause", type=float, default=0.0,
                   help="seconds to wait after connecting before reading")
    p.set_defaults(fn=cmd_read_end)

    p = sub.add_parser("talk", parents=[common])
    p.add_argument("--interval", type=float, default=0.5)
    p.add_argument("--duration", type=float, default=5.0)
    p.set_defaults(fn=cmd_talk)

    p = sub.add_parser("limit", parents=[common])
    p.add_argument("n", type=int)
    p.add_argument("--retry-for", type=float, default=10.0)
    p.add_argument("--retry-interval", type=float, default=0.2)
    p.set_defaults(fn=cmd_limit)

    args = ap.parse_args()
    if not args.host:
        ap.error("--host is required")
    if (args.user is None) != (args.password is None):
        ap.error("--user and --password go together")
    sys.exit(args.fn(args))


if __name__ == "__main__":
    main()
