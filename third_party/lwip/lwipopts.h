/* SPDX-License-Identifier: MIT */
/* lwIP configuration for s5tund.
 *
 * One lwIP instance per worker: a worker owns one TUN queue, one libuv loop
 * and one stack, and never touches another worker's stack. The instance is
 * private to its thread through patch 0001 (LWIP_THREAD_LOCAL below). lwIP
 * only terminates TCP (and later UDP) for whatever the host routes into the
 * TUN device, so everything link-layer, addressing or API related is off.
 *
 * Every option that matters is set here explicitly, each with the reason;
 * lwIP's opt.h supplies the rest. Compile-time consistency checks that
 * lwIP's own init.c can no longer do for us (see LWIP_DISABLE_TCP_SANITY_
 * CHECKS) are at the end of this file. */
#ifndef S5_LWIPOPTS_H
#define S5_LWIPOPTS_H

/* ---- Per-thread instances (patch 0001) ----------------------------------- */

/* Storage class of every mutable lwIP global: one copy per thread. The unit
 * test's twin library defines S5_LWIP_NO_TLS to get a classic shared stack
 * and prove the test can tell the difference. */
#ifdef S5_LWIP_NO_TLS
#define LWIP_THREAD_LOCAL
#else
#define LWIP_THREAD_LOCAL __thread
#endif

/* ---- System integration ------------------------------------------------- */

#define NO_SYS 1               /* no lwIP threads: each worker calls lwIP from its own loop */
#define LWIP_TIMERS 0          /* the worker's libuv timer calls tcp_tmr()/ip_reass_tmr()/ip6_reass_tmr() */
#define SYS_LIGHTWEIGHT_PROT 0 /* an instance is only ever used by one thread: nothing to lock */
#define LWIP_NETCONN 0         /* raw callback API only */
#define LWIP_SOCKET 0          /* raw callback API only */
#define LWIP_CALLBACK_API 1    /* tcp_recv()/tcp_sent()/... callbacks (the default, stated) */

/* ---- Memory ------------------------------------------------------------- */

#define MEM_LIBC_MALLOC 1 /* heap from malloc(): no fixed arena to size, thread-safe */
#define MEMP_MEM_MALLOC 1 /* pools from malloc() too: no per-type limits, no static pools */
#define MEM_ALIGNMENT 8   /* pointer alignment on 64-bit; header fields land 4-aligned */
#define LWIP_STATS 0      /* counters would be extra (per-thread) state nobody reads */

/* ---- Protocols ---------------------------------------------------------- */

#define LWIP_IPV4 1
#define LWIP_IPV6 1
#define LWIP_TCP 1 /* terminated here and carried to the SOCKS5 proxy */
#define LWIP_UDP 1 /* datagrams to any destination go to core/udp/udp.c (patch 0003) */
#define LWIP_ICMP \
  1 /* echo replies ([tun] icmp = reply; core/netif/netif.c drops echo requests otherwise) and protocol-unreachable */
#define LWIP_RAW 0      /* no raw pcbs */
#define LWIP_DNS 0      /* the proxy resolves, if anyone does */
#define LWIP_ARP 0      /* TUN is layer 3: no ARP ... */
#define LWIP_ETHERNET 0 /* ... and no Ethernet framing */
#define LWIP_IGMP 0     /* no multicast membership */
#define LWIP_DHCP 0
#define LWIP_AUTOIP 0

/* ---- IP ----------------------------------------------------------------- */

#define LWIP_SINGLE_NETIF 1 /* one TUN queue per instance; shortens routing to netif_default */
#define IP_FORWARD 0        /* never route: a packet is either ours or dropped */
#define LWIP_IPV6_FORWARD 0
#define IP_REASSEMBLY 1        /* hosts may fragment toward a small TUN MTU */
#define IP_REASS_MAX_PBUFS 128 /* a 64 KiB datagram at MTU 1500 is 45 fragments */
#define LWIP_IPV6_REASS 1
#define IPV6_FRAG_COPYHEADER \
  1 /* required on 64-bit: the reassembly helper does not fit the fragment header */
/* Per netif at run time: with TUN offloads ([tun] offload) the kernel is
 * told that TCP checksums are partial and lwIP must not compute them. */
#define LWIP_CHECKSUM_CTRL_PER_NETIF 1
/* Checksums of what lwIP sends are needed: the kernel verifies packets
 * written to a TUN device. What it reads was checksummed by the kernel that
 * built the packet (a TUN device without offloads gets complete checksums),
 * so verifying TCP and UDP again cost a quarter of the CPU time on uploads
 * (perf) and protected against nothing. IP and ICMP headers are still
 * checked: small, and they decide where a packet goes. */
#define CHECKSUM_CHECK_TCP 0
#define CHECKSUM_CHECK_UDP 0
/* Summing while copying proxy data into segments would cost a pass over
 * the data that offloads make unnecessary: off. */
