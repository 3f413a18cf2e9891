/* SPDX-License-Identifier: MIT */
/* Queue steering: which queue of the device, and so which worker, gets a
 * packet the kernel sends into the tunnel.
 *
 * Without help the kernel hashes each packet's flow (addresses, protocol
 * and, when the packet carries them, ports). That splits what s5tund must
 * keep together: an IP fragment carries no ports, so the fragments of a
 * large UDP datagram hash on addresses alone and reach another worker than
 * the whole datagrams of the same socket, and datagrams of one socket to
 * two destinations hash apart too. Each such worker opens its own UDP
 * ASSOCIATE, so the remote sees one client socket from several ports (full
 * cone broken, iperf3 -u with large datagrams fails outright).
 *
 * So s5tund owns the steering: TUNSETSTEERINGEBPF attaches to the device a
 * socket-filter program whose return value is the queue: the hash modulo
 * the configured number of queues (the kernel would take it modulo its
 * current number, one more while a restarted worker's queue is being
 * swapped in, and every flow would move). It is written here as eBPF instructions
 * (no compiler, no libbpf; loaded with the bpf(2) system call):
 *
 *   UDP        hash of (source address, source port): one source, one
 *              queue, whatever its destination (one association serves
 *              every destination: full cone)
 *   TCP        hash of the 4-tuple: flows spread over the queues as before
 *   other      hash of the source address (ICMP, ...)
 *   fragments  the first fragment (offset 0, it has the ports) is steered
 *              as above and its choice is stored in an LRU hash map keyed
 *              by (source, destination, IP ID, protocol); later fragments
 *              (no ports) take the stored choice, and the last one removes
 *              it. IPv6: the same through the Fragment header, found behind
 *              up to S5_STEER_EXT_MAX extension headers.
 *
 * The kernel emits the fragments of one datagram one after the other, the
 * first one first, so the map holds an entry only while a datagram is
 * being sent; it is an LRU so that entries of lost last fragments age out.
 * A later fragment with no entry (the map evicted it) falls back to the
 * source address hash. A packet too short for a load ends the program with
 * 0 (queue 0): only a malformed packet does that.
 *
 * The hash is murmur3's 32-bit finaliser over the words, from a random seed
 * per start. Loading needs CAP_BPF or CAP_SYS_ADMIN: s5tund attaches while
 * it still runs as root, before [run] user drops privileges; the device
 * keeps the program (it holds a reference) until it is deleted, so workers
 * restarted in process mode need nothing. */
#include "tun/tun.h"

#include <errno.h>
#include <linux/bpf.h>
#include <linux/if_tun.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#define S5_STEER_INSNS 1024 /* room for the program (it uses about 400) */
#define S5_STEER_FIXUPS 256
#define S5_STEER_EXT_MAX 4    /* IPv6 extension headers walked to reach a Fragment header */
#define S5_STEER_MAP_MAX 1024 /* datagrams being fragmented at once, any source */

/* The fragment map's key, in the program's stack frame: src, dst (IPv4 in
 * the first word of each), IP ID, and family << 8 | protocol (IPv6: 0).
 * All of it is zeroed at the start of every run. */
#define KEY_WORDS 10
#define KEY_OFF (-4 * KEY_WORDS) /* fp-40 .. fp-1 */
#define VAL_OFF (KEY_OFF - 4)    /* the value to store: the hash */
#define FIRST_OFF (KEY_OFF - 8)  /* nonzero: a first fragment, store its choice */

/* Registers: R6 the context (LD_ABS/LD_IND need it there), R7 the hash,
 * R8 the offset of the L4 header (IPv6: of the header being walked), R9 the
 * fragment field, then "more fragments" (IPv4) or the next header type,
 * then "more fragments" (IPv6). LD_ABS, LD_IND and helper calls clobber
 * R0-R5. */
enum { R0, R1, R2, R3, R4, R5, R6, R7, R8, R9, R10 };

enum label {
  L_V4,
  L_V4_FRAG,
  L_V4_L4,
  L_V6,
  L_V6_L4,
  L_UDP4,
  L_TCP4,
  L_UDP6,
  L_TCP6,
  L_DONE,
  L_RET,
  L_LATER,
  L_EXT0, /* slot i of the IPv6 walk: L_EXT0 + 3 * i .. + 2 */
  L_COUNT = L_EXT0 + 3 * S5_STEER_EXT_MAX + 1
};

