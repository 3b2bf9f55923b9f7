// SPDX-License-Identifier: GPL-2.0-or-later
#include "socket_io.h"

#include <sys/socket.h>
#include <sys/types.h>

#include <cerrno>
#include <cstring>

#include "aic100/vfio_user.h"
#include "aic100/vfio_user/wire_io.h"

namespace aic100::vfio_user {
namespace {

// Takes the fds of every SCM_RIGHTS in `msg` into `fds` (so they are
// closed whatever happens next); false when a control message of another
// kind came.
bool take_fds(msghdr &msg, std::vector<UniqueFd> &fds)
{
	bool ok = true;
	for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
			ok = false;
			continue;
		}
		const size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;
			std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			fds.emplace_back(fd);
		}
	}
	return ok;
}

// Reads exactly `len` bytes; fds may come only with the message's first
// bytes (`first`), any others break the stream. 0 bytes at a message's
// start is EOF.
RecvStatus recv_exact(int fd, uint8_t *buf, size_t len, bool first, std::vector<UniqueFd> &fds)
{
	alignas(cmsghdr) char control[CMSG_SPACE(kRecvFdRoom * sizeof(int))];
	size_t got = 0;
	while (got < len) {
		iovec iov{buf + got, len - got};
		msghdr msg{};
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = control;
		msg.msg_controllen = sizeof(control);
		const ssize_t n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 && first && got == 0 ? RecvStatus::Eof : RecvStatus::Broken;
		std::vector<UniqueFd> came;
		const bool clean = take_fds(msg, came);
		if (!clean || (msg.msg_flags & MSG_CTRUNC) || (!came.empty() && !(first && got == 0)))
			return RecvStatus::Broken;
		for (UniqueFd &f : came)
			fds.push_back(std::move(f));
		got += static_cast<size_t>(n);
	}
	return RecvStatus::Ok;
}

}  // namespace

RecvStatus recv_message(int fd, uint64_t max_message, Message &out)
{
	out.bytes.assign(sizeof(Header), 0);
	out.fds.clear();
	if (const RecvStatus s = recv_exact(fd, out.bytes.data(), sizeof(Header), true, out.fds); s != RecvStatus::Ok)
		return s;
	const Header h = load<Header>(out.bytes);
	// Checked before the body is allocated: a size the server would never
	// take, or one too small to hold the header, loses the stream.
	if (h.size < sizeof(Header) || h.size > max_message)
		return RecvStatus::Broken;
	out.bytes.resize(h.size);
	if (h.size == sizeof(Header))
		return RecvStatus::Ok;
	return recv_exact(fd, out.bytes.data() + sizeof(Header), h.size - sizeof(Header), false, out.fds);
}

bool send_message(int fd, std::span<const uint8_t> bytes, std::span<const int> fds)
{
	alignas(cmsghdr) char control[CMSG_SPACE(kRecvFdRoom * sizeof(int))] = {};
	if (fds.size() > kRecvFdRoom)
		return false;
	iovec iov{const_cast<uint8_t *>(bytes.data()), bytes.size()};
	msghdr msg{};
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (!fds.empty()) {
		msg.msg_control = control;
		msg.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
		cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
		std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
	}
	ssize_t n;
	do
		n = sendmsg(fd, &msg, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	size_t sent = n < 0 ? 0 : static_cast<size_t>(n);
	if (n < 0)
		return false;
	while (sent < bytes.size()) {
		n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		sent += static_cast<size_t>(n);
	}
	return true;
}

void let_go(UniqueFd &fd)
{
	if (!fd.valid())
		return;
	shutdown(fd.get(), SHUT_RD);  // the peer's sends fail from here on
	for (;;) {
		uint8_t buf[4096];
		alignas(cmsghdr) char control[CMSG_SPACE(kRecvFdRoom * sizeof(int))] = {};
		iovec iov{buf, sizeof(buf)};
		msghdr msg{};
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = control;
		msg.msg_controllen = sizeof(control);
		const ssize_t n = recvmsg(fd.get(), &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n <= 0)
			break;
		std::vector<UniqueFd> fds;  // closed at once
		take_fds(msg, fds);
	}
	fd.reset();
}

}  // namespace aic100::vfio_user
