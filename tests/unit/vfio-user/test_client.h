// SPDX-License-Identifier: GPL-2.0-or-later
// The real aic100-vfio-user loop on a thread of its own, listening in a
// temporary directory, and a client that speaks to it as QEMU's would:
// commands with fds, replies awaited with a timeout (never a fixed sleep),
// and the server's own DMA_READ/DMA_WRITE answered in QEMU's layout.
#pragma once

#include <gtest/gtest.h>

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "card_backend.h"
#include "messages.h"
#include "server.h"
#include "socket_io.h"

namespace aic100::vfio_user::test {

// Long enough for a loaded 2-core machine; only a failing test waits it out.
inline constexpr int kWaitMs = 20'000;

inline bool wait_readable(int fd, int timeout_ms = kWaitMs)
{
	pollfd p{fd, POLLIN, 0};
	return poll(&p, 1, timeout_ms) == 1;
}

class TestClient {
public:
	explicit TestClient(int fd) : fd_(fd) {}

	int fd() const { return fd_.get(); }
	void close() { fd_.reset(); }

	void send(const std::vector<uint8_t> &msg, const std::vector<int> &fds = {})
	{
		ASSERT_TRUE(send_message(fd_.get(), msg, fds));
	}
	// The next message from the server; an empty one when none came or
	// the server closed the socket.
	Message receive(int timeout_ms = kWaitMs)
	{
		Message m;
		if (!wait_readable(fd_.get(), timeout_ms) ||
		    recv_message(fd_.get(), 64u << 20, m) != RecvStatus::Ok)
			m.bytes.clear();
		return m;
	}
	// A command and its reply.
	Message request(const std::vector<uint8_t> &msg, const std::vector<int> &fds = {})
	{
		send(msg, fds);
		return receive();
	}
	// True when the server closed the connection (EOF within the wait).
	bool closed_by_server()
	{
		if (!wait_readable(fd_.get()))
			return false;
		char c;
		return recv(fd_.get(), &c, 1, MSG_DONTWAIT) == 0;
	}
	void negotiate()
	{
		const Message r = request(version_message(kQemuCaps));
		ASSERT_GE(r.bytes.size(), sizeof(Header) + sizeof(Version));
		ASSERT_EQ(load<Header>(r.bytes).flags & kError, 0u);
	}

private:
	UniqueFd fd_;
};

inline uint32_t reply_error(const Message &m)
{
	if (m.bytes.size() < sizeof(Header))
		return ~0u;
	const Header h = load<Header>(m.bytes);
	return (h.flags & kError) ? h.error : 0;
}

// A card in a server loop on a socket in a fresh directory.
class ServerRig {
public:
	explicit ServerRig(DeviceConfig cfg = pbl_config()) : card_(cfg), server_(card_)
	{
		char tmpl[] = "/tmp/aic100-vfio-user-test.XXXXXX";
		dir_ = mkdtemp(tmpl);
		path_ = dir_ + "/card.sock";
		sockaddr_un addr{};
		addr.sun_family = AF_UNIX;
		std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path_.c_str());
		listen_.reset(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
		bind(listen_.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr));
		listen(listen_.get(), 1);
		thread_ = std::thread([this] { server_.run(listen_.get(), stop_.get()); });
	}
	~ServerRig()
	{
		const uint64_t one = 1;
		[[maybe_unused]] ssize_t n = write(stop_.get(), &one, sizeof(one));
		thread_.join();
		unlink(path_.c_str());
		rmdir(dir_.c_str());
	}

	// The card as the glue's defaults make it, in PBL (the BHI load is the
	// simplest way to make it DMA and raise an MSI), with a small DDR.
	static DeviceConfig pbl_config()
	{
		DeviceConfig c;
		c.ddr_size = 64ull << 20;
		c.nsp_count = 1;
		return c;
	}
	// The same for an AIC200 (device 0xa110, MSI-X, BAR0/BAR1 32-bit).
	static DeviceConfig aic200_pbl_config()
	{
		DeviceConfig c = pbl_config();
		c.family = Family::Aic200;
		c.device_id = 0xa110;
		return c;
	}

	TestClient connect_client()
	{
		sockaddr_un addr{};
		addr.sun_family = AF_UNIX;
		std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path_.c_str());
		const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)), 0);
		return TestClient(fd);
	}
	// Runs `fn` on the server's thread; its result once it has run.
	template <class Fn> std::future<std::invoke_result_t<Fn>> on_server(Fn fn)
	{
		auto task = std::make_shared<std::packaged_task<std::invoke_result_t<Fn>()>>(std::move(fn));
		server_.post([task] { (*task)(); });
		return task->get_future();
	}

	CardBackend &card() { return card_; }
	Server &server() { return server_; }

private:
	CardBackend card_;
	Server server_;
	UniqueFd listen_;
	UniqueFd stop_{eventfd(0, EFD_CLOEXEC)};
	std::string dir_, path_;
	std::thread thread_;
};

// Client-side helpers on a negotiated connection.
inline uint32_t read32(TestClient &c, uint32_t region, uint64_t offset)
{
	const Message r = c.request(region_read_message(region, offset, 4));
	EXPECT_EQ(reply_error(r), 0u);
	if (r.bytes.size() != sizeof(Header) + sizeof(RegionAccess) + 4)
		return ~0u;
	return load<uint32_t>(r.bytes, sizeof(Header) + sizeof(RegionAccess));
}

inline void write32(TestClient &c, uint32_t region, uint64_t offset, uint32_t value)
{
	std::vector<uint8_t> data(4);
	std::memcpy(data.data(), &value, 4);
	const Message r = c.request(region_write_message(region, offset, data));
	EXPECT_EQ(reply_error(r), 0u);
}

// 32 MSI eventfds in two SET_IRQS of 16, as QEMU sends them.
inline std::vector<UniqueFd> give_msi_eventfds(TestClient &c, uint32_t index = kMsiIrq)
{
	std::vector<UniqueFd> efds;
	for (int i = 0; i < 32; i++)
		efds.emplace_back(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	for (uint32_t start = 0; start < 32; start += 16) {
		std::vector<int> fds;
		for (uint32_t i = start; i < start + 16; i++)
			fds.push_back(efds[i].get());
		const Message r = c.request(set_irqs_message(kIrqDataEventfd | kIrqActionTrigger, index, start, 16), fds);
		EXPECT_EQ(reply_error(r), 0u);
	}
	return efds;
}

// The eventfd's count once it is signalled; 0 when it is not in time.
inline uint64_t wait_eventfd(int fd, int timeout_ms = kWaitMs)
{
	uint64_t n = 0;
	if (wait_readable(fd, timeout_ms) && read(fd, &n, sizeof(n)) != sizeof(n))
		n = 0;
	return n;
}

}  // namespace aic100::vfio_user::test
