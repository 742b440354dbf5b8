// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Who may use the monitor. Three ways in (server.c applies them):
 *
 * - a local process of our own user (or root): over the Unix socket, checked
 *   with SO_PEERCRED; over TCP, when the peer address is loopback and the
 *   kernel says (sock_diag, the interface `ss -e` uses) that the peer's socket
 *   belongs to that uid. Another local user reaching a loopback port gets no
 *   more than a stranger: the monitor can read every process of its user.
 * - an API key: `Authorization: Bearer KEY`. The monitor holds only its
 *   SHA-256 (nettle), given with --key-hash; `--generate-key` makes one.
 *   Keys are 256 random bits, so one unsalted hash is enough: there is nothing
 *   to guess from it.
 * - --no-auth: everyone, said explicitly.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <nettle/sha2.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "monitor.h"

static const char hexdigits[] = "0123456789abcdef";

static void to_hex(const uint8_t *b, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = hexdigits[b[i] >> 4];
		out[2 * i + 1] = hexdigits[b[i] & 15];
	}
	out[2 * n] = '\0';
}

void evr_mon_key_hash(const char *key, size_t len, uint8_t ret[EVR_MON_HASH_BYTES])
{
	struct sha256_ctx ctx;

	sha256_init(&ctx);
	sha256_update(&ctx, len, (const uint8_t *)key);
	sha256_digest(&ctx, EVR_MON_HASH_BYTES, ret);
}

int evr_mon_key_generate(char ret_key[2 * EVR_MON_KEY_BYTES + 1],
			 uint8_t ret_hash[EVR_MON_HASH_BYTES])
{
	uint8_t raw[EVR_MON_KEY_BYTES];
	size_t got = 0;

	while (got < sizeof(raw)) {
		ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	to_hex(raw, sizeof(raw), ret_key);
	evr_mon_key_hash(ret_key, strlen(ret_key), ret_hash);
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int evr_mon_key_hash_parse(const char *s, uint8_t ret[EVR_MON_HASH_BYTES], char *err,
			   size_t errlen)
{
	uint8_t h[EVR_MON_HASH_BYTES];
	size_t n;

	if (strncmp(s, "sha256:", 7) != 0) {
		snprintf(err, errlen, "'%s' is not sha256:HEX (as --generate-key prints it)", s);
		return -EINVAL;
	}
	s += 7;
	n = strcspn(s, "\r\n");
	if (n != 2 * EVR_MON_HASH_BYTES) {
		snprintf(err, errlen, "the hash has %zu hex digits, not %d", n,
			 2 * EVR_MON_HASH_BYTES);
		return -EINVAL;
	}
	for (size_t i = 0; i < EVR_MON_HASH_BYTES; i++) {
		int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			snprintf(err, errlen, "the hash has a character that is not a hex digit");
			return -EINVAL;
		}
		h[i] = (uint8_t)(hi << 4 | lo);
	}
	memcpy(ret, h, sizeof(h));
	return 0;
}

bool evr_mon_key_check(const uint8_t hash[EVR_MON_HASH_BYTES], const char *key, size_t len)
{
	uint8_t got[EVR_MON_HASH_BYTES];
	uint8_t diff = 0;

	evr_mon_key_hash(key, len, got);
	/* Constant time: how many bytes match must not show in the timing. */
	for (size_t i = 0; i < EVR_MON_HASH_BYTES; i++)
		diff |= (uint8_t)(got[i] ^ hash[i]);
	return diff == 0;
}

/* ---- the peer's uid --------------------------------------------------------------- */

static bool uid_ok(uid_t uid)
{
	return uid == geteuid() || uid == 0;
}

bool evr_mon_addr_is_loopback(const struct sockaddr *sa, socklen_t len)
{
	if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)sa;

		return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	}
	if (sa->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)sa;
		static const uint8_t v4mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

		if (IN6_IS_ADDR_LOOPBACK(&a->sin6_addr))
			return true;
		return !memcmp(a->sin6_addr.s6_addr, v4mapped, 12) && a->sin6_addr.s6_addr[12] == 127;
	}
	return false;
}

/*
 * The uid owning the TCP socket whose local end is @peer and remote end is
 * @local (the client's socket, seen from our side of the connection), asked of
 * the kernel with one NETLINK_SOCK_DIAG request for that exact 4-tuple.
 */