struct prog {
  struct bpf_insn insn[S5_STEER_INSNS];
  unsigned n;
  int label[L_COUNT]; /* instruction index, -1 until placed */
  struct {
    unsigned at;
    int label;
  } fix[S5_STEER_FIXUPS];
  unsigned nfix;
  int overflow;
};

static void emit(struct prog *a, uint8_t code, int dst, int src, int16_t off, int32_t imm) {
  if (a->n >= S5_STEER_INSNS) {
    a->overflow = 1;
    return;
  }
  struct bpf_insn *i = &a->insn[a->n++];
  memset(i, 0, sizeof *i);
  i->code = code;
  i->dst_reg = dst & 0xf;
  i->src_reg = src & 0xf;
  i->off = off;
  i->imm = imm;
}

static void place(struct prog *a, int label) { a->label[label] = (int)a->n; }

/* A jump to a label placed before or after; resolved by prog_link(). */
static void jump(struct prog *a, uint8_t op, int dst, int32_t imm, int label) {
  if (a->nfix >= S5_STEER_FIXUPS) {
    a->overflow = 1;
    return;
  }
  a->fix[a->nfix].at = a->n;
  a->fix[a->nfix++].label = label;
  emit(a, BPF_JMP | op | BPF_K, dst, 0, 0, imm);
}

static int prog_link(struct prog *a) {
  if (a->overflow) return -E2BIG;
  for (unsigned i = 0; i < a->nfix; i++) {
    int to = a->label[a->fix[i].label];
    if (to < 0) return -EINVAL;
    a->insn[a->fix[i].at].off = (int16_t)(to - (int)a->fix[i].at - 1);
  }
  return 0;
}

static void mov_imm(struct prog *a, int dst, int32_t imm) {
  emit(a, BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, imm);
}
static void mov_reg(struct prog *a, int dst, int src) {
  emit(a, BPF_ALU64 | BPF_MOV | BPF_X, dst, src, 0, 0);
}
static void alu32_imm(struct prog *a, uint8_t op, int dst, int32_t imm) {
  emit(a, BPF_ALU | op | BPF_K, dst, 0, 0, imm);
}
static void alu32_reg(struct prog *a, uint8_t op, int dst, int src) {
  emit(a, BPF_ALU | op | BPF_X, dst, src, 0, 0);
}
static void add64_imm(struct prog *a, int dst, int32_t imm) {
  emit(a, BPF_ALU64 | BPF_ADD | BPF_K, dst, 0, 0, imm);
}
static void add64_reg(struct prog *a, int dst, int src) {
  emit(a, BPF_ALU64 | BPF_ADD | BPF_X, dst, src, 0, 0);
}
/* R0 = packet bytes at off (ABS) or at R[reg] + off (IND), in host order. */
static void ld_abs(struct prog *a, uint8_t size, int32_t off) {
  emit(a, BPF_LD | BPF_ABS | size, 0, 0, 0, off);
}
static void ld_ind(struct prog *a, uint8_t size, int reg, int32_t off) {
  emit(a, BPF_LD | BPF_IND | size, 0, reg, 0, off);
}
static void st_word(struct prog *a, int16_t off, int32_t imm) {
  emit(a, BPF_ST | BPF_MEM | BPF_W, R10, 0, off, imm);
}
static void stx_word(struct prog *a, int16_t off, int src) {
  emit(a, BPF_STX | BPF_MEM | BPF_W, R10, src, off, 0);
}
static void ldx_word(struct prog *a, int dst, int src, int16_t off) {
  emit(a, BPF_LDX | BPF_MEM | BPF_W, dst, src, off, 0);
}
static void call(struct prog *a, int32_t helper) { emit(a, BPF_JMP | BPF_CALL, 0, 0, 0, helper); }
static void ld_map(struct prog *a, int dst, int map_fd) {
  emit(a, BPF_LD | BPF_DW | BPF_IMM, dst, BPF_PSEUDO_MAP_FD, 0, map_fd);
  emit(a, 0, 0, 0, 0, 0);
}

/* R7 = fmix32(R7 ^ R0): folds the word just loaded into the hash. R1 is
 * scratch (no call in between). */
static void hash_r0(struct prog *a) {
  alu32_reg(a, BPF_XOR, R7, R0);
  mov_reg(a, R1, R7);
  alu32_imm(a, BPF_RSH, R1, 16);
  alu32_reg(a, BPF_XOR, R7, R1);
  alu32_imm(a, BPF_MUL, R7, (int32_t)0x85ebca6bu);
  mov_reg(a, R1, R7);
  alu32_imm(a, BPF_RSH, R1, 13);
  alu32_reg(a, BPF_XOR, R7, R1);
  alu32_imm(a, BPF_MUL, R7, (int32_t)0xc2b2ae35u);
  mov_reg(a, R1, R7);
  alu32_imm(a, BPF_RSH, R1, 16);
  alu32_reg(a, BPF_XOR, R7, R1);
}

