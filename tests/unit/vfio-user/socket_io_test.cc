// SPDX-License-Identifier: GPL-2.0-or-later
// Framing on the socket: a message and its fds arrive whole; fds after a
// message's first bytes, a size the server would never take and a message
// cut short break the stream; EOF between messages is a clean end.
#include <gtest/gtest.h>

#include <sys/eventfd.h>
#include <sys/socket.h>

#include "messages.h"
#include "socket_io.h"

namespace aic100::vfio_user::test {
namespace {

struct Pair {
	Pair()
	{
		int sv[2];
		EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
		a.reset(sv[0]);
		b.reset(sv[1]);
	}
	UniqueFd a, b;
};

TEST(VfioUserSocketIo, MessageWithFdsArrivesWhole)
{
	Pair p;
	UniqueFd e1(eventfd(0, EFD_CLOEXEC)), e2(eventfd(0, EFD_CLOEXEC));
	const std::vector<uint8_t> msg = set_irqs_message(kIrqDataEventfd | kIrqActionTrigger, kMsiIrq, 0, 2);
	const int fds[] = {e1.get(), e2.get()};
	ASSERT_TRUE(send_message(p.a.get(), msg, fds));
	Message m;
	ASSERT_EQ(recv_message(p.b.get(), 4096, m), RecvStatus::Ok);
	EXPECT_EQ(m.bytes, msg);
	ASSERT_EQ(m.fds.size(), 2u);
	const uint64_t one = 1;
	ASSERT_EQ(write(m.fds[1].get(), &one, 8), 8);
	uint64_t got = 0;
	EXPECT_EQ(read(e2.get(), &got, 8), 8);  // the same eventfd
	EXPECT_EQ(got, 1u);
}

TEST(VfioUserSocketIo, FdsAfterTheFirstBytesBreakTheStream)
{
	Pair p;
	const std::vector<uint8_t> msg = region_write_message(0, 0, {1, 2, 3, 4});
	ASSERT_TRUE(send_message(p.a.get(), std::span(msg).first(sizeof(Header))));
	UniqueFd e(eventfd(0, EFD_CLOEXEC));
	const int fds[] = {e.get()};
	ASSERT_TRUE(send_message(p.a.get(), std::span(msg).subspan(sizeof(Header)), fds));
	Message m;
	EXPECT_EQ(recv_message(p.b.get(), 4096, m), RecvStatus::Broken);
}

// More fds than the room kept for them: the kernel truncates them
// (MSG_CTRUNC), and the message can no longer be trusted.
TEST(VfioUserSocketIo, TruncatedFdsBreakTheStream)
{
	Pair p;
	UniqueFd e(eventfd(0, EFD_CLOEXEC));
	const std::vector<int> fds(kRecvFdRoom + 6, e.get());
	const std::vector<uint8_t> msg = set_irqs_message(kIrqDataEventfd | kIrqActionTrigger, kMsiIrq, 0, 1);
	ASSERT_TRUE(send_message(p.a.get(), msg, std::span<const int>(fds).first(kRecvFdRoom)));  // fits
	Message m;
	ASSERT_EQ(recv_message(p.b.get(), 4096, m), RecvStatus::Ok);
	EXPECT_EQ(m.fds.size(), kRecvFdRoom);
	// send_message itself refuses more than the room, so go around it.
	alignas(cmsghdr) char control[CMSG_SPACE((kRecvFdRoom + 6) * sizeof(int))] = {};
	iovec iov{const_cast<uint8_t *>(msg.data()), msg.size()};
	msghdr mh{};
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = control;
	mh.msg_controllen = sizeof(control);
	cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
	std::memcpy(CMSG_DATA(c), fds.data(), fds.size() * sizeof(int));
	ASSERT_EQ(sendmsg(p.a.get(), &mh, 0), static_cast<ssize_t>(msg.size()));
	EXPECT_EQ(recv_message(p.b.get(), 4096, m), RecvStatus::Broken);
}

TEST(VfioUserSocketIo, SizeAboveTheLimitIsRefusedBeforeTheBody)
{
	Pair p;
	std::vector<uint8_t> msg = message(Command::RegionWrite, {});
	const uint32_t size = 1u << 30;
	std::memcpy(msg.data() + offsetof(Header, size), &size, 4);
	ASSERT_TRUE(send_message(p.a.get(), msg));
	Message m;
	EXPECT_EQ(recv_message(p.b.get(), 1u << 20, m), RecvStatus::Broken);
	EXPECT_LE(m.bytes.capacity(), 4096u);  // nothing sized by the claim
}

TEST(VfioUserSocketIo, SizeBelowTheHeaderBreaksTheStream)
{
	Pair p;
	std::vector<uint8_t> msg = message(Command::DeviceReset, {});
	const uint32_t size = 8;
	std::memcpy(msg.data() + offsetof(Header, size), &size, 4);
	ASSERT_TRUE(send_message(p.a.get(), msg));
	Message m;
	EXPECT_EQ(recv_message(p.b.get(), 4096, m), RecvStatus::Broken);
}

TEST(VfioUserSocketIo, EofBetweenMessagesIsEof)
{
	Pair p;
	p.a.reset();
	Message m;
	EXPECT_EQ(recv_message(p.b.get(), 4096, m), RecvStatus::Eof);
}

TEST(VfioUserSocketIo, EofInsideAMessageBreaksTheStream)
{
	Pair p;
	const std::vector<uint8_t> msg = region_write_message(0, 0, {1, 2, 3, 4});
	ASSERT_TRUE(send_message(p.a.get(), std::span(msg).first(msg.size() - 1)));
	p.a.reset();
	Message m;
	EXPECT_EQ(recv_message(p.b.get(), 4096, m), RecvStatus::Broken);
}

TEST(VfioUserSocketIo, SendToAClosedPeerFailsWithoutSigpipe)
{
	Pair p;
	p.b.reset();
	const std::vector<uint8_t> msg = message(Command::DeviceReset, {});
	EXPECT_FALSE(send_message(p.a.get(), msg));
}

// What a client (a) reads after the server (b) went with a's request
// unread: -errno, or the byte count.
ssize_t read_after_server_went(Pair &p, bool let_go_first)
{
	const std::vector<uint8_t> msg = region_write_message(2, 0, {1, 2, 3, 4});
	UniqueFd ev(eventfd(0, EFD_CLOEXEC));
	const int fds[] = {ev.get()};
	EXPECT_TRUE(send_message(p.a.get(), msg, fds));
	if (let_go_first)
		let_go(p.b);
	else
		p.b.reset();
	uint8_t buf[16];
	const ssize_t n = read(p.a.get(), buf, sizeof(buf));
	return n < 0 ? -errno : n;
}

// The kernel's rule that let_go works around: a plain close with data
// unread resets the peer.
TEST(VfioUserSocketIo, ClosingWithARequestUnreadResetsTheClient)
{
	Pair p;
	EXPECT_EQ(read_after_server_went(p, false), -ECONNRESET);
}

TEST(VfioUserSocketIo, LettingAClientGoGivesItEof)
{
	Pair p;
	EXPECT_EQ(read_after_server_went(p, true), 0);
	const std::vector<uint8_t> msg = message(Command::DeviceReset, {});
	EXPECT_FALSE(send_message(p.a.get(), msg));  // EPIPE, no SIGPIPE
	EXPECT_FALSE(p.b.valid());
}

}  // namespace
}  // namespace aic100::vfio_user::test
