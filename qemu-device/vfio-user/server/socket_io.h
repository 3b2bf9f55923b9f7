// SPDX-License-Identifier: GPL-2.0-or-later
// Whole vfio-user messages on a connected UNIX stream socket: the header
// first, with the message's fds (SCM_RIGHTS), then the body, whose size is
// checked before anything is allocated for it; and one sendmsg per
// message out.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "aic100/vfio_user/unique_fd.h"

namespace aic100::vfio_user {

// More fds than any client may send in one message (QEMU: 16); a message
// with more is still received whole, so the dispatcher can refuse it.
inline constexpr size_t kRecvFdRoom = 64;

struct Message {
	std::vector<uint8_t> bytes;
	std::vector<UniqueFd> fds;
};

enum class RecvStatus {
	Ok,
	Eof,     // the peer closed before a new message began
	Broken,  // a short message, fds after the first bytes, truncated fds, a bad size, an error
};

// One message into `out`; `max_message` bounds its size, header included.
RecvStatus recv_message(int fd, uint64_t max_message, Message &out);

// `bytes` with `fds` (on its first bytes) in one sendmsg, continued with
// plain sends only if the kernel took part of it; false when the peer is
// gone (no SIGPIPE).
bool send_message(int fd, std::span<const uint8_t> bytes, std::span<const int> fds = {});

// Closes a client's socket so that the client reads EOF: Linux fails the
// peer's next read with ECONNRESET when a UNIX stream socket closes with
// data unread, and QEMU 11.1's client aborts on that (docs/qemu-bugs.md,
// 0005). The peer's sends are stopped first (EPIPE), then what it had
// sent is read and dropped, its fds closed.
void let_go(UniqueFd &fd);

}  // namespace aic100::vfio_user