#define LWIP_CHECKSUM_ON_COPY 0
/* Our eight-bytes-at-a-time sum (arch/s5_lwip_chksum.c) instead of lwIP's 16-bit loop. */
#define LWIP_CHKSUM s5_lwip_chksum
unsigned short s5_lwip_chksum(const void *dataptr, int len); /* u16_t is not declared yet here */

/* IPv6 on a point-to-point layer-3 device: no neighbour discovery, no MLD,
 * no address configuration. The ND tables still exist (nd6.c is needed for
 * ICMPv6), so keep them at one entry each. */
#define LWIP_IPV6_MLD 0
#define LWIP_IPV6_AUTOCONFIG 0
#define LWIP_IPV6_DUP_DETECT_ATTEMPTS 0
#define LWIP_IPV6_SEND_ROUTER_SOLICIT 0
#define LWIP_IPV6_DHCP6 0
#define LWIP_ND6_QUEUEING 0 /* nothing waits for address resolution */
#define LWIP_ND6_NUM_NEIGHBORS 1
#define LWIP_ND6_NUM_DESTINATIONS 1
#define LWIP_ND6_NUM_PREFIXES 1
#define LWIP_ND6_NUM_ROUTERS 1
#define LWIP_ND6_ALLOW_RA_UPDATES 0       /* router advertisements must not change our MTU */
#define LWIP_ND6_TCP_REACHABILITY_HINTS 0 /* no neighbour cache to refresh */

/* Our code also includes <arpa/inet.h>: leave htons() & co. to the C
 * library instead of lwIP's same-named macros (arch/cc.h maps lwIP's own
 * lwip_htons() & co. to compiler byte swaps). */
#define LWIP_DONT_PROVIDE_BYTEORDER_FUNCTIONS 1

/* No link-layer header in front of IP on TUN (IFF_NO_PI). */
#define PBUF_LINK_HLEN 0
#define PBUF_LINK_ENCAPSULATION_HLEN 0

/* PBUF_POOL buffers (lwIP clones broadcasts into them; the application may
 * use them for small packets). The default derives from TCP_MSS and would
 * overflow the u16_t pool element size (silently: 24-byte elements). Large
 * packets become chains; prefer PBUF_RAM of the exact size for TUN reads. */
#define PBUF_POOL_BUFSIZE 2048

/* ---- TCP ---------------------------------------------------------------- */

/* Upper bound of the per-connection MSS: lwIP uses min(TCP_MSS, netif MTU -
 * IP and TCP headers, peer's MSS option). 65495 is what an MTU of 65535
 * allows for IPv4 (65535 - 20 - 20); IPv6 connections get at most 65475
 * from the MTU. A segment's pbuf holds only the payload at allocation, the
 * headers are prepended later, so the u16_t pbuf length ends at exactly
 * 65535 (checked by building and sending such segments). */
#undef TCP_MSS /* glibc's <netinet/tcp.h> defines a BSD-legacy TCP_MSS 512 */
#define TCP_MSS 65495

#define LWIP_WND_SCALE 1         /* windows above 64 KiB */
#define TCP_RCV_SCALE 4          /* 0xffff << 4 covers 1 MiB; << 3 would stop just short of 512 KiB */
#define TCP_WND (512 * 1024)     /* receive window: host -> proxy throughput */
#define TCP_SND_BUF (512 * 1024) /* send buffer: proxy -> host throughput */

/* Pbufs a connection may queue for sending: lwIP's default formula
 * (4 * TCP_SND_BUF / MSS) evaluated for the smallest MSS (536), because the
 * real MSS follows the TUN MTU, not TCP_MSS. Must fit u16_t. With
 * MEMP_MEM_MALLOC these are limits, not preallocations. */
#define TCP_SND_QUEUELEN ((4 * TCP_SND_BUF) / 536)
#define MEMP_NUM_TCP_SEG TCP_SND_QUEUELEN

/* Writable threshold for code that polls tcp_sndbuf(). tcp_sndbuf() saturates
 * at 0xffff even with window scaling (read pcb->snd_buf for the real value),
 * so a threshold of TCP_SND_BUF/2 could never be crossed: use half of what
 * tcp_sndbuf() can report. lwIP itself only uses it in the netconn API. */
#define TCP_SNDLOWAT 0x8000
#define TCP_SNDQUEUELOWAT (TCP_SND_QUEUELEN / 2)

/* (default, stated) tcp_write() may allocate up to one segment ahead so
 * that following small writes fill it instead of chaining pbufs; bounded
 * per connection by its real MSS. */
#define TCP_OVERSIZE TCP_MSS

/* Not an option: TCP_SYN_RCVD_TIMEOUT is fixed at 20 s in tcp_priv.h. It is
 * how long a SYN-ACK held by the syn callback (patch 0002) may wait for the
 * proxy; every retransmitted SYN from the client restarts it. */