/* Loads a word of the packet, hashes it and, if key_word >= 0, also puts
 * it into the fragment key. */
static void hash_abs_w(struct prog *a, int32_t off, int key_word) {
  ld_abs(a, BPF_W, off);
  if (key_word >= 0) stx_word(a, (int16_t)(KEY_OFF + 4 * key_word), R0);
  hash_r0(a);
}

/* IPv4: source (hashed, in the key); a fragment also fills the rest of the
 * key; then the ports. */
static void gen_ipv4(struct prog *a) {
  place(a, L_V4);
  ld_abs(a, BPF_B, 0);
  mov_reg(a, R8, R0);
  alu32_imm(a, BPF_AND, R8, 0x0f);
  alu32_imm(a, BPF_LSH, R8, 2); /* R8 = IHL * 4 */
  hash_abs_w(a, 12, 0);         /* source address */
  ld_abs(a, BPF_H, 6);
  mov_reg(a, R9, R0);                /* flags and fragment offset */
  alu32_imm(a, BPF_AND, R9, 0x3fff); /* MF | offset */
  jump(a, BPF_JNE, R9, 0, L_V4_FRAG);
  jump(a, BPF_JA, 0, 0, L_V4_L4);

  place(a, L_V4_FRAG);
  ld_abs(a, BPF_W, 16);
  stx_word(a, KEY_OFF + 16, R0); /* destination address */
  ld_abs(a, BPF_H, 4);
  stx_word(a, KEY_OFF + 32, R0); /* identification */
  ld_abs(a, BPF_B, 9);
  alu32_imm(a, BPF_OR, R0, 4 << 8);
  stx_word(a, KEY_OFF + 36, R0); /* family, protocol */
  mov_reg(a, R0, R9);
  alu32_imm(a, BPF_AND, R9, 0x2000); /* more fragments follow (MF) */
  alu32_imm(a, BPF_AND, R0, 0x1fff);
  jump(a, BPF_JNE, R0, 0, L_LATER); /* no ports in it */
  st_word(a, FIRST_OFF, 1);

  place(a, L_V4_L4);
  ld_abs(a, BPF_B, 9);
  jump(a, BPF_JEQ, R0, 17, L_UDP4);
  jump(a, BPF_JEQ, R0, 6, L_TCP4);
  jump(a, BPF_JA, 0, 0, L_DONE);
  place(a, L_UDP4);
  ld_ind(a, BPF_H, R8, 0); /* source port */
  hash_r0(a);
  jump(a, BPF_JA, 0, 0, L_DONE);
  place(a, L_TCP4);
  ld_ind(a, BPF_W, R8, 0); /* both ports */
  hash_r0(a);
  hash_abs_w(a, 16, -1); /* destination address */
  jump(a, BPF_JA, 0, 0, L_DONE);
}

/* One slot of the IPv6 header walk: the header at R8 whose type is in R9.
 * A Fragment header (44) fills the key: a later fragment goes to L_LATER,
 * a first one is stored at the end and the walk goes on behind it; hop-by-
 * hop (0), routing (43) and destination options (60) are skipped; anything
 * else is the L4 header. */
static void gen_ipv6_ext(struct prog *a, int i) {
  int skip = L_EXT0 + 3 * i + 1, frag = L_EXT0 + 3 * i + 2, next = L_EXT0 + 3 * (i + 1);
  place(a, L_EXT0 + 3 * i);
  jump(a, BPF_JEQ, R9, 44, frag);
  jump(a, BPF_JEQ, R9, 0, skip);
  jump(a, BPF_JEQ, R9, 43, skip);
  jump(a, BPF_JEQ, R9, 60, skip);
  jump(a, BPF_JA, 0, 0, L_V6_L4);

  place(a, skip);
  ld_ind(a, BPF_B, R8, 0);
  mov_reg(a, R9, R0); /* next header */
  ld_ind(a, BPF_B, R8, 1);
  add64_imm(a, R0, 1);
  alu32_imm(a, BPF_LSH, R0, 3);
  add64_reg(a, R8, R0); /* (length + 1) * 8 */
  jump(a, BPF_JA, 0, 0, next);

  place(a, frag);
  for (int w = 0; w < 4; w++) {
    ld_abs(a, BPF_W, 24 + 4 * w);
    stx_word(a, (int16_t)(KEY_OFF + 16 + 4 * w), R0); /* destination address */
  }
  ld_ind(a, BPF_W, R8, 4);
  stx_word(a, KEY_OFF + 32, R0); /* identification */
  st_word(a, KEY_OFF + 36, 6 << 8);
  ld_ind(a, BPF_H, R8, 2); /* offset << 3 | M */
  mov_reg(a, R9, R0);
  alu32_imm(a, BPF_AND, R9, 1); /* more fragments follow */
  alu32_imm(a, BPF_AND, R0, 0xfff8);
  jump(a, BPF_JNE, R0, 0, L_LATER);
  stx_word(a, FIRST_OFF, R9); /* store only if more follow (not an atomic fragment) */
  ld_ind(a, BPF_B, R8, 0);
  mov_reg(a, R9, R0);
  add64_imm(a, R8, 8);
  jump(a, BPF_JA, 0, 0, next);
}

