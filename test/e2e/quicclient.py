#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""QUIC v1 client Initials and a UDP recorder, for [sniff] quic's
end-to-end test (sniff.sh, case sniff_quic). Debian's python3 with
python3-cryptography.

  quicclient.py server ADDR PORT[,PORT...] RECORD READY
      every datagram on ADDR:PORT appended to RECORD as a line
      "SOURCE-ADDRESS LENGTH SHA256[:16]" (flushed before the echo), then
      sent back unchanged; READY created once bound
  quicclient.py quic ADDR PORT NAME [--split] [--half] [--parts P] [--after N] [--to-port P]
      one socket: the client's Initial packets (RFC 9000 17.2.2, RFC 9001
      5: keys from a random DCID, AES-128-GCM payload, header protection)
      carrying a TLS 1.3 ClientHello whose server_name is NAME, a datagram
      each (>= 1200 bytes); --split: the ClientHello (padded over 1.2 KB)
      in two Initials' CRYPTO frames, the second half first; --half: only
      the first half; --parts P: in P Initials, in order; then N (default
      1) datagrams that are no Initial (short header, as 1-RTT packets),
      to port P with --to-port P.
      Prints a line "LENGTH SHA256[:16]" per datagram sent, in order, then
      "echoed K" once every one came back (exit 1 if not within 10 s)
  quicclient.py raw ADDR PORT TEXT
      one datagram of TEXT (no QUIC), the same lines