#define TCP_QUEUE_OOSEQ 1 /* keep out-of-order segments instead of forcing retransmits */
/* TIME_WAIT lasts 2*TCP_MSL. Its job, keeping old duplicates of a closed
 * connection away from a new one on the same ports, hardly arises between
 * a host and its own TUN, while at thousands of connections per second the
 * default 2 min would keep hundreds of thousands of dead pcbs in memory.
 * A client that reuses its port within those 2 s gets its SYN-ACK at once
 * (patch 0008: a SYN above the old rcv_nxt ends the TIME_WAIT). */
#define TCP_MSL 1000UL
/* The 4-tuple index of active and TIME_WAIT pcbs (patch 0007): 4096
 * buckets, 32 KiB of thread-local storage in every thread of the process;
 * chains stay short up to tens of thousands of pcbs per worker. */
#define TCP_PCB_HASH_BITS 12
#define LWIP_TCP_SACK_OUT 1  /* tell the host which out-of-order data we hold */
#define TCP_LISTEN_BACKLOG 0 /* admission is decided in the listener's syn callback (patch 0002) */

/* lwIP's TCP sanity checks in init.c include "TCP_SNDLOWAT must be 4*MSS
 * below 0xffff", which no MSS above 16383 can satisfy, and the switch turns
 * off all of them together. The checks that still make sense are repeated
 * at the end of this file. */
#define LWIP_DISABLE_TCP_SANITY_CHECKS 1

/* Initial sequence numbers from the per-thread generator instead of lwIP's
 * default (a counter that starts at the same value in every instance). */
#define LWIP_HOOK_TCP_ISN(local_ip, local_port, remote_ip, remote_port) LWIP_RAND()

/* GSO toward a client whose MSS is below the device's (a LAN client at MTU
 * 1500 behind a router): core/tcp/session.c lifts the pcb's MSS and keeps
 * the client's in the pcb's extension slot 0; every segment lwIP writes
 * passes through this hook on its way out (data and control segments),
 * which leaves that MSS in s5_lwip_out_gso for the netif's write that
 * follows on the same thread (core/netif/netif.c: the packet's gso_size).
 * arch/s5_lwip_gso.c. */
#define LWIP_TCP_PCB_NUM_EXT_ARGS 1
#define S5_LWIP_EXT_CLIENT_MSS 0
struct pbuf;
struct tcp_hdr;
struct tcp_pcb;
extern LWIP_THREAD_LOCAL unsigned short s5_lwip_out_gso;
unsigned int *s5_lwip_tcp_out_opts(const struct tcp_pcb *pcb, unsigned int *opts);
#define LWIP_HOOK_TCP_OUT_ADD_TCPOPTS(p, hdr, pcb, opts) s5_lwip_tcp_out_opts(pcb, opts)

/* ---- Debugging ---------------------------------------------------------- */

/* Assertions compiled out, in every build type: an assertion that a hostile
 * packet could trip must not become a remote abort(). Define S5_LWIP_ASSERT
 * (cmake -DS5_LWIP_ASSERT=ON) to compile them in for debugging and fuzzing,
 * where a failed one aborts with a message (arch/cc.h). */
#ifndef S5_LWIP_ASSERT
#define LWIP_NOASSERT
#endif
/* LWIP_DEBUG stays undefined: no LWIP_DEBUGF output, no debug-only state. */

/* ---- Our own consistency checks (see LWIP_DISABLE_TCP_SANITY_CHECKS) ---- */

#if PBUF_POOL_BUFSIZE + 64 > 0xffff
#error "PBUF_POOL_BUFSIZE plus struct pbuf must fit the u16_t pool element size"
#endif
#if TCP_MSS > 0xffff - 40
#error "TCP_MSS: a full IPv4 segment (20 + 20 bytes of headers) must fit a u16_t pbuf length"
#endif
#if TCP_SND_BUF < 2 * TCP_MSS
#error "TCP_SND_BUF must hold at least two full segments"
#endif
#if TCP_SND_QUEUELEN > 0xffff || TCP_SND_QUEUELEN < 2 * (TCP_SND_BUF / TCP_MSS)
#error "TCP_SND_QUEUELEN must fit u16_t and cover TCP_SND_BUF in MSS-sized segments"
#endif
#if TCP_SNDLOWAT >= TCP_SND_BUF || TCP_SNDLOWAT >= 0xffff
#error "TCP_SNDLOWAT must be below TCP_SND_BUF and below what tcp_sndbuf() can report"
#endif
#if TCP_SNDQUEUELOWAT >= TCP_SND_QUEUELEN
#error "TCP_SNDQUEUELOWAT must be below TCP_SND_QUEUELEN"
#endif
#if TCP_WND < TCP_MSS
#error "TCP_WND must be at least one MSS"
#endif
#if TCP_WND > (0xffff << TCP_RCV_SCALE) || (TCP_WND >> TCP_RCV_SCALE) == 0
#error "TCP_WND does not fit the window scale TCP_RCV_SCALE"
#endif

#endif /* S5_LWIPOPTS_H */
