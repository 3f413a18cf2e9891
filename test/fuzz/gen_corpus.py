#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed corpora of the fuzz targets (test/fuzz/corpus/TARGET/).

    test/fuzz/gen_corpus.py [CORPUS_DIR]

Deterministic: the same files every time, so the committed seeds can be
regenerated and reviewed. Seeds are named seed-*; inputs found by fuzzing
that crashed (regressions) are named crash-* and are never touched here.
Standard library only.
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------- checksums


def csum(data, acc=0):
    if len(data) % 2:
        data += b"\0"
    for i in range(0, len(data), 2):
        acc += (data[i] << 8) | data[i + 1]
    while acc >> 16:
        acc = (acc & 0xFFFF) + (acc >> 16)
    return (~acc) & 0xFFFF


def ip4(a):
    return bytes(int(x) for x in a.split("."))


def ip6(a):
    import ipaddress
    return ipaddress.IPv6Address(a).packed


# ---------------------------------------------------------------- packets


def ipv4(src, dst, proto, payload, ident=1, flags_frag=0x4000, options=b"", fix_l4=True):
    ihl = (20 + len(options)) // 4
    if fix_l4 and proto in (6, 17, 1):
        payload = l4_fix(proto, payload, ip4(src) + ip4(dst), v6=False)
    tot = ihl * 4 + len(payload)
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, tot, ident, flags_frag, 64, proto, 0,
                    ip4(src), ip4(dst)) + options
    c = csum(h)
    return h[:10] + struct.pack("!H", c) + h[12:] + payload


def ipv6(src, dst, nexthdr, payload, ext=b"", l4_proto=None, fix_l4=True):
    proto = l4_proto if l4_proto is not None else nexthdr
    if fix_l4 and proto in (6, 17, 58):
        payload = l4_fix(proto, payload, ip6(src) + ip6(dst), v6=True)
    body = ext + payload
    return struct.pack("!IHBB16s16s", 0x60000000, len(body), nexthdr, 64, ip6(src), ip6(dst)) + body


def l4_fix(proto, seg, addrs, v6):
    at = {6: 16, 17: 6, 1: 2, 58: 2}[proto]
    seg = seg[:at] + b"\0\0" + seg[at + 2:]
    if proto == 1:
        pseudo = b""
    elif v6:
        pseudo = addrs + struct.pack("!IxxxB", len(seg), proto)
    else:
        pseudo = addrs + struct.pack("!xBH", proto, len(seg))
    c = csum(pseudo + seg)
    if proto == 17 and c == 0:
        c = 0xFFFF
    return seg[:at] + struct.pack("!H", c) + seg[at + 2:]


FIN, SYN, RST, PSH, ACK = 0x01, 0x02, 0x04, 0x08, 0x10
SYN_OPTS = bytes([2, 4, 0x05, 0xB4,     # MSS 1460
                  4, 2,                 # SACK permitted
                  1, 3, 3, 7,           # NOP, window scale 7
                  1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0])   # NOP NOP timestamps


def tcp(sport, dport, seq, ack, flags, data=b"", window=65535, opts=b""):
    doff = (20 + len(opts)) // 4
    return struct.pack("!HHIIBBHHH", sport, dport, seq, ack, doff << 4, flags, window, 0, 0) + opts + data


def udp(sport, dport, data):
    return struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data


C4, T4 = "198.18.0.1", "203.0.113.10"
C6, T6 = "fc00::1", "2001:db8::10"


def tcp4(sport, flags, seq=1000, ack=0, data=b"", dport=80, dst=T4, opts=b"", window=65535):
    return ipv4(C4, dst, 6, tcp(sport, dport, seq, ack, flags, data, window, opts))


def tcp6(sport, flags, seq=1000, ack=0, data=b"", dport=80, dst=T6, opts=b""):
    return ipv6(C6, dst, 6, tcp(sport, dport, seq, ack, flags, data, opts=opts))


def dns_query(name, qtype=1, ident=0x1234, opt=False, opcode=0):
    h = struct.pack("!HHHHHH", ident, (opcode << 11) | 0x0100, 1, 0, 0, 1 if opt else 0)
    q = b"".join(bytes([len(l)]) + l.encode() for l in name.split(".") if l) + b"\0"
    q += struct.pack("!HH", qtype, 1)
    if opt:
        q += bytes([0, 0, 41, 0x04, 0xD0, 0, 0, 0, 0, 0, 0])
    return h + q


# ---------------------------------------------------------------- fuzz_packet operations
# (fuzz_packet.c's enum op)

