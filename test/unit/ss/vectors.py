#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Known-answer vectors for unit.ss (test_ss.c), derived independently of
s5tund's C code with python3-cryptography, from the Shadowsocks AEAD spec:
key = EVP_BytesToKey(MD5, password), subkey = HKDF-SHA1(key, salt,
"ss-subkey"), chunks [len BE16 sealed][payload sealed], nonce a 12-byte
little-endian counter from 0. Prints the C table test_ss.c holds; run it
again and compare when the vectors are in doubt:

    python3 test/unit/ss/vectors.py
"""
import hashlib

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

PASSWORD = b"known-answer password"
METHODS = [("chacha20-ietf-poly1305", 32, ChaCha20Poly1305),
           ("aes-128-gcm", 16, AESGCM), ("aes-256-gcm", 32, AESGCM)]
PLAIN = bytes((i * 7 + 3) & 0xFF for i in range(20000))  # two chunks: 16256 + 3744


def bytes_to_key(password, n):
    key, d = b"", b""
    while len(key) < n:
        d = hashlib.md5(d + password).digest()
        key += d
    return key[:n]


def stream(klen, aead):
    salt = bytes(range(klen))
    key = bytes_to_key(PASSWORD, klen)
    sub = HKDF(hashes.SHA1(), klen, salt, b"ss-subkey").derive(key)
    a, n, out, p = aead(sub), 0, salt, PLAIN
    while p:
        chunk, p = p[:0x3F80], p[0x3F80:]  # s5tund's chunks carry at most 16,256 bytes
        for part in (len(chunk).to_bytes(2, "big"), chunk):
            out += a.encrypt(n.to_bytes(12, "little"), part, None)
            n += 1
    return key, out


for name, klen, aead in METHODS:
    key, out = stream(klen, aead)
    print('  {"%s", "%s", %d, "%s", "%s"},' % (name, key.hex(), len(out), out[klen:klen + 18].hex(),
                                               hashlib.sha256(out).hexdigest()))

# UDP (2017): one packet [salt][seal(subkey(salt), nonce 0, target + payload)][tag]; the salt
# 0xa0 0xa1 ..; the target 192.0.2.7:53 (ATYP 1), the payload 100 bytes of the same pattern.
UDP_TEXT = bytes([1, 192, 0, 2, 7, 0, 53]) + PLAIN[:100]
print("  /* UDP */")
for name, klen, aead in METHODS:
    salt = bytes(0xA0 + i for i in range(klen))
    sub = HKDF(hashes.SHA1(), klen, salt, b"ss-subkey").derive(bytes_to_key(PASSWORD, klen))
    pkt = salt + aead(sub).encrypt(bytes(12), UDP_TEXT, None)
    print('  {"%s", %d, "%s"},' % (name, len(pkt), hashlib.sha256(pkt).hexdigest()))