static void gen_ipv6(struct prog *a) {
  place(a, L_V6);
  for (int w = 0; w < 4; w++) hash_abs_w(a, 8 + 4 * w, w); /* source address */
  ld_abs(a, BPF_B, 6);
  mov_reg(a, R9, R0);
  mov_imm(a, R8, 40);
  /* Extension headers, unrolled: no loop for the verifier to bound. */
  for (int i = 0; i < S5_STEER_EXT_MAX; i++) gen_ipv6_ext(a, i);
  place(a, L_EXT0 + 3 * S5_STEER_EXT_MAX); /* too many: take R9 as it is */

  place(a, L_V6_L4);
  jump(a, BPF_JEQ, R9, 17, L_UDP6);
  jump(a, BPF_JEQ, R9, 6, L_TCP6);
  jump(a, BPF_JA, 0, 0, L_DONE);
  place(a, L_UDP6);
  ld_ind(a, BPF_H, R8, 0);
  hash_r0(a);
  jump(a, BPF_JA, 0, 0, L_DONE);
  place(a, L_TCP6);
  ld_ind(a, BPF_W, R8, 0);
  hash_r0(a);
  for (int w = 0; w < 4; w++) hash_abs_w(a, 24 + 4 * w, -1);
  jump(a, BPF_JA, 0, 0, L_DONE);
}

/* The end: a first fragment stores its choice; return the hash. A later
 * fragment takes the stored one, and the last (R9, "more fragments",
 * zero) removes it. */
static void gen_tail(struct prog *a, int map_fd, unsigned queues) {
  place(a, L_DONE);
  ldx_word(a, R0, R10, FIRST_OFF);
  jump(a, BPF_JEQ, R0, 0, L_RET);
  stx_word(a, VAL_OFF, R7);
  ld_map(a, R1, map_fd);
  mov_reg(a, R2, R10);
  add64_imm(a, R2, KEY_OFF);
  mov_reg(a, R3, R10);
  add64_imm(a, R3, VAL_OFF);
  mov_imm(a, R4, BPF_ANY);
  call(a, BPF_FUNC_map_update_elem);
  place(a, L_RET);
  mov_reg(a, R0, R7);
  /* The queue itself, not a hash the kernel takes modulo its current
   * number of queues: while a restarted worker's fresh queue is attached
   * beside the old one (process mode), that number is one more for a
   * moment, and every other flow would land on another worker (reset). */
  if (queues > 1) emit(a, BPF_ALU | BPF_MOD | BPF_K, R0, 0, 0, (int32_t)queues);
  emit(a, BPF_JMP | BPF_EXIT, 0, 0, 0, 0);

  place(a, L_LATER);
  ld_map(a, R1, map_fd);
  mov_reg(a, R2, R10);
  add64_imm(a, R2, KEY_OFF);
  call(a, BPF_FUNC_map_lookup_elem);
  jump(a, BPF_JEQ, R0, 0, L_RET); /* unknown: source hash */
  ldx_word(a, R7, R0, 0);
  jump(a, BPF_JNE, R9, 0, L_RET);
  ld_map(a, R1, map_fd);
  mov_reg(a, R2, R10);
  add64_imm(a, R2, KEY_OFF);
  call(a, BPF_FUNC_map_delete_elem);
  jump(a, BPF_JA, 0, 0, L_RET);
}