OP_PACKET, OP_REPLY, OP_TICK, OP_PROXY_OK, OP_PROXY_FAIL, OP_PROXY_SEND, OP_PROXY_EOF, \
    OP_PROXY_CLOSE, OP_PROXY_READ, OP_SPIN, OP_REFUSE_NEXT = range(11)

ISN = 0x01000000          # fuzz_packet.c's S5_FUZZ_ISN

# configuration byte
ICMP_REPLY, UDP_ON, DNS_ON, MAX2, MTU1280, MTU9000, MTU65535, DEBUG, OFFLOAD = \
    0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x30, 0x40, 0x80
DNS6 = 0x100                # in the second configuration byte


def cfg(bits=0):
    return bytes([bits & 0xFF, bits >> 8])


def pkt(p, raw=False, vnet=None):
    flags = (1 if raw else 0) | (2 if vnet is not None else 0)
    if vnet is not None:
        p = vnet + p
    return bytes([OP_PACKET, flags]) + struct.pack("!H", len(p)) + p


def reply(flags=0, data=b"", window=0xFF):
    return bytes([OP_REPLY, flags, window, len(data)]) + data


def tick(n=1):
    return bytes([OP_TICK, (n - 1) & 7])


def proxy_ok(k=0, early=b""):
    return bytes([OP_PROXY_OK, k, len(early)]) + early


def proxy_fail(k=0):
    return bytes([OP_PROXY_FAIL, k])


def proxy_send(k=0, n=1000):
    return bytes([OP_PROXY_SEND, k]) + struct.pack("!H", n)


def proxy_eof(k=0):
    return bytes([OP_PROXY_EOF, k])


def proxy_close(k=0):
    return bytes([OP_PROXY_CLOSE, k])


def proxy_read(k=0):
    return bytes([OP_PROXY_READ, k])


def spin(n=15):
    return bytes([OP_SPIN, n])


REQ = b"GET / HTTP/1.0\r\n\r\n"


def session(syn, v6=False):
    """SYN, CONNECT succeeds, the client's ACK, a request, its ACK, the
    proxy's answer, the client ACKs it and closes, the proxy closes."""
    return (pkt(syn) + proxy_ok() + reply(0) + reply(PSH, REQ) + tick(2) + proxy_read() +
            proxy_send(0, 3000) + reply(0) + reply(0) + reply(FIN) + proxy_eof() + spin(4) +
            reply(0) + tick(8))


