#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""QUIC v1 client Initials built here, parsed by the sniffer in C.

    test/unit/sniff/quic_initials.py TEST_SNIFF

Builds a ClientHello with a post-quantum-sized key share (1.3 KB)
and protects its CRYPTO data, in two pieces, into two Initial packets of
one DCID (RFC 9001 5: keys by HKDF-SHA256 from the DCID, AES-128-GCM
payload, AES-ECB header protection), with python3-cryptography; then runs
`TEST_SNIFF --quic NAME|- FILE...` on each case's datagrams: in order,
reversed, coalesced in one datagram, retransmitted with an overlap, with
ACK and PING frames, and the cases that must end in NONE (another DCID,
a byte changed, a STREAM frame, CRYPTO data past the buffer). Exits
non-zero when any case fails.
"""
import os
import struct
import subprocess
import sys
import tempfile

from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

SALT_V1 = bytes.fromhex("38762cf7f55934b34d179ae6a4c80cadccbb7f0a")


def hmac256(key, data):
    h = hmac.HMAC(key, hashes.SHA256())
    h.update(data)
    return h.finalize()


def expand_label(secret, label, length):
    full = b"tls13 " + label
    info = struct.pack("!HB", length, len(full)) + full + b"\x00"
    return hmac256(secret, info + b"\x01")[:length]


def client_keys(dcid):
    client = expand_label(hmac256(SALT_V1, dcid), b"client in", 32)
    return (expand_label(client, b"quic key", 16), expand_label(client, b"quic iv", 12),
            expand_label(client, b"quic hp", 16))


def varint(v):
    if v < 0x40:
        return bytes([v])
    if v < 0x4000:
        return struct.pack("!H", 0x4000 | v)
    if v < 0x40000000:
        return struct.pack("!I", 0x80000000 | v)
    return struct.pack("!Q", 0xC000000000000000 | v)


def client_hello(name):
    ext = struct.pack("!HHB2s", 43, 3, 2, b"\x03\x04")
    sni = name.encode()
    ext += struct.pack("!HHHBH", 0, len(sni) + 5, len(sni) + 3, 0, len(sni)) + sni
    share = bytes((i * 31 + 7) & 0xFF for i in range(1216 + 32))
    ext += struct.pack("!HHHHH", 51, len(share) + 6, len(share) + 4, 0x11EC, len(share)) + share
    body = (b"\x03\x03" + os.urandom(32) + b"\x00" + struct.pack("!H", 6) + bytes.fromhex("130113021303") +
            b"\x01\x00" + struct.pack("!H", len(ext)) + ext)
    return b"\x01" + len(body).to_bytes(3, "big") + body


def crypto(offset, data):
    return b"\x06" + varint(offset) + varint(len(data)) + data


def initial(dcid, pn, frames, pn_len=2, scid=b"\x01\x02\x03\x04", token=b"", pad_to=1200):
    key, iv, hp = client_keys(dcid)
    pn_bytes = pn.to_bytes(pn_len, "big")
    head = (bytes([0xC0 | (pn_len - 1)]) + struct.pack("!I", 1) + bytes([len(dcid)]) + dcid +
            bytes([len(scid)]) + scid + varint(len(token)) + token)
    # PADDING up to pad_to bytes in all (a client's Initial datagram).
    fixed = len(head) + 2 + pn_len + len(frames) + 16
    if fixed < pad_to:
        frames += bytes(pad_to - fixed)
    length = pn_len + len(frames) + 16
    head += struct.pack("!H", 0x4000 | length)
    pn_off = len(head)
    header = head + pn_bytes
    nonce = bytes(a ^ b for a, b in zip(iv, bytes(4) + pn.to_bytes(8, "big")))
    sealed = AESGCM(key).encrypt(nonce, frames, header)
    sample = sealed[4 - pn_len:4 - pn_len + 16]
    enc = Cipher(algorithms.AES(hp), modes.ECB()).encryptor()
    mask = enc.update(sample) + enc.finalize()
    first = bytes([header[0] ^ (mask[0] & 0x0F)])
    pn_prot = bytes(a ^ b for a, b in zip(pn_bytes, mask[1:1 + pn_len]))
    return first + header[1:pn_off] + pn_prot + sealed


def main():
    sniff = sys.argv[1]
    name = "quic.split.example"
    hello = client_hello(name)
    assert len(hello) > 1300, len(hello)
    cut = 1000
    dcid = os.urandom(8)
    ack = b"\x02" + varint(0) + varint(10) + varint(1) + varint(0) + varint(0) + varint(0)
    p1 = initial(dcid, 0, crypto(0, hello[:cut]))
    p2 = initial(dcid, 1, b"\x01" + crypto(cut, hello[cut:]), pn_len=1)
    p2_ack = initial(dcid, 1, ack + crypto(cut, hello[cut:]) + b"\x01", pn_len=4)
    p2_overlap = initial(dcid, 2, crypto(cut - 100, hello[cut - 100:]))
    p1_small = initial(dcid, 0, crypto(0, hello[:cut]), pad_to=0)
    p2_small = initial(dcid, 1, crypto(cut, hello[cut:]), pad_to=0)
    other = initial(os.urandom(8), 1, crypto(cut, hello[cut:]))
    bad = bytearray(p2)
    bad[len(bad) // 2] ^= 0x40
    stream = initial(dcid, 1, b"\x08\x00\x03abc" + crypto(cut, hello[cut:]))
    past = initial(dcid, 1, crypto(8192 - 10, bytes(20)))
    token = initial(dcid, 1, crypto(cut, hello[cut:]), token=os.urandom(120), scid=os.urandom(20))
    short = bytes([0x40]) + dcid + os.urandom(40)
    cases = [
        ("in order", name, [p1, p2]),
        ("reversed", name, [p2, p1]),
        ("ACK and PING frames, 4-byte packet number", name, [p1, p2_ack]),
        ("coalesced in one datagram", name, [p1_small + p2_small]),
        ("the first again, then an overlapping retransmission", name, [p1, p1, p2_overlap]),
        ("a token and a 20-byte SCID", name, [p1, token]),
        ("the second of another DCID", "-", [p1, other]),
        ("coalesced with one of another DCID (ignored)", name, [p1_small + other, p2]),
        ("coalesced with a changed one (ignored)", name, [p1_small + bytes(bad), p2]),
        ("the second changed", "-", [p1, bytes(bad)]),
        ("a STREAM frame", "-", [p1, stream]),
        ("CRYPTO data past the buffer", "-", [p1, past]),
        ("a short-header packet", "-", [p1, short]),
    ]
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, (what, want, dgrams) in enumerate(cases):
            files = []
            for j, d in enumerate(dgrams):
                path = os.path.join(tmp, f"{i}-{j}.bin")
                with open(path, "wb") as f:
                    f.write(d)
                files.append(path)
            r = subprocess.run([sniff, "--quic", want] + files, capture_output=True, text=True)
            ok = r.returncode == 0
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {what}: {r.stdout.strip().splitlines()[-1] if r.stdout else r.returncode}")
            if not ok:
                print(r.stdout + r.stderr)
    print(f"{len(cases) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