static int tcp_peer_uid(const struct sockaddr_storage *peer, const struct sockaddr_storage *local,
			uid_t *ret)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 r;
	} req = { 0 };
	union {
		struct nlmsghdr nlh;
		char buf[8192];
	} resp;
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	int fd, err = -ENOENT;
	ssize_t n;

	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST;
	req.r.sdiag_family = (uint8_t)peer->ss_family;
	req.r.sdiag_protocol = IPPROTO_TCP;
	req.r.idiag_states = ~0u;
	req.r.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
	req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
	if (peer->ss_family == AF_INET) {
		const struct sockaddr_in *p = (const void *)peer, *l = (const void *)local;

		req.r.id.idiag_sport = p->sin_port;
		req.r.id.idiag_dport = l->sin_port;
		memcpy(req.r.id.idiag_src, &p->sin_addr, 4);
		memcpy(req.r.id.idiag_dst, &l->sin_addr, 4);
	} else {
		const struct sockaddr_in6 *p = (const void *)peer, *l = (const void *)local;

		req.r.id.idiag_sport = p->sin6_port;
		req.r.id.idiag_dport = l->sin6_port;
		memcpy(req.r.id.idiag_src, &p->sin6_addr, 16);
		memcpy(req.r.id.idiag_dst, &l->sin6_addr, 16);
	}
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -errno;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&nl, sizeof(nl)) < 0) {
		err = -errno;
		goto out;
	}
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		/* The kernel answers at once; the bound only guards against a surprise. */
		if (poll(&pfd, 1, 1000) <= 0) {
			err = -ETIMEDOUT;
			break;
		}
		n = recv(fd, &resp, sizeof(resp), 0);
		if (n < 0) {
			err = -errno;
			break;
		}
		for (struct nlmsghdr *h = &resp.nlh; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_DONE)
				goto out;
			if (h->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
			    h->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg))) {
				const struct inet_diag_msg *m = NLMSG_DATA(h);

				*ret = m->idiag_uid;
				err = 0;
				goto out;
			}
		}
	}
out:
	close(fd);
	return err;
}

int evr_mon_peer_is_local_user(int fd)
{
	struct sockaddr_storage peer, local;
	socklen_t pl = sizeof(peer), ll = sizeof(local);
	uid_t uid;
	int err;

	if (getpeername(fd, (struct sockaddr *)&peer, &pl) < 0 ||
	    getsockname(fd, (struct sockaddr *)&local, &ll) < 0)
		return -errno;
	if (peer.ss_family == AF_UNIX) {
		struct ucred cr;
		socklen_t cl = sizeof(cr);

		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0)
			return -errno;
		return uid_ok(cr.uid);
	}
	if (peer.ss_family != local.ss_family ||
	    !evr_mon_addr_is_loopback((const struct sockaddr *)&peer, pl))
		return 0;
	err = tcp_peer_uid(&peer, &local, &uid);
	if (err < 0)
		return err;
	return uid_ok(uid);
}

/* ---- admission: who may do what from where ---------------------------------------- */

bool evr_mon_name_is_loopback(const char *h, size_t n)
{
	unsigned a, b, c, d;
	char tail, buf[64];

	if (n >= sizeof(buf))
		return false;
	memcpy(buf, h, n);
	buf[n] = '\0';
	if (!strcasecmp(buf, "localhost") || !strcmp(buf, "::1") || !strcmp(buf, "[::1]"))
		return true;
	/* 127.0.0.0/8 as a dotted quad, nothing else (no "127.1", no octal games). */
	if (strspn(buf, "0123456789.") != n ||
	    sscanf(buf, "%3u.%3u.%3u.%3u%c", &a, &b, &c, &d, &tail) != 4)
		return false;
	return a == 127 && b < 256 && c < 256 && d < 256;
}

