// SPDX-License-Identifier: GPL-2.0-or-later
// libFuzzer target for the vfio-user protocol layer (tests/fuzz/README.md,
// fuzz_input.h): messages with fds go through a Dispatcher over the unit
// tests' FakeBackend, and every answer is checked against what a client
// may be sent. Any breach aborts, and so does an fd left open.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <span>
#include <algorithm>
#include <vector>

#include "aic100/vfio_user/dispatcher.h"
#include "aic100/vfio_user/dma_messages.h"
#include "fake_backend.h"
#include "fuzz_input.h"
#include "messages.h"

namespace aic100::vfio_user::fuzz {
namespace {

[[noreturn]] void fail(const char *what)
{
	std::fprintf(stderr, "vfio-user fuzz: %s\n", what);
	std::abort();
}

class Input {
public:
	Input(const uint8_t *data, size_t size) : p_(data), left_(size) {}
	bool empty() const { return left_ == 0; }
	uint64_t take(unsigned bytes)
	{
		uint64_t v = 0;
		for (unsigned i = 0; i < bytes && left_; i++, left_--)
			v |= uint64_t{*p_++} << (8 * i);
		return v;
	}
	std::span<const uint8_t> bytes(size_t n)
	{
		n = std::min(n, left_);
		const std::span<const uint8_t> s(p_, n);
		p_ += n;
		left_ -= n;
		return s;
	}

private:
	const uint8_t *p_;
	size_t left_;
};

int dev_null()
{
	static const int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return fd;
}

// How long a reply QEMU's client takes for this request (proxy.c: the
// request's size, argsz + header for region info, 32 + count for a read).
size_t room_for(const Header &h, std::span<const uint8_t> msg)
{
	const auto p = msg.subspan(sizeof(Header));
	switch (static_cast<Command>(h.command)) {
	case Command::GetRegionInfo:
		if (p.size() >= sizeof(RegionInfo))
			return sizeof(Header) + load<uint32_t>(p);
		break;
	case Command::RegionRead:
		if (p.size() >= sizeof(RegionAccess))
			return sizeof(Header) + sizeof(RegionAccess) + load<RegionAccess>(p).count;
		break;
	default:
		break;
	}
	return msg.size();
}

void check_reply(const Reply &r, std::span<const uint8_t> msg)
{
	if (!r.send) {
		if (!r.fds.empty())
			fail("fds without a reply");
		return;
	}
	if (msg.size() < sizeof(Header) || r.bytes.size() < sizeof(Header))
		fail("a reply to no message, or shorter than a header");
	const Header q = load<Header>(msg), h = load<Header>(r.bytes);
	if (q.flags & kNoReply)
		fail("a reply to a No_reply command");
	if (h.size != r.bytes.size() || h.id != q.id || h.command != q.command || (h.flags & kTypeMask) != kTypeReply)
		fail("a reply header that does not answer its request");
	if ((h.flags & kError) && (h.size != sizeof(Header) || h.error == 0 || !r.fds.empty()))
		fail("an error reply with more than a header, or errno 0");
	if (r.bytes.size() > room_for(q, msg))
		fail("a reply longer than the client's buffer");
}

void run_message(Input &in, uint8_t op, Dispatcher &d)
{
	const unsigned nfds = static_cast<unsigned>(in.take(1) % kMaxFds);
	const size_t len = in.take(2);
	const auto body = in.bytes(len);
	std::vector<uint8_t> msg(body.begin(), body.end());
	if (msg.size() >= sizeof(Header)) {
		Header h = load<Header>(msg);
		if (op & kOpFixSize)
			h.size = static_cast<uint32_t>(msg.size());
		if (op & kOpFixType)
			h.flags &= ~kTypeMask;
		std::memcpy(msg.data(), &h, sizeof(h));
	}
	std::vector<UniqueFd> fds;
	for (unsigned i = 0; i < nfds; i++)
		fds.emplace_back(fcntl(dev_null(), F_DUPFD_CLOEXEC, 0));
	const Reply r = d.handle(msg, std::move(fds));
	check_reply(r, msg);
}

void run_dma_reply(Input &in, uint8_t op)
{
	const DmaLayout layout = (op & kOpQemuLayout) ? DmaLayout::Qemu10 : DmaLayout::Spec;
	const uint32_t count = static_cast<uint32_t>(in.take(1));
	const uint64_t address = in.take(8);
	const auto id = static_cast<uint16_t>(in.take(2));
	const auto body = in.bytes(in.take(2));
	std::vector<uint8_t> out(count);
	const int e = (op & kOpDmaWrite) ? dma_write_reply(body, id, address, count, layout)
					 : dma_read_reply(body, id, address, out, layout);
	if (e < -1 || e >= 4096)
		fail("a DMA reply check outside -1..4095");
	// The requests themselves: the size in the header is the message's.
	const auto req = (op & kOpDmaWrite) ? dma_write_request(id, address, out, layout)
					    : dma_read_request(id, address, count, layout);
	if (load<Header>(req).size != req.size())
		fail("a DMA request whose size is not its length");
}

void run_dma_find(Input &in, uint8_t op, const Dispatcher &d)
{
	const uint64_t address = in.take(8), len = in.take(2);
	const DmaTarget t = d.dma().find(address, len, op & kOpDmaWrite);
	if (t.kind == DmaTarget::Kind::Unmapped ? t.len != 0 : (t.len == 0 || t.len > len))
		fail("a DMA lookup of the wrong length");
	const DmaRegion *r = d.dma().at(address);
	if ((t.kind != DmaTarget::Kind::Unmapped) != (r != nullptr && len != 0))
		fail("a DMA lookup that disagrees with at()");
}

// The fds open from 0 to kFdWindow: none that the input opened may stay
// open after it (fds inherited from the parent are open all along).
constexpr int kFdWindow = 256;

std::vector<bool> open_fds()
{
	std::vector<bool> open(kFdWindow);
	for (int fd = 0; fd < kFdWindow; fd++)
		open[fd] = fcntl(fd, F_GETFD) != -1;
	return open;
}

void check_fds(const std::vector<bool> &before)
{
	const std::vector<bool> after = open_fds();
	for (int fd = 0; fd < kFdWindow; fd++) {
		if (after[fd] && !before[fd]) {
			std::fprintf(stderr, "fd %d is open after the input\n", fd);
			fail("an fd left open after the input");
		}
	}
}

void run(const uint8_t *data, size_t size)
{
	Input in(data, size);
	const uint8_t cfg = static_cast<uint8_t>(in.take(1));
	test::FakeBackend dev;
	if (cfg & kCfgMmapBar2)
		dev.bar2_fd = dev_null();
	Caps ours{16, 1u << 20, 4096, 64, (cfg & kCfgWriteMultiple) != 0};
	{
		Dispatcher d(dev, ours);
		if (cfg & kCfgNegotiate)
			check_reply(d.handle(test::version_message(test::kQemuCaps), {}), test::version_message(test::kQemuCaps));
		while (!in.empty()) {
			const auto op = static_cast<uint8_t>(in.take(1));
			switch (op % 4) {
			case kOpMessage:
				run_message(in, op, d);
				break;
			case kOpDisconnect:
				d.disconnect();
				break;
			case kOpDmaReply:
				run_dma_reply(in, op);
				break;
			default:
				run_dma_find(in, op, d);
			}
			if (dev.violations)
				fail("the dispatcher let a bad access through to the device");
		}
		d.disconnect();
		if (d.dma().size() || dev.violations)
			fail("a disconnect that left DMA regions");
	}
}

}  // namespace
}  // namespace aic100::vfio_user::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	using namespace aic100::vfio_user::fuzz;
	dev_null();
	const std::vector<bool> before = open_fds();
	run(data, size);
	check_fds(before);
	return 0;
}