def packet_seeds():
    s = {}
    s["tcp4_session"] = cfg(0) + session(tcp4(40000, SYN, opts=SYN_OPTS))
    s["tcp6_session"] = cfg(MTU1280) + session(tcp6(40001, SYN, opts=SYN_OPTS), v6=True)
    s["tcp4_proxy_refused"] = cfg(0) + pkt(tcp4(40002, SYN)) + proxy_fail() + spin(2)
    s["tcp4_refuse_next"] = cfg(0) + bytes([OP_REFUSE_NEXT]) + pkt(tcp4(40003, SYN)) + pkt(tcp4(40004, SYN))
    s["tcp4_client_rst"] = (cfg(0) + pkt(tcp4(40005, SYN)) + proxy_ok() + reply(0) +
                            reply(PSH, b"x" * 100) + reply(RST | 0x40))
    s["tcp4_proxy_reset"] = (cfg(0) + pkt(tcp4(40006, SYN)) + proxy_ok() + reply(0) +
                             reply(PSH, REQ) + spin(2) + proxy_close() + spin(4) + tick(4))
    s["tcp4_max_sessions"] = (cfg(MAX2) + b"".join(pkt(tcp4(41000 + i, SYN)) for i in range(4)) +
                              proxy_ok(0) + proxy_ok(1) + reply(0) + tick(3))
    s["tcp4_early_data"] = (cfg(0) + pkt(tcp4(40007, SYN)) + proxy_ok(0, b"220 hello\r\n") +
                            reply(0) + reply(0) + proxy_eof() + spin(2) + reply(FIN) + spin(2) + reply(0))
    s["tcp4_syn_retransmit"] = (cfg(0) + pkt(tcp4(40008, SYN)) + pkt(tcp4(40008, SYN)) +
                                pkt(tcp4(40008, ACK, seq=1001, ack=12345)) + proxy_ok() +
                                pkt(tcp4(40008, SYN)) + reply(0) + tick(8))
    ack = ISN + 1
    s["tcp4_out_of_order"] = (cfg(0) + pkt(tcp4(40009, SYN, opts=SYN_OPTS)) + proxy_ok() +
                              pkt(tcp4(40009, ACK, seq=1001, ack=ack)) +
                              pkt(tcp4(40009, ACK | PSH, seq=1201, ack=ack, data=b"b" * 200)) +
                              pkt(tcp4(40009, ACK | PSH, seq=1601, ack=ack, data=b"d" * 200)) +
                              pkt(tcp4(40009, ACK | PSH, seq=1001, ack=ack, data=b"a" * 200)) +
                              pkt(tcp4(40009, ACK | PSH, seq=1401, ack=ack, data=b"c" * 200)) +
                              proxy_read() + tick(4))
    s["tcp4_client_halfclose"] = (cfg(0) + pkt(tcp4(40010, SYN)) + proxy_ok() + reply(0) +
                                  reply(PSH | FIN, REQ) + spin(2) + proxy_read() + proxy_send(0, 500) +
                                  proxy_eof() + spin(3) + reply(0) + tick(2))
    s["tcp4_zero_window"] = (cfg(0) + pkt(tcp4(40011, SYN, window=0)) + proxy_ok() + reply(0, window=0) +
                             proxy_send(0, 20000) + spin(2) + tick(8) + reply(0, window=0x40) + tick(8))
    s["tcp4_big_mtu"] = (cfg(MTU65535) + pkt(tcp4(40012, SYN)) + proxy_ok() + reply(0) +
                         proxy_send(0, 60000) + spin(2) + reply(0) + reply(0) + tick(2))
    s["tcp4_ip_options"] = (cfg(0) + pkt(ipv4(C4, T4, 6, tcp(40013, 80, 1000, 0, SYN),
                                                  options=bytes([1, 1, 1, 0]))) + proxy_ok() + reply(0))
    s["tcp4_debug_log"] = cfg(DEBUG) + session(tcp4(40014, SYN))
    hop = bytes([60, 0, 1, 4, 0, 0, 0, 0])          # next: dest opts, PadN
    dst = bytes([6, 0, 1, 4, 0, 0, 0, 0])           # next: TCP
    s["tcp6_ext_headers"] = (cfg(0) + pkt(ipv6(C6, T6, 0, tcp(40015, 80, 1000, 0, SYN), ext=hop + dst,
                                                   l4_proto=6)) + proxy_ok() + reply(0))
    dgram = b"hello through the relay"
    s["udp4_associate"] = (cfg(UDP_ON) + pkt(ipv4(C4, T4, 17, udp(5000, 7001, dgram))) + spin(15) +
                           spin(15) + pkt(ipv4(C4, T4, 17, udp(5000, 7002, dgram * 3))) + spin(8))
    s["udp6_associate"] = (cfg(UDP_ON) + pkt(ipv6(C6, T6, 17, udp(5001, 7001, dgram))) + spin(15) +
                           spin(15) + pkt(ipv6(C6, T6, 17, udp(5001, 7001, b""))) + spin(8))
    s["udp_off_unreachable"] = (cfg(0) + pkt(ipv4(C4, T4, 17, udp(5002, 7001, dgram))) +
                                pkt(ipv6(C6, T6, 17, udp(5002, 7001, dgram))))
    s["dns4"] = (cfg(DNS_ON) + pkt(ipv4(C4, "10.53.0.1", 17, udp(5003, 53, dns_query("target.test")))) +
                 pkt(ipv4(C4, "10.53.0.1", 17, udp(5003, 53, dns_query("target.test", 28, opt=True)))) +
                 pkt(ipv4(C4, "10.53.0.1", 17, udp(5003, 53, dns_query("bad name.test")))) +
                 pkt(ipv4(C4, "10.53.0.1", 17, udp(5003, 53, dns_query("x.test", opcode=2)))) +
                 pkt(ipv4(C4, "10.53.0.1", 17, udp(5003, 53, b"\x12\x34\x01"))) +
                 pkt(tcp4(40016, SYN, dst="100.64.0.1")) + proxy_ok() + reply(0))
    s["dns6"] = (cfg(DNS_ON | DNS6) + pkt(ipv6(C6, "fd53::1", 17, udp(5004, 53, dns_query("target.test")))))
    s["dns_udp_by_name"] = (cfg(DNS_ON | UDP_ON) +
                            pkt(ipv4(C4, "10.53.0.1", 17, udp(5005, 53, dns_query("relay.test")))) +
                            pkt(ipv4(C4, "100.64.0.1", 17, udp(5005, 7001, dgram))) + spin(15) + spin(15) +
                            pkt(ipv4(C4, "100.64.0.2", 17, udp(5005, 7001, dgram))) + spin(8))
    echo4 = struct.pack("!BBHHH", 8, 0, 0, 1, 1) + b"ping" * 8
    echo6 = struct.pack("!BBHHH", 128, 0, 0, 1, 1) + b"ping" * 8
    s["icmp_off"] = cfg(0) + pkt(ipv4(C4, T4, 1, echo4)) + pkt(ipv6(C6, T6, 58, echo6))
    s["icmp_reply"] = cfg(ICMP_REPLY) + pkt(ipv4(C4, T4, 1, echo4)) + pkt(ipv6(C6, T6, 58, echo6))
    # A UDP datagram in two IPv4 fragments (checksum over the whole datagram).
    whole = l4_fix(17, udp(5006, 7001, bytes(range(256)) * 4), ip4(C4) + ip4(T4), v6=False)
    f1 = ipv4(C4, T4, 17, whole[:512], ident=77, flags_frag=0x2000, fix_l4=False)
    f2 = ipv4(C4, T4, 17, whole[512:], ident=77, flags_frag=512 // 8, fix_l4=False)
    s["frag4_udp"] = cfg(UDP_ON) + pkt(f2) + pkt(f1) + spin(15) + spin(15) + spin(4)
    s["frag4_incomplete"] = cfg(0) + pkt(f1) + tick(8) + pkt(f1)
    whole6 = l4_fix(17, udp(5007, 7001, bytes(range(256)) * 4), ip6(C6) + ip6(T6), v6=True)
    fh1 = bytes([17, 0]) + struct.pack("!HI", 0x0001, 99)            # offset 0, M
    fh2 = bytes([17, 0]) + struct.pack("!HI", (512 // 8) << 3, 99)   # offset 512, last
    g1 = ipv6(C6, T6, 44, whole6[:512], ext=fh1, fix_l4=False)
    g2 = ipv6(C6, T6, 44, whole6[512:], ext=fh2, fix_l4=False)
    s["frag6_udp"] = cfg(UDP_ON) + pkt(g1) + pkt(g2) + spin(15) + spin(15) + spin(4)
    s["frag6_incomplete"] = cfg(0) + pkt(g2) + tick(8)
    # Neighbour discovery and a router advertisement, as a host would send them.
    ns = struct.pack("!BBHI16s", 135, 0, 0, 0, ip6(T6)) + bytes([1, 1, 0, 0, 0, 0, 0, 1])
    ra = struct.pack("!BBHBBHII", 134, 0, 0, 64, 0, 1800, 0, 0) + bytes([5, 1, 0, 0, 0, 0, 0x05, 0xDC])
    s["icmp6_nd"] = cfg(0) + pkt(ipv6(C6, T6, 58, ns)) + pkt(ipv6("fe80::1", "ff02::1", 58, ra))
    s["garbage"] = cfg(0xFF) + pkt(b"\x45" + bytes(30), raw=True) + pkt(b"\x60" + bytes(50), raw=True) + \
        pkt(bytes(range(1, 64))) + tick(8)
    # Offloads: a virtio_net_hdr in front of every packet both ways, TCP
    # checksums left to the kernel, GSO segments larger than the MSS.
    s["offload_tcp4_session"] = cfg(OFFLOAD) + session(tcp4(40020, SYN, opts=SYN_OPTS))
    s["offload_tcp6_gso"] = (cfg(OFFLOAD | MTU9000) + pkt(tcp6(40021, SYN)) + proxy_ok() + reply(0) +
                             proxy_send(0, 60000) + spin(2) + reply(0) + reply(0) + tick(2))
    gso = struct.pack("<BBHHHH", 1, 1, 40, 1460, 20, 16)   # NEEDS_CSUM, GSO_TCPV4, as the kernel writes it
    s["offload_vnet_from_input"] = (cfg(OFFLOAD) + pkt(tcp4(40022, SYN), vnet=gso) + proxy_ok() +
                                    reply(0) + pkt(tcp4(40022, ACK | PSH, seq=1001, ack=ISN + 1, data=b"z" * 3000),
                                                   vnet=gso) + proxy_read() + pkt(b"\x45", vnet=gso))
    s["offload_udp_dns"] = (cfg(OFFLOAD | UDP_ON | DNS_ON) +
                            pkt(ipv4(C4, "10.53.0.1", 17, udp(5010, 53, dns_query("offload.test")))) +
                            pkt(ipv4(C4, T4, 17, udp(5010, 7001, b"offloaded"))) + spin(15) + spin(15) + spin(4))
    return s


# ---------------------------------------------------------------- other targets


def socks5_seeds():
    # byte 0: bit 0 offered username/password, bits 1-2 first parser, bit 7 encoders
    s = {}
    s["method_none"] = bytes([0x00, 5, 0])
    s["method_userpass"] = bytes([0x01, 5, 2])
    s["method_rejected"] = bytes([0x00, 5, 0xFF])
    s["auth_ok"] = bytes([0x02, 1, 0])
    s["auth_failed"] = bytes([0x02, 1, 1])
    s["reply_ipv4"] = bytes([0x04, 5, 0, 0, 1, 10, 0, 0, 1, 0x1F, 0x90])
    s["reply_ipv6"] = bytes([0x04, 5, 0, 0, 4]) + ip6("2001:db8::1") + bytes([0, 80])
    s["reply_name"] = bytes([0x04, 5, 0, 0, 3, 11]) + b"target.test" + bytes([0, 80])
    s["reply_refused"] = bytes([0x04, 5, 5, 0, 1, 0, 0, 0, 0, 0, 0])
    s["reply_with_data"] = bytes([0x04, 5, 0, 0, 1, 10, 0, 0, 1, 0, 80]) + b"HTTP/1.0 200 OK\r\n"
    s["encoders"] = bytes([0x81]) + b"user\0name" + b"password"
    return s


def socks5_udp_seeds():
    s = {}
    s["dgram_ipv4"] = bytes([0, 0, 0, 1, 203, 0, 113, 10, 0x1B, 0x59]) + b"payload"
    s["dgram_ipv6"] = bytes([0, 0, 0, 4]) + ip6("2001:db8::10") + bytes([0x1B, 0x59]) + b"payload"
    s["dgram_name"] = bytes([0, 0, 0, 3, 11]) + b"target.test" + bytes([0, 53]) + b"payload"
    s["dgram_frag"] = bytes([0, 0, 1, 1, 203, 0, 113, 10, 0, 53])
    s["dgram_empty"] = bytes([0, 0, 0, 1, 127, 0, 0, 1, 0, 7])
    s["reply_assoc_ipv4"] = bytes([5, 0, 0, 1, 10, 200, 0, 2, 0x9C, 0x40])
    s["reply_assoc_ipv6"] = bytes([5, 0, 0, 4]) + ip6("fd00:200::2") + bytes([0x9C, 0x40])
    s["reply_assoc_refused"] = bytes([5, 7, 0, 1, 0, 0, 0, 0, 0, 0])
    return s


def dns_seeds():
    s = {}
    s["a"] = dns_query("target.test")
    s["a_upper"] = dns_query("TaRgEt.Test")
    s["aaaa_opt"] = dns_query("target.test", 28, opt=True)
    s["txt"] = dns_query("target.test", 16)
    s["edns1"] = dns_query("target.test", opt=True)[:-6] + bytes([0, 1, 0, 0, 0, 0])   # VERSION 1
    s["root"] = dns_query("")
    s["bad_chars"] = dns_query("a b.test")
    s["opcode_status"] = dns_query("x.test", opcode=2)
    s["class_chaos"] = dns_query("version.bind", 16)[:-2] + bytes([0, 3])
    s["long_name"] = dns_query(".".join(["a" * 63] * 3 + ["b" * 61]))
    s["compression"] = struct.pack("!HHHHHH", 1, 0x0100, 1, 0, 0, 0) + bytes([0xC0, 12, 0, 1, 0, 1])
    s["response"] = struct.pack("!HHHHHH", 1, 0x8180, 1, 0, 0, 0) + dns_query("x.test")[12:]
    return s


def ini_seeds():
    # byte 0 even: an INI file; odd: argv (NUL-separated), "\0\0", then a file
    s = {}
    example = os.path.join(HERE, "..", "..", "contrib", "s5tund.ini")
    if os.path.exists(example):
        with open(example, "rb") as f:
            s["example"] = b"\0" + f.read()
    every = os.path.join(HERE, "..", "unit", "configs", "every_key.ini")
    if os.path.exists(every):   # every key at a non-default value: the round trip of each
        with open(every, "rb") as f:
            s["every_key"] = b"\0" + f.read()
    s["groups"] = b"\0" + b"""[group g]
members = b, a
strategy = fastest
probe = http://[::1]:8080/x
tolerance = 0
[upstream a]
address = 192.0.2.1
[upstream b]
address = ::1
[group h]
members = a
strategy = select
selected = a
probe = connect host.example:443
[rules]
default = g
rule = port:443 -> h
"""
    s["full"] = b"\0" + b"""mode = process
queues = 4
[tun]
name = tun7
mtu = 1500
ipv4 = 198.18.0.1/15
ipv6 = fc00::1/64
persist = yes
icmp = reply
[socks5]
address = [2001:db8::1]
port = 1081
username = "user name"
password = "p;a ss"   ; comment
mark = 0x53
udp = associate
udp-address = 192.0.2.1
[session]
connect-timeout = 5
tcp-idle-timeout = 60
max-sessions = 100
udp-idle-timeout = 30
[dns]
address = 198.18.0.2
network = 100.64.0.0/10
cache-size = 1000
[log]
level = debug
file = syslog
"""
    s["bad_key"] = b"\0[tun]\nnmae = tun0\n"
    s["bad_value"] = b"\0[tun]\nmtu = 70000\n"
    s["indented"] = b"\0  [socks5]\n   address = 10.0.0.1   \n\tport=1080\n"
    s["long_line"] = b"\0[log]\nfile = " + b"a" * 9000 + b"\n"
    s["args"] = b"\x01--mode\x00thread\x00--queues=2\x00--socks5\x00[::1]:1080\x00--mtu\x009000\x00--check-config"
    s["args_config"] = b"\x01-c\0/file\0--log-level=warn\0\0[tun]\nname = fz0\n"
    s["args_bad"] = b"\x01--queues\0--help\0-x\0stray"
    s["args_version"] = b"\x01-V"
    return s


def http_seeds():
    # byte 0: the cap (below 0x80: 16 + 4 * byte; else the server's 8 KiB)
    full = b"\xff"
    s = {}
    s["prometheus"] = full + (b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9553\r\n"
                              b"User-Agent: Prometheus/2.42.0\r\n"
                              b"Accept: application/openmetrics-text;version=1.0.0,"
                              b"text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\n"
                              b"Accept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n")
    s["root_http10"] = full + b"GET / HTTP/1.0\r\n\r\n"
    s["query"] = full + b"GET /metrics?name[]=x HTTP/1.1\r\nHost: h\r\n\r\n"
    s["bare_lf"] = full + b"\r\n\nGET /metrics HTTP/1.1\nhost:\tx \n\n"
    s["not_found"] = full + b"GET /metricsx HTTP/1.1\r\nHost: h\r\n\r\n"
    s["post"] = full + b"POST /metrics HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
    s["no_host"] = full + b"GET /metrics HTTP/1.1\r\n\r\n"
    s["two_hosts"] = full + b"GET / HTTP/1.1\r\nHost: a\r\nHOST: b\r\n\r\n"
    s["fold"] = full + b"GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n"
    s["space_colon"] = full + b"GET / HTTP/1.1\r\nHost : a\r\n\r\n"
    s["absolute"] = full + b"GET http://h/metrics HTTP/1.1\r\nHost: h\r\n\r\n"
    s["http2"] = full + b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    s["bare_cr"] = full + b"GET / HTTP/1.1\rHost: a\r\n\r\n"
    s["tls"] = full + bytes.fromhex("160301020001000200") + b"\x03\x03" + b"\x00" * 40
    s["long_uri"] = b"\x10" + b"GET /" + b"a" * 100 + b" HTTP/1.1\r\n\r\n"
    s["long_header"] = b"\x10" + b"GET / HTTP/1.1\r\nHost: a\r\nX: " + b"b" * 100 + b"\r\n\r\n"
    s["partial"] = full + b"GET /metrics HTTP/1.1\r\nHost: a\r\n"
    return s

def upstream_seeds():
    # byte 0: bit 7 SOCKS4, else HTTP in pieces of (bits 0-6) + 1 bytes
    s = {}
    s["http_200"] = bytes([0x7F]) + b"HTTP/1.1 200 Connection established\r\n\r\nSSH-2.0-x\r\n"
    s["http_1xx"] = bytes([0x02]) + b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nVia: 1.1 x\r\n\r\n"
    s["http_407"] = bytes([0x10]) + (b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                                     b"Proxy-Authenticate: Basic realm=\"x\"\r\nContent-Length: 4\r\n\r\nbody")
    s["http_lf_only"] = bytes([0x00]) + b"HTTP/1.0 200 OK\nA: b\n\n"
    s["http_bare_cr"] = bytes([0x05]) + b"HTTP/1.1 200 OK\r\nA: b\rc\r\n\r\n"
    s["http_no_end"] = bytes([0x03]) + b"HTTP/1.1 200 OK\r\nA: b\r\n"
    s["http_long"] = bytes([0x7F]) + b"HTTP/1.1 200 OK\r\nX: " + b"x" * 17000
    s["socks4_granted"] = bytes([0x80, 0, 90, 0, 0, 0, 0, 0, 0]) + b"data"
    s["socks4_rejected"] = bytes([0x80, 0, 91, 0, 0, 0, 0, 0, 0])
    return s


# ---------------------------------------------------------------- sniff


def client_hello(sni, keyshare=32, session_id=32):
    """A TLS 1.3 ClientHello handshake message (header included)."""
    ext = struct.pack("!HHB2s", 43, 3, 2, b"\x03\x04")
    if sni is not None:
        n = sni.encode()
        ext += struct.pack("!HHHBH", 0, len(n) + 5, len(n) + 3, 0, len(n)) + n
    share = bytes((i * 13 + 1) & 0xFF for i in range(keyshare))
    ext += struct.pack("!HHHHH", 51, keyshare + 6, keyshare + 4, 0x11EC, keyshare) + share
    body = (b"\x03\x03" + bytes(range(32)) + bytes([session_id]) + b"\xa5" * session_id +
            struct.pack("!H", 6) + bytes.fromhex("130113021303") + b"\x01\x00" +
            struct.pack("!H", len(ext)) + ext)
    return b"\x01" + len(body).to_bytes(3, "big") + body


def tls_records(msg, frag=16384):
    out = b""
    for at in range(0, len(msg), frag):
        f = msg[at:at + frag]
        out += struct.pack("!BHH", 22, 0x0301, len(f)) + f
    return out


def sniff_tls_seeds():
    # byte 0: below 0x80 the stream as is; 0x80 + k a message in records of k + 1
    s = {}
    fixtures = os.path.join(HERE, "..", "unit", "sniff")
    for f in ("tls_openssl.bin", "tls_curl.bin"):
        with open(os.path.join(fixtures, f), "rb") as fh:
            s["captured_" + f[4:-4]] = b"\x00" + fh.read()
    s["built"] = b"\x00" + tls_records(client_hello("www.example.com"))
    s["records_100"] = b"\x00" + tls_records(client_hello("pq.example.net", 1216 + 32), 100)
    s["no_sni"] = b"\x00" + tls_records(client_hello(None))
    s["ip_sni"] = b"\x00" + tls_records(client_hello("10.1.2.3"))
    s["msg_frag_7"] = b"\x86" + client_hello("frag.example.org")
    s["msg_frag_128"] = b"\xff" + client_hello("big.example.org", 2000)
    s["http"] = b"\x00GET / HTTP/1.1\r\nHost: a\r\n\r\n"
    return s


def sniff_http_seeds():
    s = {}
    s["get"] = b"GET / HTTP/1.1\r\nHost: Example.COM:8080\r\nAccept: */*\r\n\r\n"
    s["lf"] = b"POST /x?y HTTP/1.0\nUser-Agent: u\nhost:\ta.b.\t\n\n"
    s["no_host"] = b"GET / HTTP/1.1\r\nAccept: */*\r\n\r\n"
    s["ipv6"] = b"GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n"
    s["absolute"] = b"GET http://x.example/ HTTP/1.1\r\nHost: h.example\r\n\r\n"
    s["connect"] = b"CONNECT h.example:443 HTTP/1.1\r\nHost: h.example:443\r\n\r\n"
    s["fold"] = b"GET / HTTP/1.1\r\nX: a\r\n b\r\nHost: h\r\n\r\n"
    s["http2"] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
    s["partial"] = b"GET / HTTP/1.1\r\nHo"
    return s


def varint(v):
    if v < 0x40:
        return bytes([v])
    if v < 0x4000:
        return struct.pack("!H", 0x4000 | v)
    return struct.pack("!I", 0x80000000 | v)


def sniff_quic_seeds():
    # byte 0 even: datagrams [len2][bytes]; odd: [flags][len2][frames] the harness protects
    s = {}
    with open(os.path.join(HERE, "..", "unit", "sniff", "rfc9001_a2_client_initial.hex")) as f:
        pkt = bytes.fromhex("".join(l for l in f.read().splitlines() if not l.startswith("#")))
    s["rfc9001_a2"] = b"\x00" + struct.pack("!H", len(pkt)) + pkt
    s["rfc9001_a2_twice"] = b"\x00" + (struct.pack("!H", len(pkt)) + pkt) * 2
    hello = client_hello("quic.example.com", 1216 + 32)

    def crypto(off, data):
        return b"\x06" + varint(off) + varint(len(data)) + data

    def chunk(flags, frames):
        return bytes([flags]) + struct.pack("!H", len(frames)) + frames

    ack = b"\x02\x00\x0a\x01\x00\x00\x00"
    s["two"] = b"\x01" + chunk(1, crypto(0, hello[:700])) + chunk(0, b"\x01" + crypto(700, hello[700:]))
    s["reversed"] = b"\x01" + chunk(3, crypto(700, hello[700:])) + chunk(1, ack + crypto(0, hello[:700]))
    s["coalesced"] = b"\x01" + chunk(4, crypto(0, hello[:700])) + chunk(0, crypto(700, hello[700:]))
    s["one"] = b"\x01" + chunk(0, crypto(0, client_hello("one.example")) + bytes(100))
    s["flipped"] = b"\x01" + chunk(0x58, crypto(0, client_hello("one.example")))
    s["stream"] = b"\x01" + chunk(0, b"\x08\x00\x01x")
    return s


def ss_udp_seeds():
    """fuzz_ss_udp: [method][flags][text or raw packet] (see fuzz_ss_udp.c)."""
    v4 = bytes([1, 10, 0, 2, 7, 0, 53]) + b"hello"
    v6 = bytes([4]) + bytes(16) + bytes([0x1F, 0x90]) + b"x" * 100
    name = bytes([3, 4]) + b"a.bc" + bytes([0, 53]) + b"q"
    return {"aes128-v4": bytes([1, 0]) + v4, "chacha-v6": bytes([0, 0]) + v6,
            "aes256-name": bytes([2, 0]) + name, "flip": bytes([1, 2 | 9 << 2]) + v4,
            "cut": bytes([0, 4]) + v4, "raw": bytes([1, 1]) + bytes(40), "short": bytes([2, 1]) + bytes(10),
            "empty": bytes([1, 0])}


def ss2022_udp_seeds():
    """fuzz_ss2022_udp: [method][flags][packet id][timestamp offset][text] or [method][1][raw packet]."""
    v4 = bytes([1, 10, 0, 2, 7, 0, 53]) + b"hello"
    name = bytes([3, 4]) + b"a.bc" + bytes([0, 53]) + b"q"
    return {"aes128-v4": bytes([0, 0, 0, 0]) + v4, "aes256-name": bytes([1, 0, 7, 30]) + name,
            "chacha-v4": bytes([2, 0, 3, 0xE2]) + v4, "skew": bytes([1, 0, 0, 31]) + v4,
            "flip": bytes([0, 2 | 17 << 3, 1, 0]) + v4, "flip-chacha": bytes([2, 2 | 5 << 3, 1, 0]) + v4,
            "cut": bytes([1, 4, 0, 0]) + v4, "raw": bytes([0, 1]) + bytes(60),
            "raw-chacha": bytes([2, 1]) + bytes(80), "short": bytes([1, 1, 0, 0]) + bytes(10),
            "empty": bytes([2, 0, 0, 0])}


def write(corpus, target, seeds):
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    for old in os.listdir(d):
        if old.startswith("seed-"):
            os.remove(os.path.join(d, old))
    for name, data in sorted(seeds.items()):
        with open(os.path.join(d, "seed-" + name), "wb") as f:
            f.write(data)
    print("%-16s %3d seeds, %6d bytes" % (target, len(seeds), sum(len(v) for v in seeds.values())))


def main():
    corpus = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "corpus")
    write(corpus, "fuzz_packet", packet_seeds())
    write(corpus, "fuzz_socks5", socks5_seeds())
    write(corpus, "fuzz_socks5_udp", socks5_udp_seeds())
    write(corpus, "fuzz_dns", dns_seeds())
    write(corpus, "fuzz_ini", ini_seeds())
    write(corpus, "fuzz_http", http_seeds())
    write(corpus, "fuzz_upstream", upstream_seeds())
    write(corpus, "fuzz_sniff_tls", sniff_tls_seeds())
    write(corpus, "fuzz_sniff_http", sniff_http_seeds())
    write(corpus, "fuzz_sniff_quic", sniff_quic_seeds())
    write(corpus, "fuzz_ss_udp", ss_udp_seeds())
    write(corpus, "fuzz_ss2022_udp", ss2022_udp_seeds())


if __name__ == "__main__":
    main()
