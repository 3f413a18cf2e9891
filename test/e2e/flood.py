# SPDX-License-Identifier: MIT
"""Packets the hostile tests craft and blast into tun0 (hostilecases.py's
synflood and tunflood), standard library only, raw sockets (root in the
client namespace).

  checksum16, tcp_packet   an IPv4 TCP segment with both checksums
  syn_flood                n SYNs from our address or spoofed ones, paced
  Flood, flood_items       sender processes that send prepared TCP segments
                           or UDP datagrams round and round, paced by tun0's
                           drops unless told otherwise
  tun_dropped, tcp_snmp    what the kernel counted meanwhile (tun0's
                           tx_dropped, this namespace's TCP counters)
"""

import os
import random
import socket
import struct
import time

FLOOD_MIN = 8.0          # seconds the flood lasts at least,
FLOOD_TAIL = 1.0         # and after the last idle connection's reset,
FLOOD_CAP = 30.0         # but never longer (the reset is then overdue)
FLOOD_MAX_PACKETS = 10_000_000   # per sender, a bound never reached in FLOOD_CAP
FLOOD_PREPARED = 4096    # packets prepared per sender, sent round and round
FLOOD_TCP_PORTS = (20000, 60000)  # destination ports (the target's 7000 is not among them)
FLOOD_UDP_PORTS = (20000, 20063)  # where hostile.py sink listens (no ICMP errors)


def checksum16(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s) & 0xffff


def tcp_packet(src, dst, sport, dport, seq, flags=0x02, ack=0, payload=b""):
    """An IPv4 TCP segment with both checksums; a SYN by default."""
    tcp = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 64240, 0, 0) + payload
    pseudo = socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack("!BBH", 0, 6, len(tcp))
    tcp = tcp[:16] + struct.pack("!H", checksum16(pseudo + tcp)) + tcp[18:]
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp), random.getrandbits(16), 0, 64, 6, 0,
                     socket.inet_aton(src), socket.inet_aton(dst))
    ip = ip[:10] + struct.pack("!H", checksum16(ip)) + ip[12:]
    return ip + tcp


def syn_flood(dst, dport, n, src=None, spoof_net=None, seed=1, burst=50, pause=0.01):
    """n SYNs to dst:dport from distinct source ports, from src (an address
    of this namespace: its kernel answers the SYN-ACKs with a RST) or from
    random addresses of spoof_net (nobody answers: half-open sessions)."""
    rng = random.Random(seed)
    raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    ports = rng.sample(range(1024, 65535), n)
    sent = 0
    try:
        for i, sport in enumerate(ports):
            s = src or "%s.%d.%d" % (spoof_net, rng.randrange(0, 256), rng.randrange(1, 255))
            pkt = tcp_packet(s, dst, sport, dport, rng.getrandbits(32))
            if i % burst == burst - 1:
                time.sleep(pause)   # a flood, but not one the TUN queue (500 packets) must drop
            while True:
                try:
                    raw.sendto(pkt, (dst, 0))
                    sent += 1
                    break
                except (BlockingIOError, OSError) as e:
                    if getattr(e, "errno", None) in (105, 11):   # ENOBUFS, EAGAIN: pace
                        time.sleep(0.001)
                        continue
                    raise
    finally:
        raw.close()
    return sent


def tun_dropped(dev="tun0"):
    try:
        with open("/sys/class/net/%s/statistics/tx_dropped" % dev) as f:
            return int(f.read())
    except OSError:
        return -1


def flood_items(kind, idx, args):
    """What sender idx sends, prepared: for kind 'tcp' IPv4 TCP segments
    that belong to no connection, on a raw socket (ACK+PSH with 16
    bytes, from random ports of our own address: lwIP answers each with a
    RST, which our kernel drops), or 16-byte UDP datagrams from 8 sockets to
    the 64 ports of the target's IPv4 and IPv6 addresses where hostile.py
    sink listens (8 associations, each datagram relayed through the proxy).
    Returns ([(socket, packet, address)], the sockets)."""
    rng = random.Random(7700 + idx)
    if kind == "tcp":
        lo, hi = FLOOD_TCP_PORTS
        raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        addr = (args.host, 0)
        items = [(raw, tcp_packet(args.src, args.host, rng.randrange(1024, 65535),
                                  rng.randrange(lo, hi), rng.getrandbits(32), flags=0x18,
                                  ack=rng.getrandbits(32), payload=b"tunflood%08d" % k), addr)
                 for k in range(FLOOD_PREPARED)]
        return items, [raw]
    socks = []
    for j in range(8):
        fam = socket.AF_INET if j % 2 == 0 else socket.AF_INET6
        u = socket.socket(fam, socket.SOCK_DGRAM)
        u.setblocking(False)
        socks.append(u)
    items = []
    lo, hi = FLOOD_UDP_PORTS
    for k in range(FLOOD_PREPARED):
        u = socks[k % len(socks)]
        host = args.host if u.family == socket.AF_INET else args.host6
        items.append((u, b"tunflood%08d" % k, (host, rng.randint(lo, hi))))
    return items, socks


