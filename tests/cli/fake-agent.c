// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A fake agent, as a hostile local user would plant one: it listens on the given
 * path and answers Hello as if it were process PID (argv "FAKE-AGENT"), and
 * every other request with an Error whose message starts with "FAKE-AGENT".
 * A consumer that shows any of that trusted it.
 *
 * Usage: evr-fake-agent SOCKET PID
 * Prints "listening" once the socket accepts connections; runs until killed.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <evring/framing.h>

#define MAX_CONNS 64

static int reply(int fd, const Evr__Request *req, uint32_t pid)
{
	Evr__Reply r = EVR__REPLY__INIT;
	Evr__HelloReply hr = EVR__HELLO_REPLY__INIT;
	Evr__ProcessInfo pi = EVR__PROCESS_INFO__INIT;
	Evr__Error e = EVR__ERROR__INIT;
	char *argv[] = { "FAKE-AGENT" };
	uint8_t *frame;
	size_t len;
	int err;

	if (req->body_case == EVR__REQUEST__BODY_HELLO) {
		pi.pid = pid;
		pi.n_argv = 1;
		pi.argv = argv;
		pi.exe = "FAKE-AGENT";
		pi.has_nr_cpus = true;
		pi.nr_cpus = 1;
		hr.protocol_version = 1;
		hr.process = &pi;
		r.body_case = EVR__REPLY__BODY_HELLO;
		r.hello = &hr;
	} else {
		e.code = EACCES;
		e.message = "FAKE-AGENT: this message comes from a fake agent";
		r.body_case = EVR__REPLY__BODY_ERROR;
		r.error = &e;
	}
	err = evr_frame_build(&r.base, &frame, &len);
	if (err < 0)
		return err;
	err = evr_frame_send(fd, frame, len, NULL, 0, 1000);
	free(frame);
	return err;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct pollfd p[1 + MAX_CONNS];
	struct evr_frame_rx rx[MAX_CONNS];
	uint32_t pid;
	int lfd;
	nfds_t n = 1;

	if (argc != 3 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: %s SOCKET PID\n", argv[0]);
		return 2;
	}
	pid = (uint32_t)strtoul(argv[2], NULL, 10);
	signal(SIGPIPE, SIG_IGN);
	memcpy(sa.sun_path, argv[1], strlen(argv[1]) + 1);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	(void)unlink(argv[1]);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    chmod(argv[1], 0777) < 0 || listen(lfd, 16) < 0) {
		fprintf(stderr, "fake agent: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	p[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
	for (;;) {
		if (poll(p, n, -1) < 0)
			continue;
		for (nfds_t i = 1; i < n; i++) {
			const uint8_t *payload;
			uint32_t len;
			int ret;

			if (!p[i].revents)
				continue;
			ret = evr_frame_rx_read(&rx[i - 1], p[i].fd);
			while (ret > 0 && evr_frame_rx_next(&rx[i - 1], &payload, &len) == 1) {
				Evr__Request *req;

				if (evr_pb_unpack_request(payload, len, &req) == 0) {
					(void)reply(p[i].fd, req, pid);
					evr_pb_request_free(req);
				}
				evr_frame_rx_pop(&rx[i - 1]);
			}
			if (ret == 0 || (ret < 0 && ret != -EAGAIN)) {
				close(p[i].fd);
				evr_frame_rx_fini(&rx[i - 1]);
				p[i] = p[n - 1];
				rx[i - 1] = rx[n - 2];
				n--;
				i--;
			}
		}
		if ((p[0].revents & POLLIN) && n < 1 + MAX_CONNS) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

			if (fd >= 0) {
				evr_frame_rx_init(&rx[n - 1]);
				p[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
			}
		}
	}
}
