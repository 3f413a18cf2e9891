#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Known-answer vectors for unit.ss2022_udp (test_ss2022_udp.c), derived
independently of s5tund's C code from the specs (SIP022 UDP, SIP023
identity headers) by the e2e's own server's functions (test/e2e/ss2022srv.py:
BLAKE3 by Debian's b3sum, AES-ECB, AES-GCM and ChaCha20-Poly1305 by
python3-cryptography, HChaCha20 in Python from draft-irtf-cfrg-xchacha).
Client packets: session id 0001..07, packet id 5, timestamp NOW, no
padding, target 10.0.0.1:53, payload "hello"; the aes ones whole (the
separate header, the identity headers of a key chain, the sealed body),
chacha20's body before sealing (its nonce is random). Server packets:
session id a0..a7, packet id 0, NOW, the client's session id, 3 bytes of
padding, from 10.0.0.1:53, payload "world"; chacha20's nonce 24 fixed
bytes. TCP identity headers for salt 00 01 02 ... Prints the C table:

    python3 test/unit/ss/vectors2022_udp.py
"""
import base64
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "e2e"))
sys.dont_write_bytecode = True
import ss2022srv as ss  # noqa: E402
from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # noqa: E402

NOW = 1700000000
CSID = bytes(range(8))
SSID = bytes(range(0xA0, 0xA8))
ADDR = bytes([1, 10, 0, 0, 1, 0, 53])
K16 = ["BRIfLDlGU2BteoeUoa67yA==", "AAECAwQFBgcICQoLDA0ODw==", "EBESExQVFhcYGRobHB0eHw=="]
K32 = ["BRIfLDlGU2BteoeUoa67yNXi7/wJFiMwPUpXZHF+i5g=", "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="]
CASES = [("2022-blake3-aes-128-gcm", K16[0]), ("2022-blake3-aes-256-gcm", K32[0]),
         ("2022-blake3-chacha20-poly1305", K32[0]), ("2022-blake3-aes-128-gcm", ":".join(K16)),
         ("2022-blake3-aes-256-gcm", ":".join(K32))]


# A public implementation's documented vectors (urban-spork's AEAD2022TestCase): b3sum's BLAKE3 and
# the two contexts as spelled here give its identity subkey and session subkey.
assert ss.b3(b"Personal search-enabled assistant for programmers", 32, "shadowsocks 2022 identity subkey") == \
    base64.b64decode("nb91ZIjdNzFcPmGRS3Lg7m+muVqat549+RSDluyVN4c=")
assert ss.subkey(base64.b64decode("Lc3tTx0BY6ZJ/fCwOx3JvF0I/anhwJBO5p2+FA5Vce4="),
                 base64.b64decode("3oFO0VyLyGI4nFN0M9P+62vPND/L6v8IingaPJWTbJA=")) == \
    base64.b64decode("EdNE+4U8dVnHT0+poAFDK2bdlwfrHT61sUNr9WYPh+E=")


def client(method, password):
    keys = [base64.b64decode(k) for k in password.split(":")]
    sep = CSID + struct.pack(">Q", 5)
    body = struct.pack(">BQH", 0, NOW, 0) + ADDR + b"hello"
    if method.endswith("chacha20-poly1305"):
        return sep + body  # sealed with a random nonce: the test opens the C's and compares this
    eih = b""
    for i in range(len(keys) - 1):
        x = bytes(a ^ b for a, b in zip(ss.b3(keys[i + 1], 32)[:16], sep))
        eih += ss.ecb(keys[i], x)
    u = keys[-1]
    return ss.ecb(keys[0], sep) + eih + AESGCM(ss.subkey(u, CSID)).encrypt(sep[4:16], body, None)


def server(method, password):
    u = base64.b64decode(password.split(":")[-1])
    sep = SSID + struct.pack(">Q", 0)
    body = struct.pack(">BQ", 1, NOW) + CSID + struct.pack(">H", 3) + b"pad" + ADDR + b"world"
    if method.endswith("chacha20-poly1305"):
        nonce = bytes(range(0x40, 0x58))
        return nonce + ss.xchacha(u, nonce, sep + body, True)
    return ss.ecb(u, sep) + AESGCM(ss.subkey(u, SSID)).encrypt(sep[4:16], body, None)


def tcp_eih(method, password):
    keys = [base64.b64decode(k) for k in password.split(":")]
    salt = bytes(range(len(keys[0])))
    out = b""
    for i in range(len(keys) - 1):
        ik = ss.b3(keys[i] + salt, len(keys[i]), "shadowsocks 2022 identity subkey")
        out += ss.ecb(ik, ss.b3(keys[i + 1], 32)[:16])
    return out


def main():
    for m, pw in CASES:
        print('  {"%s", "%s",\n   "%s",\n   "%s",\n   "%s"},' % (m, pw, client(m, pw).hex(), server(m, pw).hex(),
                                                              tcp_eih(m, pw).hex()))


if __name__ == "__main__":
    main()