The keys are checked against RFC 9001 Appendix A's at each start.
"""

import hashlib
import hmac
import os
import selectors
import socket
import struct
import sys

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

SALT = bytes.fromhex("38762cf7f55934b34d179ae6a4c80cadccbb7f0a")


def expand_label(secret, label, length):
    info = struct.pack(">HB", length, 6 + len(label)) + b"tls13 " + label + b"\x00"
    return hmac.new(secret, info + b"\x01", hashlib.sha256).digest()[:length]


def client_keys(dcid):
    initial = hmac.new(SALT, dcid, hashlib.sha256).digest()
    client = expand_label(initial, b"client in", 32)
    return expand_label(client, b"quic key", 16), expand_label(client, b"quic iv", 12), \
        expand_label(client, b"quic hp", 16)


def check_rfc9001():
    key, iv, hp = client_keys(bytes.fromhex("8394c8f03e515708"))
    assert key.hex() == "1f369613dd76d5467730efcbe3b1a22d", "RFC 9001 A.1 key"
    assert iv.hex() == "fa044b2f42a3fd3b46fb255c", "RFC 9001 A.1 iv"
    assert hp.hex() == "9f50449e04a0e810283a1e9933adedd2", "RFC 9001 A.1 hp"


def varint(v):
    if v < 64:
        return bytes([v])
    if v < 16384:
        return struct.pack(">H", 0x4000 | v)
    return struct.pack(">I", 0x80000000 | v)


def client_hello(name, pad):
    """A TLS 1.3 ClientHello (handshake header included) with server_name."""
    n = name.encode()
    sni = struct.pack(">HBH", len(n) + 3, 0, len(n)) + n
    exts = struct.pack(">HH", 0, len(sni)) + sni
    exts += struct.pack(">HH", 43, 3) + b"\x02\x03\x04"  # supported_versions: TLS 1.3
    exts += struct.pack(">HH", 57, 4) + b"\x01\x02\x40\x00"  # quic_transport_parameters
    if pad:
        exts += struct.pack(">HH", 21, pad) + bytes(pad)  # padding
    body = b"\x03\x03" + os.urandom(32) + b"\x00" + struct.pack(">H", 2) + b"\x13\x01" + b"\x01\x00"
    body += struct.pack(">H", len(exts)) + exts
    return b"\x01" + struct.pack(">I", len(body))[1:] + body


def initial(dcid, scid, pn, frames):
    """A protected client Initial of frames, padded to a 1200-byte datagram."""
    key, iv, hp = client_keys(dcid)
    pn_len = 4
    head = bytes([0xC0 | (pn_len - 1)]) + struct.pack(">I", 1) + bytes([len(dcid)]) + dcid
    head += bytes([len(scid)]) + scid + varint(0)  # no token
    room = 1200 - len(head) - 2 - pn_len - 16
    if len(frames) < room:
        frames += bytes(room - len(frames))  # PADDING frames
    length = pn_len + len(frames) + 16
    head += struct.pack(">H", 0x4000 | length)
    pn_off = len(head)
    head += struct.pack(">I", pn)
    nonce = bytes(a ^ b for a, b in zip(iv, bytes(4) + struct.pack(">Q", pn)))
    ct = AESGCM(key).encrypt(nonce, frames, head)
    sample = ct[4 - pn_len:4 - pn_len + 16]
    enc = Cipher(algorithms.AES(hp), modes.ECB()).encryptor()
    mask = enc.update(sample) + enc.finalize()
    pkt = bytearray(head + ct)
    pkt[0] ^= mask[0] & 0x0F
    for i in range(pn_len):
        pkt[pn_off + i] ^= mask[1 + i]
    return bytes(pkt)


def crypto(off, data):
    return b"\x06" + varint(off) + varint(len(data)) + data


def fingerprint(d):
    return "%d %s" % (len(d), hashlib.sha256(d).hexdigest()[:16])


def send_all(addr, port, dgrams, ports=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(10)
    for i, d in enumerate(dgrams):
        s.sendto(d, (addr, ports[i] if ports else port))
        print(fingerprint(d), flush=True)
    want = sorted(dgrams)
    got = []
    try:
        while len(got) < len(dgrams):
            got.append(s.recv(65535))
    except socket.timeout:
        print("echoed %d of %d" % (len(got), len(dgrams)))
        return 1
    if sorted(got) != want:
        print("echoes differ")
        return 1
    print("echoed %d" % len(got))
    return 0


def quic(argv):
    addr, port, name = argv[0], int(argv[1]), argv[2]
    split, half = "--split" in argv, "--half" in argv
    after = int(argv[argv.index("--after") + 1]) if "--after" in argv else 1
    parts = int(argv[argv.index("--parts") + 1]) if "--parts" in argv else 0
    dcid, scid = os.urandom(8), os.urandom(8)
    ch = client_hello(name, 1400 if split or half else 0)
    if parts:
        step = -(-len(ch) // parts)
        dgrams = [initial(dcid, scid, i, crypto(i * step, ch[i * step:(i + 1) * step])) for i in range(parts)]
    elif split or half:
        cut = len(ch) // 2
        # the second half first: CRYPTO frames at their offsets, out of order
        dgrams = [initial(dcid, scid, 0, crypto(cut, ch[cut:])), initial(dcid, scid, 1, crypto(0, ch[:cut]))]
        if half:
            dgrams = dgrams[1:]
    else:
        dgrams = [initial(dcid, scid, 0, crypto(0, ch))]
    ports = [port] * len(dgrams)
    for i in range(after):  # 1-RTT-like: short header, the DCID, anything
        dgrams.append(bytes([0x40 | 3]) + dcid + os.urandom(60 + i))
        ports.append(int(argv[argv.index("--to-port") + 1]) if "--to-port" in argv else port)
    return send_all(addr, port, dgrams, ports)


def server(argv):
    addr, ports, record, ready = argv[0], argv[1].split(","), argv[2], argv[3]
    sel = selectors.DefaultSelector()
    for port in ports:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind((addr, int(port)))
        sel.register(s, selectors.EVENT_READ)
    with open(ready, "w") as f:
        f.write("ready\n")
    with open(record, "a") as rec:
        while True:
            for key, _ in sel.select():
                d, peer = key.fileobj.recvfrom(65535)
                rec.write("%s %s\n" % (peer[0], fingerprint(d)))
                rec.flush()
                key.fileobj.sendto(d, peer)


def main():
    check_rfc9001()
    mode, argv = sys.argv[1], sys.argv[2:]
    if mode == "server":
        server(argv)
    elif mode == "quic":
        sys.exit(quic(argv))
    elif mode == "raw":
        sys.exit(send_all(argv[0], int(argv[1]), [argv[2].encode()]))
    else:
        sys.exit("usage: quicclient.py server|quic|raw ...")


if __name__ == "__main__":
    main()