class Flood:
    """Sender processes, one per kind (see flood_items), that blast their
    prepared packets into tun0 round and round from go() to stop().

    Unpaced, they send as fast as they can; tun0's queue overflows and the
    kernel drops 40-75 % of what enters it, the keeper's segments alike, so
    that a fresh keeper connection whose first data is lost for
    tcp-idle-timeout seconds is reset by the idle timer, as it should be:
    the keeper fails for the kernel's drops, not the daemon's. Paced (the
    default), each sender backs off when tun0 drops (its tx_dropped grew
    during the sender's last 64 sends: the pause after every 64 doubles,
    plus 50 us, up to 20 ms) and speeds up while nothing is dropped (the
    pause shrinks by 1 % per 64): the queue is full at times, s5tund reads
    as much as it can, and the kernel drops about 1 % or less."""

    def __init__(self, kinds, args, paced=True):
        import multiprocessing
        ctx = multiprocessing.get_context("fork")
        self.kinds, self.paced = kinds, paced
        self.sent, self.errors, self.pauses = (ctx.RawArray("q", len(kinds)) for _ in range(3))
        self.stopped = ctx.RawValue("b", 0)
        self.go_ev = ctx.Event()
        self.procs = [ctx.Process(target=self.sender, args=(kind, i, args), daemon=True)
                      for i, kind in enumerate(kinds)]
        for p in self.procs:
            p.start()

    def sender(self, kind, idx, args):
        """sent[idx] / errors[idx] count the sends our kernel took / refused
        (ENOBUFS, EAGAIN), pauses[idx] the pauses, updated after every 64.
        Ends at stop(), after FLOOD_CAP + 10 s or FLOOD_MAX_PACKETS."""
        items, socks = flood_items(kind, idx, args)
        dropped_fd = os.open("/sys/class/net/tun0/statistics/tx_dropped", os.O_RDONLY)
        self.go_ev.wait()
        deadline = time.monotonic() + FLOOD_CAP + 10
        sent, errors, pauses, stopped = self.sent, self.errors, self.pauses, self.stopped
        n = e = i = np = 0
        pause = 0.0
        drops = int(os.pread(dropped_fd, 32, 0))
        try:
            while not stopped.value and n < FLOOD_MAX_PACKETS and time.monotonic() < deadline:
                if pause > 20e-6:
                    time.sleep(pause)
                    np += 1
                for sock, data, addr in items[i:i + 64]:
                    try:
                        sock.sendto(data, addr)
                        n += 1
                    except OSError:
                        e += 1
                i = (i + 64) % len(items)
                sent[idx], errors[idx], pauses[idx] = n, e, np
                if self.paced:
                    d = int(os.pread(dropped_fd, 32, 0))
                    pause = min(0.02, 2 * pause + 50e-6) if d > drops else 0.99 * pause
                    drops = d
        finally:
            sent[idx], errors[idx], pauses[idx] = n, e, np
            os.close(dropped_fd)
            for sk in socks:
                sk.close()

    def go(self):
        self.go_ev.set()

    def stop(self):
        """Stops the senders and waits for them (bounded); returns how many
        packets they sent."""
        self.stopped.value = 1
        self.go_ev.set()
        for p in self.procs:
            p.join(30)
            if p.is_alive():
                p.kill()
                p.join(5)
        return sum(self.sent)


def tcp_snmp():
    """This namespace's TCP counters (/proc/net/snmp): OutSegs, RetransSegs..."""
    with open("/proc/net/snmp") as f:
        rows = [ln.split() for ln in f if ln.startswith("Tcp:")]
    return dict(zip(rows[0][1:], (int(x) for x in rows[1][1:])))
