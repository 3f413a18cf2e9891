#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Known-answer vectors for unit.ss2022 (test_ss2022.c), derived
independently of s5tund's C code from the Shadowsocks 2022 spec (SIP022):
BLAKE3 by Debian's b3sum (--derive-key), AES-GCM and ChaCha20-Poly1305 by
python3-cryptography. Session subkey = BLAKE3 derive_key("shadowsocks 2022
session subkey", PSK || salt); request = salt, sealed fixed header (type 0,
timestamp BE64, length BE16 of the variable header), sealed variable header
(target, padding length BE16, padding, payload); response = salt, sealed
fixed header (type 1, timestamp, request salt, first chunk's length BE16),
sealed first chunk. Nonce: 12-byte little-endian counter from 0. Prints
the C table test_ss2022.c holds:

    python3 test/unit/ss/vectors2022.py
"""
import base64
import subprocess

from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305

METHODS = [("2022-blake3-aes-128-gcm", 16, AESGCM), ("2022-blake3-aes-256-gcm", 32, AESGCM),
           ("2022-blake3-chacha20-poly1305", 32, ChaCha20Poly1305)]
NOW = 1700000000
TARGET = bytes([1, 10, 0, 0, 1, 0, 80])  # 10.0.0.1:80
PAYLOAD = b"GET / HTTP/1.0\r\n\r\n"
PAD = bytes((i * 5 + 1) & 0xFF for i in range(7))
REPLY = b"hello"


def subkey(psk, salt):
    r = subprocess.run(["b3sum", "--derive-key", "shadowsocks 2022 session subkey", "--raw", "-l",
                        str(len(psk))], input=psk + salt, capture_output=True, check=True)
    return r.stdout


def seal_all(aead, key, parts):
    a, out = aead(key), b""
    for n, p in enumerate(parts):
        out += a.encrypt(n.to_bytes(12, "little"), p, None)
    return out


for name, klen, aead in METHODS:
    psk = bytes((i * 13 + 5) & 0xFF for i in range(klen))
    salt = bytes(range(0x40, 0x40 + klen))
    sub = subkey(psk, salt)
    var = TARGET + len(PAD).to_bytes(2, "big") + PAD + PAYLOAD
    fixed = b"\x00" + NOW.to_bytes(8, "big") + len(var).to_bytes(2, "big")
    req = seal_all(aead, sub, [fixed, var])
    ssalt = bytes(range(0x80, 0x80 + klen))
    rfixed = b"\x01" + NOW.to_bytes(8, "big") + salt + len(REPLY).to_bytes(2, "big")
    resp = ssalt + seal_all(aead, subkey(psk, ssalt), [rfixed, REPLY])
    print('  {"%s", "%s",\n   "%s",\n   "%s",\n   "%s"},' % (
        name, base64.b64encode(psk).decode(), sub.hex(), req.hex(), resp.hex()))