bool evr_mon_host_is_loopback(const char *host, uint16_t port)
{
	const char *colon;
	char want[8];

	if (!host)
		return false;
	colon = strrchr(host, ':');
	/* The port must be there, and be ours: "[::1]" alone has its colon inside. */
	if (!colon || (host[0] == '[' && strchr(colon, ']')))
		return false;
	snprintf(want, sizeof(want), "%u", port);
	if (strcmp(colon + 1, want))
		return false;
	/* The unspecified addresses reach this machine too (the URL the monitor prints
	 * with --listen 0.0.0.0:P); no page elsewhere can make a browser name them. */
	if ((colon - host == 7 && !strncmp(host, "0.0.0.0", 7)) ||
	    (colon - host == 4 && !strncmp(host, "[::]", 4)))
		return true;
	return evr_mon_name_is_loopback(host, (size_t)(colon - host));
}

static bool cross_site(const struct evr_mon_admit_in *in)
{
	const char *site = in->sec_fetch_site;

	if (site && strcmp(site, "same-origin") && strcmp(site, "none"))
		return true;
	if (in->origin) {
		/* "null": a sandboxed frame, a data: or file: page, a redirect across
		 * sites; none of them is our page. */
		if (!in->host || strncmp(in->origin, "http://", 7) || strcmp(in->origin + 7, in->host))
			return true;
	}
	return false;
}

unsigned evr_mon_admit(const struct evr_mon_admit_in *in, const char **ret_why)
{
	bool loopback_host = in->is_unix || evr_mon_host_is_loopback(in->host, in->port);

	/*
	 * The Host first, on every listener: a browser that a page made resolve its
	 * own name to our address (DNS rebinding) sends that name. On a loopback
	 * address only loopback names can be right; elsewhere any name may be (the
	 * machine's, a proxy's), but then the key is required below.
	 */
	if (!in->is_unix && !loopback_host && (in->listen_loopback || !in->host)) {
		*ret_why = "the Host header is not a loopback name with this monitor's port";
		return 421;
	}
	if (cross_site(in)) {
		*ret_why = "requests from other web sites are refused (Origin, Sec-Fetch-Site)";
		return 403;
	}
	/* Without the key: only our own user, over the Unix socket or from a loopback
	 * peer that named a loopback Host; or everyone, with --no-auth. */
	if (!in->no_auth && !in->key_ok && !(in->local_user == 1 && loopback_host)) {
		*ret_why = NULL;
		return 401;
	}
	if (in->method && !strcmp(in->method, "POST") &&
	    (!in->content_type || strncasecmp(in->content_type, "application/json", 16) ||
	     (in->content_type[16] && in->content_type[16] != ';' && in->content_type[16] != ' '))) {
		*ret_why = "POST bodies are JSON: send Content-Type: application/json";
		return 415;
	}
	*ret_why = NULL;
	return 0;
}

bool evr_mon_from_browser(const struct evr_mon_admit_in *in)
{
	/* A browser always sends its User-Agent, and no page can change it; modern
	 * ones add Fetch Metadata, most add Origin or Referer. Tools (curl, scripts)
	 * send none of these. */
	return in->origin || in->referer || in->sec_fetch_site || in->sec_fetch_mode ||
	       (in->user_agent && !strncmp(in->user_agent, "Mozilla/", 8));
}

bool evr_mon_side_effect_ok(const struct evr_mon_admit_in *in, const char *token_given,
			    const char token[2 * EVR_MON_KEY_BYTES + 1])
{
	uint8_t diff = 0;
	size_t n = 2 * EVR_MON_KEY_BYTES;

	if (in->key_ok || !evr_mon_from_browser(in))
		return true;
	if (!token_given || strlen(token_given) != n)
		return false;
	for (size_t i = 0; i < n; i++)
		diff |= (uint8_t)(token_given[i] ^ token[i]);
	return diff == 0;
}

int evr_mon_unescape(char *s, size_t *ret_len)
{
	char *w = s;
	int bad = 0;

	for (const char *r = s; *r; r++) {
		unsigned char ch = (unsigned char)*r;
		int hi, lo;

		if (ch == '%' && (hi = hexval(r[1])) >= 0 && (lo = hexval(r[2])) >= 0) {
			ch = (unsigned char)(hi << 4 | lo);
			r += 2;
		}
		/* NUL would cut the string short (the route ends early); the other
		 * control bytes have no business in a path or a parameter either. */
		if (ch < 0x20 || ch == 0x7f) {
			bad = -EILSEQ;
			ch = '?';
		}
		*w++ = (char)ch;
	}
	*w = '\0';
	*ret_len = (size_t)(w - s);
	return bad;
}
