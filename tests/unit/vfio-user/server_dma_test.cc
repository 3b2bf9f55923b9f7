// SPDX-License-Identifier: GPL-2.0-or-later
// The card's DMA through the server: into client memory shared with an
// fd (mmapped, memcpy), through DMA_READ/DMA_WRITE messages in QEMU's
// layout where the client shared none, and after DMA_UNMAP not at all.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <sys/mman.h>

#include "aic100/firmware.h"
#include "aic100/regs.h"
#include "test_client.h"

namespace aic100::vfio_user::test {
namespace {

constexpr uint64_t kBhi = regs::kBhiBase;
constexpr uint64_t kGuestAddr = 0x100000;
constexpr uint64_t kMapSize = 64 * 1024;

// A negotiated client with MSI eventfds and bus mastering on.
struct Guest {
	explicit Guest(ServerRig &rig) : c(rig.connect_client())
	{
		c.negotiate();
		efds = give_msi_eventfds(c);
		write32(c, kConfigRegion, 0x04, 0x6);  // memory space, bus master
	}
	// sbl.bin at `addr` over BHI; the card's answer is an MSI on vector 1.
	void bhi_load(uint64_t addr, uint32_t size)
	{
		write32(c, 0, kBhi + regs::BHI_INTVEC, 1);
		write32(c, 0, kBhi + regs::BHI_IMGADDR_LOW, static_cast<uint32_t>(addr));
		write32(c, 0, kBhi + regs::BHI_IMGADDR_HIGH, static_cast<uint32_t>(addr >> 32));
		write32(c, 0, kBhi + regs::BHI_IMGSIZE, size);
		write32(c, 0, kBhi + regs::BHI_IMGTXDB, 1);
	}
	uint32_t bhi_errcode()
	{
		EXPECT_EQ(wait_eventfd(efds[1].get()), 1u);
		return read32(c, 0, kBhi + regs::BHI_ERRCODE);
	}
	// DMA_MAP of `size` bytes of `fd` at kGuestAddr: the reply's errno.
	uint32_t map_ram(int fd, uint64_t size = kMapSize)
	{
		return reply_error(c.request(dma_map_message(kGuestAddr, size), {fd}));
	}
	TestClient c;
	std::vector<UniqueFd> efds;
};

struct Memfd {
	Memfd()
	{
		fd.reset(memfd_create("guest-ram", MFD_CLOEXEC));
		EXPECT_EQ(ftruncate(fd.get(), kMapSize), 0);
		mem = static_cast<uint8_t *>(mmap(nullptr, kMapSize, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0));
	}
	~Memfd() { munmap(mem, kMapSize); }
	UniqueFd fd;
	uint8_t *mem;
};

constexpr uint32_t kBadHeader = static_cast<uint32_t>(fw::Error::BadHeader);
constexpr uint32_t kDmaFault = static_cast<uint32_t>(fw::Error::DmaFault);

// The image (zeros) is read out of the memfd: the header check, not the
// DMA, refuses it.
TEST(VfioUserServerDma, MappedMemfdIsReadByTheCard)
{
	ServerRig rig;
	Guest g(rig);
	Memfd ram;
	ASSERT_EQ(g.map_ram(ram.fd.get()), 0u);
	g.bhi_load(kGuestAddr + 0x1000, 4096);
	EXPECT_EQ(g.bhi_errcode(), kBadHeader);
}

// Behind a vIOMMU QEMU maps page by page, each DMA_MAP with the RAM's fd:
// a server that kept them ran out of fds and lost the client (seen with
// QEMU 11.1.3). Many maps later the card still reads the memory, and
// this process holds no more fds than before.
TEST(VfioUserServerDma, MappedRegionsKeepNoFd)
{
	ServerRig rig;
	Guest g(rig);
	Memfd ram;
	const auto open_fds = [] {
		return std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
				     std::filesystem::directory_iterator{});
	};
	const auto mappings = [] {
		std::ifstream maps("/proc/self/maps");
		return std::count(std::istreambuf_iterator<char>(maps), std::istreambuf_iterator<char>(), '\n');
	};
	const auto before = open_fds();
	const auto mapped_before = mappings();
	constexpr uint64_t kPages = 2048;  // more than the usual RLIMIT_NOFILE of 1024
	for (uint64_t i = 0; i < kPages; i++)
		ASSERT_EQ(reply_error(g.c.request(dma_map_message(kGuestAddr + i * 4096, 4096), {ram.fd.get()})), 0u)
			<< "page " << i;
	EXPECT_LE(open_fds(), before);
	// One mapping of the file for all its pages, not one each (a vIOMMU's
	// page-by-page maps would meet vm.max_map_count).
	EXPECT_LT(mappings() - mapped_before, 16);
	g.bhi_load(kGuestAddr + 0x1000, 4096);
	EXPECT_EQ(g.bhi_errcode(), kBadHeader);
}

// Memory past a file's end would fault in the server, not in the card.
TEST(VfioUserServerDma, DmaMapPastItsFilesEndIsRefused)
{
	ServerRig rig;
	Guest g(rig);
	Memfd ram;
	EXPECT_EQ(g.map_ram(ram.fd.get(), 2 * kMapSize), EINVAL);
	EXPECT_EQ(reply_error(g.c.request(dma_map_message(kGuestAddr, 4096, kDmaRead | kDmaWrite, kMapSize),
					  {ram.fd.get()})),
		  EINVAL);
	EXPECT_EQ(g.map_ram(ram.fd.get()), 0u);
}

TEST(VfioUserServerDma, UnmappedAddressIsADmaFault)
{
	ServerRig rig;
	Guest g(rig);
	g.bhi_load(kGuestAddr, 4096);
	EXPECT_EQ(g.bhi_errcode(), kDmaFault);
}

// As pci_dma_read fails in the glue with bus mastering off.
TEST(VfioUserServerDma, WithoutBusMasterTheCardReachesNothing)
{
	ServerRig rig;
	Guest g(rig);
	Memfd ram;
	ASSERT_EQ(g.map_ram(ram.fd.get()), 0u);
	write32(g.c, kConfigRegion, 0x04, 0x2);
	g.bhi_load(kGuestAddr, 4096);
	EXPECT_EQ(g.bhi_errcode(), kDmaFault);
}

TEST(VfioUserServerDma, CardsDmaWriteLandsInTheMemfd)
{
	ServerRig rig;
	Guest g(rig);
	Memfd ram;
	ASSERT_EQ(g.map_ram(ram.fd.get()), 0u);
	const std::vector<uint8_t> pattern = {1, 2, 3, 4, 5, 6, 7, 8, 9};
	auto status = rig.on_server([&] {
		return rig.card().dma_write(kGuestAddr + 0x2345, pattern.data(), pattern.size());
	});
	EXPECT_EQ(status.get(), DmaStatus::Ok);
	EXPECT_EQ(std::vector<uint8_t>(ram.mem + 0x2345, ram.mem + 0x2345 + pattern.size()), pattern);
}

// QEMU 11.1's answer to a DMA_READ (the spec's layout): the request's
// address and 8-byte count under a reply header, the data from message
// offset 32, size 32 + count.
constexpr size_t kDataAt = sizeof(Header) + sizeof(DmaAccess);

std::vector<uint8_t> answer_dma_read(const Message &req, uint8_t fill)
{
	const Header h = load<Header>(req.bytes);
	const auto count = static_cast<size_t>(load<uint64_t>(req.bytes, sizeof(Header) + 8));
	std::vector<uint8_t> reply(req.bytes.begin(), req.bytes.begin() + kDataAt);
	reply.resize(kDataAt + count, fill);
	Header out{h.id, h.command, static_cast<uint32_t>(reply.size()), kTypeReply, 0};
	std::memcpy(reply.data(), &out, sizeof(out));
	return reply;
}

// QEMU 11.1's answer to a DMA_WRITE: the request's first 32 bytes (the
// address and the count) under a reply header.
std::vector<uint8_t> answer_dma_write(const Message &req)
{
	const Header h = load<Header>(req.bytes);
	std::vector<uint8_t> reply(req.bytes.begin(), req.bytes.begin() + kDataAt);
	const Header out{h.id, h.command, static_cast<uint32_t>(kDataAt), kTypeReply, 0};
	std::memcpy(reply.data(), &out, sizeof(out));
	return reply;
}

TEST(VfioUserServerDma, DmaWithoutFdGoesOutAsDmaReadMessages)
{
	ServerRig rig;
	Guest g(rig);
	ASSERT_EQ(reply_error(g.c.request(dma_map_message(kGuestAddr, kMapSize))), 0u);
	g.bhi_load(kGuestAddr + 0x40, 4096);
	const Message req = g.c.receive();
	ASSERT_EQ(req.bytes.size(), kDataAt);
	const Header h = load<Header>(req.bytes);
	EXPECT_EQ(h.command, static_cast<uint16_t>(Command::DmaRead));
	EXPECT_EQ(h.flags, kTypeCommand);
	EXPECT_EQ(load<uint64_t>(req.bytes, sizeof(Header)), kGuestAddr + 0x40);
	EXPECT_EQ(load<uint64_t>(req.bytes, sizeof(Header) + 8), 4096u);
	g.c.send(answer_dma_read(req, 0));
	EXPECT_EQ(g.bhi_errcode(), kBadHeader);
}

// The data of QEMU 11.1's reply starts at message offset 32: a pattern
// there is what the card reads, byte for byte (read as QEMU 10.x's layout
// it would arrive 4 bytes early).
TEST(VfioUserServerDma, DmaReadMessageDataReachesTheCardUnshifted)
{
	ServerRig rig;
	Guest g(rig);
	ASSERT_EQ(reply_error(g.c.request(dma_map_message(kGuestAddr, kMapSize))), 0u);
	std::vector<uint8_t> got(12);
	auto status = rig.on_server([&] { return rig.card().dma_read(kGuestAddr + 0x10, got.data(), got.size()); });
	const Message req = g.c.receive();
	ASSERT_EQ(req.bytes.size(), kDataAt);
	std::vector<uint8_t> reply = answer_dma_read(req, 0);
	for (size_t i = 0; i < got.size(); i++)
		reply[kDataAt + i] = static_cast<uint8_t>(0xc0 + i);
	g.c.send(reply);
	EXPECT_EQ(status.get(), DmaStatus::Ok);
	for (size_t i = 0; i < got.size(); i++)
		EXPECT_EQ(got[i], 0xc0 + i) << "byte " << i;
}

TEST(VfioUserServerDma, DmaWriteWithoutFdGoesOutAsADmaWriteMessage)
{
	ServerRig rig;
	Guest g(rig);
	ASSERT_EQ(reply_error(g.c.request(dma_map_message(kGuestAddr, kMapSize))), 0u);
	const std::vector<uint8_t> pattern = {0xa1, 0xb2, 0xc3, 0xd4, 0xe5};
	auto status = rig.on_server([&] { return rig.card().dma_write(kGuestAddr + 8, pattern.data(), pattern.size()); });
	const Message req = g.c.receive();
	ASSERT_EQ(req.bytes.size(), kDataAt + pattern.size());
	const Header h = load<Header>(req.bytes);
	EXPECT_EQ(h.command, static_cast<uint16_t>(Command::DmaWrite));
	EXPECT_EQ(load<uint64_t>(req.bytes, sizeof(Header)), kGuestAddr + 8);
	EXPECT_EQ(load<uint64_t>(req.bytes, sizeof(Header) + 8), pattern.size());
	// QEMU 11.1 writes the guest from message offset 32 and answers with
	// the request's first 32 bytes: the address and the count.
	EXPECT_EQ(std::vector<uint8_t>(req.bytes.begin() + kDataAt, req.bytes.end()), pattern);
	g.c.send(answer_dma_write(req));
	EXPECT_EQ(status.get(), DmaStatus::Ok);
}

TEST(VfioUserServerDma, DmaErrorReplyFailsTheCardsDma)
{
	ServerRig rig;
	Guest g(rig);
	ASSERT_EQ(reply_error(g.c.request(dma_map_message(kGuestAddr, kMapSize))), 0u);
	g.bhi_load(kGuestAddr, 4096);
	const Message req = g.c.receive();
	ASSERT_FALSE(req.bytes.empty());
	std::vector<uint8_t> err = message(Command::DmaRead, {}, load<Header>(req.bytes).id, kTypeReply | kError);
	const uint32_t efault = EFAULT;
	std::memcpy(err.data() + offsetof(Header, error), &efault, 4);
	g.c.send(err);
	EXPECT_EQ(g.bhi_errcode(), kDmaFault);
}

// A command that comes while the card waits for its DMA_READ's reply is
// answered after the card's pass, as a vCPU's access waits for the BQL:
// its read of BHI_ERRCODE already sees the pass's outcome.
TEST(VfioUserServerDma, CommandDuringTheCardsDmaIsAnsweredAfterIt)
{
	ServerRig rig;
	Guest g(rig);
	ASSERT_EQ(reply_error(g.c.request(dma_map_message(kGuestAddr, kMapSize))), 0u);
	g.bhi_load(kGuestAddr, 4096);
	const Message req = g.c.receive();
	ASSERT_EQ(req.bytes.size(), kDataAt);
	g.c.send(region_read_message(0, kBhi + regs::BHI_ERRCODE, 4));
	g.c.send(answer_dma_read(req, 0));
	const Message r = g.c.receive();
	ASSERT_EQ(reply_error(r), 0u);
	EXPECT_EQ(load<uint16_t>(r.bytes, offsetof(Header, command)), static_cast<uint16_t>(Command::RegionRead));
	EXPECT_EQ(load<uint32_t>(r.bytes, sizeof(Header) + sizeof(RegionAccess)), kBadHeader);
	EXPECT_EQ(wait_eventfd(g.efds[1].get()), 1u);
}

TEST(VfioUserServerDma, DmaUnmapTakesTheMemoryAway)
{
	ServerRig rig;
	Guest g(rig);
	Memfd ram;
	ASSERT_EQ(g.map_ram(ram.fd.get()), 0u);
	const uint8_t byte = 0x5a;
	EXPECT_EQ(rig.on_server([&] { return rig.card().dma_write(kGuestAddr, &byte, 1); }).get(), DmaStatus::Ok);
	const Message r = g.c.request(dma_unmap_message(kGuestAddr, kMapSize));
	ASSERT_EQ(reply_error(r), 0u);
	EXPECT_EQ(rig.on_server([&] { return rig.server().dispatcher().dma().size(); }).get(), 0u);
	EXPECT_EQ(rig.on_server([&] { return rig.card().dma_write(kGuestAddr, &byte, 1); }).get(), DmaStatus::Error);
	EXPECT_EQ(ram.mem[0], byte);
}

// The client's transfer size bounds each message: 1 MiB + 4 KiB of DMA
// take two DMA_WRITEs.
TEST(VfioUserServerDma, LargeDmaIsSplitAtTheTransferSize)
{
	ServerRig rig;
	Guest g(rig);
	ASSERT_EQ(reply_error(g.c.request(dma_map_message(0, 4u << 20))), 0u);
	std::vector<uint8_t> data((1u << 20) + 4096, 0x77);
	auto status = rig.on_server([&] { return rig.card().dma_write(0, data.data(), data.size()); });
	for (const uint64_t want : {uint64_t{1} << 20, uint64_t{4096}}) {
		const Message req = g.c.receive();
		ASSERT_EQ(req.bytes.size(), kDataAt + want);
		g.c.send(answer_dma_write(req));
	}
	EXPECT_EQ(status.get(), DmaStatus::Ok);
}

// A client that goes with memory mapped takes it along: the server
// unmaps it, and the card's DMA there fails until the next client maps it.
TEST(VfioUserServerDma, ClientThatGoesTakesItsMemoryAlong)
{
	ServerRig rig;
	Memfd ram;
	{
		Guest g(rig);
		ASSERT_EQ(g.map_ram(ram.fd.get()), 0u);
		g.c.close();
	}
	TestClient next = rig.connect_client();
	next.negotiate();  // answered only once the first client is gone
	EXPECT_EQ(rig.on_server([&] { return rig.server().dispatcher().dma().size(); }).get(), 0u);
	const uint8_t byte = 1;
	EXPECT_EQ(rig.on_server([&] { return rig.card().dma_write(kGuestAddr, &byte, 1); }).get(), DmaStatus::Error);
}

}  // namespace
}  // namespace aic100::vfio_user::test