static void gen(struct prog *a, int map_fd, uint32_t seed, unsigned queues) {
  memset(a->label, 0xff, sizeof a->label);
  mov_reg(a, R6, R1);
  mov_imm(a, R7, (int32_t)seed);
  /* The whole key zeroed, so that the verifier sees it initialised on
   * every path that reaches a map helper (IPv4 leaves words unused). */
  for (int w = 0; w < KEY_WORDS; w++) st_word(a, (int16_t)(KEY_OFF + 4 * w), 0);
  st_word(a, FIRST_OFF, 0);
  ld_abs(a, BPF_B, 0);
  alu32_imm(a, BPF_RSH, R0, 4); /* IP version */
  jump(a, BPF_JEQ, R0, 4, L_V4);
  jump(a, BPF_JEQ, R0, 6, L_V6);
  jump(a, BPF_JA, 0, 0, L_RET); /* neither: the seed, queue seed % n */
  gen_ipv4(a);
  gen_ipv6(a);
  gen_tail(a, map_fd, queues);
}

static long sys_bpf(int cmd, union bpf_attr *attr) { return syscall(SYS_bpf, cmd, attr, sizeof *attr); }

static int map_create(void) {
  union bpf_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.map_type = BPF_MAP_TYPE_LRU_HASH;
  attr.key_size = 4 * KEY_WORDS;
  attr.value_size = 4;
  attr.max_entries = S5_STEER_MAP_MAX;
  snprintf(attr.map_name, sizeof attr.map_name, "s5_frags");
  int fd = (int)sys_bpf(BPF_MAP_CREATE, &attr);
  return fd < 0 ? -errno : fd;
}

/* The verifier's last complete line says why it refused. */
static void last_line(const char *log, char *out, size_t len) {
  size_t n = strlen(log);
  while (n > 0 && log[n - 1] == '\n') n--;
  size_t start = n;
  while (start > 0 && log[start - 1] != '\n') start--;
  snprintf(out, len, "%.*s", (int)(n - start), log + start);
}

static int prog_load(const struct prog *a, char *err, size_t errlen) {
  static char log[65536];
  union bpf_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
  attr.insns = (uint64_t)(uintptr_t)a->insn;
  attr.insn_cnt = a->n;
  attr.license = (uint64_t)(uintptr_t) "GPL";
  snprintf(attr.prog_name, sizeof attr.prog_name, "s5_steer");
  int fd = (int)sys_bpf(BPF_PROG_LOAD, &attr);
  if (fd >= 0) return fd;
  int e = errno;
  /* Again with the verifier's log, only to say why. */
  log[0] = '\0';
  attr.log_buf = (uint64_t)(uintptr_t)log;
  attr.log_size = sizeof log;
  attr.log_level = 1;
  fd = (int)sys_bpf(BPF_PROG_LOAD, &attr);
  if (fd >= 0) return fd; /* the log made the difference? then it loaded */
  char why[160];
  last_line(log, why, sizeof why);
  snprintf(err, errlen, "loading the steering program: %s%s%s", strerror(e), why[0] ? ": " : "", why);
  return -e;
}

int s5_tun_steer_load(uint32_t seed, unsigned queues, int *map_fd, char *err, size_t errlen) {
  static struct prog a;
  int mfd = map_create();
  if (mfd < 0) {
    snprintf(err, errlen, "creating the steering map: %s", strerror(-mfd));
    return mfd;
  }
  memset(&a, 0, sizeof a);
  gen(&a, mfd, seed, queues);
  int r = prog_link(&a);
  if (r < 0) {
    snprintf(err, errlen, "assembling the steering program: %s", strerror(-r));
    close(mfd);
    return r;
  }
  int pfd = prog_load(&a, err, errlen);
  if (pfd < 0 || map_fd == NULL) close(mfd); /* the program holds its map */
  else *map_fd = mfd;
  return pfd;
}

static int set_steering(int fd, int prog_fd) {
  if (ioctl(fd, TUNSETSTEERINGEBPF, &prog_fd) < 0) return -errno;
  return 0;
}

int s5_tun_steer_attach(int fd, unsigned queues, char *err, size_t errlen) {
  uint32_t seed;
  if (getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) seed = (uint32_t)getpid() * 2654435761u;
  int pfd = s5_tun_steer_load(seed, queues, NULL, err, errlen);
  if (pfd < 0) return pfd;
  int r = set_steering(fd, pfd);
  if (r < 0) snprintf(err, errlen, "TUNSETSTEERINGEBPF: %s", strerror(-r));
  close(pfd); /* the device holds the program */
  return r;
}

int s5_tun_steer_detach(int fd) { return set_steering(fd, -1); }
