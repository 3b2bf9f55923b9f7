// SPDX-License-Identifier: GPL-2.0-or-later
#include "server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "aic100/vfio_user/wire_io.h"

namespace aic100::vfio_user {
namespace {

bool readable(const pollfd &p)
{
	return p.revents & (POLLIN | POLLHUP | POLLERR);
}

}  // namespace

Server::Server(CardBackend &card, const Caps &ours)
	: card_(card), dispatcher_(card, ours), post_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK))
{
	card_.attach({&dispatcher_.dma(), &dispatcher_.irqs(), this});
}

// The card outlives the server in main(): it must not reach this
// connection's tables once they are gone.
Server::~Server()
{
	drop_client();
	card_.attach({});
}

void Server::post(std::function<void()> fn)
{
	{
		const std::lock_guard<std::mutex> hold(post_mu_);
		posted_.push_back(std::move(fn));
	}
	const uint64_t one = 1;
	[[maybe_unused]] const ssize_t n = write(post_fd_.get(), &one, sizeof(one));
}

void Server::run_posted()
{
	uint64_t count;
	[[maybe_unused]] const ssize_t n = read(post_fd_.get(), &count, sizeof(count));
	std::vector<std::function<void()>> fns;
	{
		const std::lock_guard<std::mutex> hold(post_mu_);
		fns.swap(posted_);
	}
	for (auto &fn : fns)
		fn();
}

// The card keeps running with no client (its timers, its NSPs); a client
// is accepted only when none is connected.
void Server::run(int listen_fd, int stop_fd)
{
	for (;;) {
		pollfd p[5] = {{stop_fd, POLLIN, 0},
			       {card_.kick_fd(), POLLIN, 0},
			       {card_.timer_fd(), POLLIN, 0},
			       {post_fd_.get(), POLLIN, 0},
			       {client_.valid() ? client_.get() : listen_fd, POLLIN, 0}};
		if (poll(p, 5, -1) < 0) {
			if (errno == EINTR)
				continue;
			std::perror("aic100-vfio-user: poll");
			break;
		}
		if (readable(p[0]))
			break;
		if (readable(p[1]) || readable(p[2]))
			card_.run_work();
		if (readable(p[3]))
			run_posted();
		if (readable(p[4]))
			client_.valid() ? read_client() : accept_client(listen_fd);
		handle_queued();
		if (client_broken_)
			drop_client();
	}
	drop_client();
}

void Server::accept_client(int listen_fd)
{
	const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
			std::perror("aic100-vfio-user: accept");
		return;
	}
	client_.reset(fd);
	client_broken_ = false;
}

// The client went (EOF, a broken stream, a VERSION refused): its DMA
// regions and eventfds go, the card stays as it is for the next one.
void Server::drop_client()
{
	if (!client_.valid())
		return;
	dispatcher_.disconnect();
	queued_.clear();
	let_go(client_);
	client_broken_ = false;
}

// What a dropped client sent last, so that the drop can be understood.
static void report_broken(const Message &m)
{
	if (m.bytes.size() < sizeof(Header)) {
		std::fprintf(stderr, "aic100-vfio-user: broken stream (short header); client dropped\n");
		return;
	}
	const Header h = load<Header>(m.bytes);
	std::fprintf(stderr,
		     "aic100-vfio-user: malformed message (id %u, command %u, size %u, flags 0x%x, %zu fds); "
		     "client dropped\n",
		     unsigned(h.id), unsigned(h.command), unsigned(h.size), unsigned(h.flags), m.fds.size());
}

void Server::read_client()
{
	Message m;
	const RecvStatus s = recv_message(client_.get(), dispatcher_.limits().max_message, m);
	if (s != RecvStatus::Ok) {
		if (s == RecvStatus::Broken)
			report_broken(m);
		client_broken_ = true;
		return;
	}
	handle(m);
}

// A command gets its reply before anything else goes out: the card's DMA
// messages wait until the reply is sent (QEMU may be waiting for it with
// its lock held, and would never serve them).
void Server::handle(Message &m)
{
	reply_owed_ = true;
	const Reply r = dispatcher_.handle(m.bytes, std::move(m.fds));
	reply_owed_ = false;
	if (r.send && !send_message(client_.get(), r.bytes, r.fds))
		client_broken_ = true;
	if (r.close)
		client_broken_ = true;
}

void Server::handle_queued()
{
	while (!queued_.empty() && client_.valid() && !client_broken_) {
		Message m = std::move(queued_.front());
		queued_.pop_front();
		handle(m);
	}
}

bool Server::wait_readable(int fd, int timeout_ms) const
{
	pollfd p{fd, POLLIN, 0};
	int n;
	do
		n = poll(&p, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	return n > 0;
}

uint64_t Server::dma_max_xfer() const
{
	// Both sides' limits: what the client takes ours to be, and its own.
	return std::min(dispatcher_.sent_caps().max_data_xfer, dispatcher_.client_caps().max_data_xfer);
}

// Sends the card's DMA_READ or DMA_WRITE and waits for its reply; the
// client's commands that come meanwhile are queued for after the card's
// pass, as a vCPU's access waits for the BQL in QEMU.
bool Server::dma_exchange(const std::vector<uint8_t> &request, std::vector<uint8_t> &reply)
{
	if (!client_.valid() || client_broken_ || reply_owed_ || !dispatcher_.negotiated())
		return false;
	if (!send_message(client_.get(), request)) {
		client_broken_ = true;
		return false;
	}
	const Header sent = load<Header>(request);
	for (;;) {
		Message m;
		if (!wait_readable(client_.get(), dma_timeout_ms_) ||
		    recv_message(client_.get(), dispatcher_.limits().max_message, m) != RecvStatus::Ok) {
			client_broken_ = true;
			return false;
		}
		const Header h = load<Header>(m.bytes);
		if ((h.flags & kTypeMask) != kTypeReply) {
			queued_.push_back(std::move(m));
			continue;
		}
		// A reply to anything else: the client and the server disagree
		// on what is outstanding.
		if (h.id != sent.id || h.command != sent.command || !m.fds.empty()) {
			client_broken_ = true;
			return false;
		}
		reply = std::move(m.bytes);
		return true;
	}
}

}  // namespace aic100::vfio_user
