// SPDX-License-Identifier: GPL-2.0-or-later
// A dispatcher over a FakeBackend, and helpers to read its replies.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/eventfd.h>

#include <vector>

#include "aic100/vfio_user/dispatcher.h"
#include "fake_backend.h"
#include "messages.h"

namespace aic100::vfio_user::test {

inline std::vector<UniqueFd> eventfds(size_t n)
{
	std::vector<UniqueFd> fds;
	for (size_t i = 0; i < n; i++)
		fds.emplace_back(eventfd(0, EFD_CLOEXEC));
	return fds;
}

inline bool fd_open(int fd) { return fcntl(fd, F_GETFD) != -1; }

class VfioUserDispatcher : public ::testing::Test {
protected:
	static constexpr Caps kOurs{16, 1u << 20, 4096, 64, false};

	FakeBackend dev;
	Dispatcher d{dev, kOurs};

	Reply send(const std::vector<uint8_t> &msg, std::vector<UniqueFd> fds = {})
	{
		return d.handle(msg, std::move(fds));
	}
	void negotiate(const std::string &json = kQemuCaps)
	{
		const Reply r = send(version_message(json));
		ASSERT_TRUE(r.send);
		ASSERT_EQ(error(r), 0);
		ASSERT_TRUE(d.negotiated());
	}
	static Header header(const Reply &r)
	{
		EXPECT_GE(r.bytes.size(), sizeof(Header));
		return r.bytes.size() >= sizeof(Header) ? load<Header>(r.bytes) : Header{};
	}
	// The errno of a reply that was sent, -1 when nothing was sent.
	static int error(const Reply &r)
	{
		if (!r.send)
			return -1;
		const Header h = header(r);
		EXPECT_EQ(h.size, r.bytes.size());
		EXPECT_EQ(h.flags & kTypeMask, kTypeReply);
		return (h.flags & kError) ? static_cast<int>(h.error) : 0;
	}
	template <class T> static T payload(const Reply &r, size_t off = 0)
	{
		EXPECT_GE(r.bytes.size(), sizeof(Header) + off + sizeof(T));
		return load<T>(r.bytes, sizeof(Header) + off);
	}
	void TearDown() override { EXPECT_EQ(dev.violations, 0); }
};

}  // namespace aic100::vfio_user::test
