#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Hostile and broken peers for the s5tund end-to-end tests (hostile.sh).

Three roles, standard library only (Debian's /usr/bin/python3). This file
is the command line; the roles live in
  hostileproxy.py  proxy and sink (the SOCKS5 server side is socks5srv.py's,
                   shared with badproxy.py)
  hostilecases.py  check: the cases and the checks they share
  flood.py         crafted packets: SYN flood, tunflood's senders
  e2elib.py        the daemon under test (Daemon) and the keeper (Keeper)

  hostile.py proxy --listen ADDR [--listen ADDR] --port P [--slow-greeting]
                   [--udp-bnd-file F] [--ready-file F]

    A SOCKS5 server (method "no authentication") that answers the greeting
    honestly (one byte per 100 ms with --slow-greeting), then behaves
    according to the port the CONNECT asks for:

      7101 garbage     10 bytes that are no CONNECT reply (rotating: wrong
                       VER; VER 5 with an unknown ATYP; ATYP 3 with length 0;
                       random bytes), then reads until s5tund ends the
                       connection
      7102 truncated   the first 5 bytes of a success reply, then a FIN
      7103 bigdomain   success with BND as ATYP 3, length 255, 255 bogus
                       bytes (binary, NULs included); then an honest relay
                       to port 7000 of the requested address
      7104 bigdomain-cut  ATYP 3, length 255, only 100 of the 255 bytes, FIN
      7105 slow-ok     a success reply one byte per 100 ms (1 s), then an
                       honest relay to port 7000
      7106 slow-late   a success reply with a 250-byte ATYP 3 name, one byte
                       per 100 ms (26 s: past any connect-timeout the tests
                       use); logs how many bytes went out before s5tund
                       gave up
      7107 hang        nothing after the CONNECT; reads until s5tund ends it
      7108 close-fin   a FIN right after the CONNECT request, no reply
      7109 close-rst   a RST right after the CONNECT request, no reply
      7110 cut-fin     success, an honest relay to port 7000, but after
                       65536 bytes toward the client both connections are
                       closed with a FIN
      7111 cut-rst     the same, closed with a RST
      7112 stall-rst   as cut-rst after 2 MiB, once s5tund's kernel took them
                       (or 3 s passed): with a client that does not read
                       yet, the bytes and the RST wait unread in s5tund's
                       socket together
      other            an honest relay (EOF passed on as a half-close, RST
                       as RST)

    UDP ASSOCIATE is answered with success and the BND.ADDR:PORT read from
    --udp-bnd-file at that moment ("ADDR PORT"; an unreachable relay), and
    the control connection is held until the client ends it. One log line
    per connection: "hostile: conn N MODE ... client-end=eof|reset|-".

  hostile.py sink --listen ADDR [--listen ADDR] [--ports LO-HI] [--ready-file F]

    UDP sockets on every port LO..HI (default 20000-20063) of every ADDR,
    never read: where tunflood's UDP datagrams end, relayed by the proxy,
    without an ICMP error (which would end the proxy's UDP relay).

  hostile.py check CASE --pid PID --stats SOCK --log FILE --proxy-log FILE ...

    Runs in the client namespace: the hostile traffic of CASE through the
    tunnel while a keeper echoes through the same daemon, then the checks:
    the keeper never failed, the hostile sessions ended as they must, the
    counters moved by exactly what was done, every session is gone
    (tcp_active / udp_active 0), the daemon's process tree has as many open
    fds as before, and the daemon logged the case a bounded number of times
    (at most --log-max lines at info or above, never one per session).
    Exit 0 when every check passed; the last line says what failed.
"""

import argparse
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from flood import FLOOD_UDP_PORTS  # noqa: E402
from hostilecases import CASES, cmd_check  # noqa: E402
from hostileproxy import cmd_proxy, cmd_sink  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("proxy")
    p.add_argument("--listen", action="append", required=True)
    p.add_argument("--port", type=int, default=1083)
    p.add_argument("--slow-greeting", action="store_true")
    p.add_argument("--udp-bnd-file")
    p.add_argument("--ready-file")
    p = sub.add_parser("sink")
    p.add_argument("--listen", action="append", required=True)
    p.add_argument("--ports", default="%d-%d" % FLOOD_UDP_PORTS)
    p.add_argument("--ready-file")
    p = sub.add_parser("check")
    p.add_argument("case", choices=sorted(CASES))
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--stats", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--proxy-log")
    p.add_argument("--proxy-addr", default="10.200.0.2")
    p.add_argument("--udp-bnd-file")
    p.add_argument("--host", default="10.201.0.1")
    p.add_argument("--host6", default="fd00:201::1")
    p.add_argument("--port", type=int, default=7000)
    p.add_argument("--src", default="10.200.0.1")
    p.add_argument("--n", type=int, default=0)
    p.add_argument("--connect-timeout", type=int, default=10)
    p.add_argument("--idle-timeout", type=int, default=600)
    p.add_argument("--limit-nofile", default="")
    p.add_argument("--log-max", type=int, default=20)
    p.add_argument("--flood", default="tcp,udp",
                   help="tunflood: one sender process per word, tcp or udp")
    p.add_argument("--flood-unpaced", action="store_true",
                   help="tunflood: the senders never pause (see Flood)")
    p.add_argument("--flood-min-read", type=int, default=50000,
                   help="tunflood: packets s5tund must have read during the flood")
    args = ap.parse_args()
    return {"proxy": cmd_proxy, "sink": cmd_sink, "check": cmd_check}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
