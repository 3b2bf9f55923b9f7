// SPDX-License-Identifier: GPL-2.0-or-later
// aic100-vfio-user: the virtual card behind a vfio-user socket, for a
// stock QEMU's -device vfio-user-pci,socket=PATH (docs/vfio-user.md).
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "card_backend.h"
#include "options.h"
#include "sandbox.h"
#include "server.h"

using namespace aic100;
using namespace aic100::vfio_user;

namespace {

int fail(const std::string &why)
{
	std::fprintf(stderr, "aic100-vfio-user: %s\n", why.c_str());
	return 1;
}

// A socket file left by a server that is gone is replaced; one a server
// still answers on, or a file that is no socket, is not.
bool clear_stale_socket(const sockaddr_un &addr, std::string &why)
{
	struct stat st;
	if (lstat(addr.sun_path, &st) != 0) {
		if (errno == ENOENT)
			return true;
		why = std::string(addr.sun_path) + ": " + std::strerror(errno);
		return false;
	}
	if (!S_ISSOCK(st.st_mode)) {
		why = std::string(addr.sun_path) + ": exists and is not a socket";
		return false;
	}
	UniqueFd probe(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	if (connect(probe.get(), reinterpret_cast<const sockaddr *>(&addr), sizeof(addr)) == 0) {
		why = std::string(addr.sun_path) + ": another server is listening on it";
		return false;
	}
	unlink(addr.sun_path);
	return true;
}

int listen_on(const std::string &path, std::string &why)
{
	sockaddr_un addr{};
	addr.sun_family = AF_UNIX;
	if (path.size() >= sizeof(addr.sun_path)) {
		why = path + ": socket path longer than " + std::to_string(sizeof(addr.sun_path) - 1) + " bytes";
		return -1;
	}
	std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
	if (!clear_stale_socket(addr, why))
		return -1;
	UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	if (!fd.valid() || bind(fd.get(), reinterpret_cast<const sockaddr *>(&addr), sizeof(addr)) != 0 ||
	    listen(fd.get(), 1) != 0) {
		why = path + ": " + std::strerror(errno);
		return -1;
	}
	return fd.release();
}

// SIGINT and SIGTERM end the loop through a signalfd: the client is let go
// and the socket file removed.
int stop_signals()
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, nullptr);
	signal(SIGPIPE, SIG_IGN);
	return signalfd(-1, &set, SFD_CLOEXEC);
}

// Every DMA_MAP brings an fd, closed once mapped; a burst of them behind a
// vIOMMU still needs room, and the hard limit is ours to take.
void raise_fd_limit()
{
	rlimit r{};
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(RLIMIT_NOFILE, &r);
	}
}

// After the socket, the card's fds and the server's exist, nothing new is
// opened: the user and the allow-list can go on.
bool confine(const ServerOptions &opts, std::string &why)
{
	if (!opts.user.empty() && !drop_to_user(opts.user, why))
		return false;
	if (opts.user.empty() && geteuid() == 0)
		std::fprintf(stderr, "aic100-vfio-user: serving as root; --user NAME would not\n");
	return !opts.sandbox || enter_sandbox(why);
}

std::string confinement(const ServerOptions &opts)
{
	const std::string user = opts.user.empty() ? "" : "user " + opts.user;
	const std::string sandbox = opts.sandbox ? "sandbox on" : "sandbox off";
	return " (" + (user.empty() ? sandbox : user + ", " + sandbox) + ")";
}

}  // namespace

int main(int argc, char **argv)
{
	ServerOptions opts;
	std::string why;
	if (!parse_options(std::vector<std::string>(argv + 1, argv + argc), opts, why))
		return fail(why);
	if (opts.help) {
		std::fputs(kUsage, stdout);
		return 0;
	}
	raise_fd_limit();
	UniqueFd stop(stop_signals());
	UniqueFd listener(listen_on(opts.socket_path, why));
	if (!listener.valid())
		return fail(why);
	{
		CardBackend card(opts.card);
		card.set_dma_layout(opts.qemu10_dma_layout ? DmaLayout::Qemu10 : DmaLayout::Spec);
		Server server(card);
		if (!confine(opts, why)) {
			unlink(opts.socket_path.c_str());
			return fail(why);
		}
		std::fprintf(stderr, "aic100-vfio-user: %s 0x%04x on %s%s\n", family_config(opts.card.family).name,
			     opts.card.device_id, opts.socket_path.c_str(), confinement(opts).c_str());
		server.run(listener.get(), stop.get());
	}
	unlink(opts.socket_path.c_str());
	return 0;
}
