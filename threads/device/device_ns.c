/* SPDX-License-Identifier: MIT */
/* [tun] netns: see device_ns.h. */
#include "threads/device/device_ns.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/log.h"
#include "tun/netns.h"
#include "tun/tun.h"
#include "ini/sockaddr.h"

#define ETC_NETNS "/etc/netns"

static struct s5_netns ns = {.fd = -1, .home = -1};
static bool inside;
static char resolv_path[sizeof ETC_NETNS + 1 + 256 + sizeof "/resolv.conf"];
static bool resolv_created, resolv_dir_created;

int s5_device_ns_enter(void) {
  if (ns.fd < 0) return 0;
  int r = s5_netns_enter(&ns);
  if (r < 0) {
    s5_error("[tun] netns %s: entering it: %s", ns.name, strerror(-r));
    return -1;
  }
  inside = true;
  return 0;
}

void s5_device_ns_leave(void) {
  if (!inside) return;
  int r = s5_netns_leave(&ns);
  /* Staying in the device's namespace would put every proxy socket there:
   * nothing the daemon could go on with. */
  if (r < 0) {
    s5_error("[tun] netns %s: going back to our own namespace: %s", ns.name, strerror(-r));
    abort();
  }
  inside = false;
}

int s5_device_ns_open(const struct s5_config *cfg) {
  if (cfg->tun.netns[0] == '\0') return 0;
  char err[320];
  if (s5_netns_open(&ns, cfg->tun.netns, err, sizeof err) < 0) {
    s5_error("%s", err);
    return -1;
  }
  s5_info("[tun] netns %s: %s; the device goes there, the proxy sockets stay here", ns.name,
          ns.created ? "created" : "exists, used as it is");
  return s5_device_ns_enter();
}

/* nameserver lines for the mapped resolver's addresses. */
static int resolv_write(int fd, const struct s5_config *cfg) {
  char text[256] = "# written by s5tund for [tun] netns: the mapped resolver\n";
  for (int i = 0; i < 2; i++) {
    const struct sockaddr_storage *ss = &cfg->dns.addr[i];
    char a[INET6_ADDRSTRLEN];
    if (s5_sockaddr_host(ss, a, sizeof a)[0] == '\0') continue;
    size_t n = strlen(text);
    snprintf(text + n, sizeof text - n, "nameserver %s\n", a);
  }
  size_t len = strlen(text);
  return write(fd, text, len) == (ssize_t)len ? 0 : -1;
}

/* /etc/netns/NAME/resolv.conf, which `ip netns exec` mounts over
 * /etc/resolv.conf; only if there is none (the admin's is kept). */
static void resolv_create(const struct s5_config *cfg) {
  if (cfg->dns.addr[0].ss_family == 0 && cfg->dns.addr[1].ss_family == 0) return;
  char dir[sizeof ETC_NETNS + 1 + sizeof ns.name];
  snprintf(dir, sizeof dir, "%s/%s", ETC_NETNS, ns.name);
  snprintf(resolv_path, sizeof resolv_path, "%s/resolv.conf", dir);
  if (mkdir(ETC_NETNS, 0755) < 0 && errno != EEXIST) goto fail;
  if (mkdir(dir, 0755) == 0) resolv_dir_created = true;
  else if (errno != EEXIST) goto fail;
  int fd = open(resolv_path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0 && errno == EEXIST) {
    s5_info("[tun] netns %s: %s exists: kept as it is", ns.name, resolv_path);
    return;
  }
  if (fd < 0) goto fail;
  int w = resolv_write(fd, cfg);
  if (close(fd) < 0 || w < 0) goto fail;
  resolv_created = true;
  s5_info("[tun] netns %s: %s points at the mapped resolver", ns.name, resolv_path);
  return;
fail:
  s5_warn("[tun] netns %s: %s: %s (names will not be mapped there)", ns.name, resolv_path, strerror(errno));
}

int s5_device_ns_finish(const struct s5_config *cfg) {
  if (ns.fd < 0) return 0;
  char err[256];
  int r =
    s5_tun_netns_setup(cfg->tun.name, cfg->tun.ipv4.family != 0, cfg->tun.ipv6.family != 0, err, sizeof err);
  s5_device_ns_leave();
  if (r < 0) {
    s5_error("[tun] netns %s: %s", ns.name, err);
    return -1;
  }
  resolv_create(cfg);
  return 0;
}

void s5_device_ns_close(bool clean) {
  if (ns.fd < 0 && ns.home < 0) return;
  s5_device_ns_leave();
  if (clean && resolv_created) {
    if (unlink(resolv_path) < 0) s5_warn("[tun] netns %s: %s: %s", ns.name, resolv_path, strerror(errno));
    if (resolv_dir_created) {
      char *slash = strrchr(resolv_path, '/');
      *slash = '\0';
      if (rmdir(resolv_path) < 0) s5_warn("[tun] netns %s: %s: %s", ns.name, resolv_path, strerror(errno));
    }
  }
  resolv_created = resolv_dir_created = false;
  bool created = ns.created;
  int r = s5_netns_close(&ns, clean);
  if (r < 0) s5_warn("[tun] netns %s: removing it: %s", ns.name, strerror(-r));
  else if (clean && created) s5_info("[tun] netns %s: removed", ns.name);
}
