// SPDX-License-Identifier: GPL-2.0-or-later
// The aic100-vfio-user loop end to end on a socket: bring-up as QEMU's
// client does it, config space, BAR accesses into the device core, MSI
// through eventfds, broken clients and the next client.
#include <gtest/gtest.h>

#include <fcntl.h>

#include "aic100/firmware.h"
#include "aic100/regs.h"
#include "test_client.h"

namespace aic100::vfio_user::test {
namespace {

constexpr uint64_t kBhi = regs::kBhiBase;

TEST(VfioUserServer, NegotiatesVersionWithQemusCapabilities)
{
	ServerRig rig;
	TestClient c = rig.connect_client();
	const Message r = c.request(version_message(kQemuCaps));
	ASSERT_EQ(reply_error(r), 0u);
	const Version v = load<Version>(r.bytes, sizeof(Header));
	EXPECT_EQ(v.major, 0);
	const std::string json(reinterpret_cast<const char *>(r.bytes.data()) + sizeof(Header) + sizeof(Version));
	EXPECT_NE(json.find("\"max_msg_fds\":16"), std::string::npos) << json;
	EXPECT_NE(json.find("\"pgsizes\":4096"), std::string::npos) << json;
	EXPECT_EQ(r.bytes.back(), 0);
}

TEST(VfioUserServer, DeviceInfoHasNinePciRegionsAndFiveIrqIndices)
{
	ServerRig rig;
	TestClient c = rig.connect_client();
	c.negotiate();
	const Message r = c.request(message(Command::DeviceGetInfo, bytes_of(DeviceInfo{sizeof(DeviceInfo), 0, 0, 0})));
	ASSERT_EQ(reply_error(r), 0u);
	const DeviceInfo info = load<DeviceInfo>(r.bytes, sizeof(Header));
	EXPECT_EQ(info.flags, kDeviceReset | kDevicePci);
	EXPECT_EQ(info.num_regions, kPciRegions);
	EXPECT_EQ(info.num_irqs, kPciIrqs);
}

// The glue's BARs: 4 KiB, 2 MiB and bar4-size, 64-bit, so the upper halves
// (regions 1, 3, 5) have size 0; config space is PCI Express's 4 KiB.
TEST(VfioUserServer, RegionInfoGivesTheGluesBarSizes)
{
	ServerRig rig;
	TestClient c = rig.connect_client();
	c.negotiate();
	const uint64_t want[kPciRegions] = {4096, 0, 2u << 20, 0, 64 * 1024, 0, 0, 4096, 0};
	for (uint32_t i = 0; i < kPciRegions; i++) {
		const Message r = c.request(message(Command::GetRegionInfo, bytes_of(RegionInfo{sizeof(RegionInfo), 0, i, 0, 0, 0})));
		ASSERT_EQ(reply_error(r), 0u) << "region " << i;
		const RegionInfo info = load<RegionInfo>(r.bytes, sizeof(Header));
		EXPECT_EQ(info.size, want[i]) << "region " << i;
		EXPECT_EQ(info.flags, want[i] ? kRegionRead | kRegionWrite : 0u) << "region " << i;
		EXPECT_TRUE(r.fds.empty());
	}
}

TEST(VfioUserServer, IrqInfoOffers32MsiVectorsAndNoIntx)
{
	ServerRig rig;
	TestClient c = rig.connect_client();
	c.negotiate();
	const uint32_t want[kPciIrqs] = {0, 32, 0, 1, 1};
	for (uint32_t i = 0; i < kPciIrqs; i++) {
		const Message r = c.request(message(Command::GetIrqInfo, bytes_of(IrqInfo{sizeof(IrqInfo), 0, i, 0})));
		ASSERT_EQ(reply_error(r), 0u);
		const IrqInfo info = load<IrqInfo>(r.bytes, sizeof(Header));
		EXPECT_EQ(info.count, want[i]) << "index " << i;
		EXPECT_TRUE(info.flags & kIrqEventfd);
	}
}

// What the qtest's test_pci_identity checks on -device aic100, read
// through REGION_READ of region 7.
TEST(VfioUserServer, ConfigReadsEqualTheGluesValues)
{
	ServerRig rig;
	TestClient c = rig.connect_client();
	c.negotiate();
	EXPECT_EQ(read32(c, kConfigRegion, 0x00), 0xa10017cbu);
	EXPECT_EQ(read32(c, kConfigRegion, 0x08) >> 16, 0x1200u);
	EXPECT_EQ(read32(c, kConfigRegion, 0x2c), 0xa10017cbu);  // subsystem
	EXPECT_EQ(read32(c, kConfigRegion, 0x3c) >> 8 & 0xff, 0u);  // no INTx pin
	for (uint64_t bar = 0; bar < 6; bar += 2)
		EXPECT_EQ(read32(c, kConfigRegion, 0x10 + 4 * bar) & 7, 4u) << "BAR" << bar;
	EXPECT_EQ(read32(c, kConfigRegion, 0x34) & 0xff, 0x70u);
	EXPECT_EQ(read32(c, kConfigRegion, 0x50), 0x018a0005u);  // MSI, last in the list: 32 vectors, 64-bit, maskable
	EXPECT_EQ(read32(c, kConfigRegion, 0x70 + 0x0c) & 0x3ff, 0x084u);  // LNKCAP x8, 16 GT/s
}

TEST(VfioUserServer, BarReadReachesTheDeviceCore)
{
	ServerRig rig;
	TestClient c = rig.connect_client();
	c.negotiate();
	EXPECT_EQ(read32(c, 0, regs::MHIVER), regs::kMhiVersion);
	EXPECT_EQ(read32(c, 0, kBhi + regs::BHI_EXECENV), static_cast<uint32_t>(regs::ExecEnv::Pbl));
}

TEST(VfioUserServer, BarWriteReachesTheDeviceCore)
{
	ServerRig rig;
	TestClient c = rig.connect_client();
	c.negotiate();
	write32(c, 0, kBhi + regs::BHI_INTVEC, 7);
	EXPECT_EQ(read32(c, 0, kBhi + regs::BHI_INTVEC), 7u);
	EXPECT_EQ(rig.on_server([&] { return rig.card().device().mhi().read(regs::kBhiBase + regs::BHI_INTVEC, 4); })
			  .get(),
		  7u);
}

// A BHI load of a size below the header fails before any DMA: the card
// reports it on BHI_INTVEC's vector, here as a write to that eventfd.
TEST(VfioUserServer, MsiArrivesOnTheVectorsEventfd)
{
	ServerRig rig;
	TestClient c = rig.connect_client();
	c.negotiate();
	std::vector<UniqueFd> efds = give_msi_eventfds(c);
	write32(c, 0, kBhi + regs::BHI_INTVEC, 5);
	write32(c, 0, kBhi + regs::BHI_IMGSIZE, 16);
	write32(c, 0, kBhi + regs::BHI_IMGTXDB, 1);
	EXPECT_EQ(wait_eventfd(efds[5].get()), 1u);
	EXPECT_EQ(read32(c, 0, kBhi + regs::BHI_ERRCODE), static_cast<uint32_t>(fw::Error::Truncated));
	for (int v = 0; v < 32; v++) {
		if (v == 5)
			continue;
		EXPECT_EQ(wait_eventfd(efds[v].get(), 0), 0u) << "vector " << v;
	}
}

// With MSI's eventfds taken away (SET_IRQS count 0), the card has no
// vector to signal.
TEST(VfioUserServer, MsiDisabledTellsTheCardNoVectorsExist)
{
	ServerRig rig;
	TestClient c = rig.connect_client();
	c.negotiate();
	std::vector<UniqueFd> efds = give_msi_eventfds(c);
	EXPECT_EQ(rig.on_server([&] { return rig.card().msi_vectors_enabled(); }).get(), 32u);
	const Message r = c.request(set_irqs_message(kIrqDataNone | kIrqActionTrigger, kMsiIrq, 0, 0));
	ASSERT_EQ(reply_error(r), 0u);
	EXPECT_EQ(rig.on_server([&] { return rig.card().msi_vectors_enabled(); }).get(), 0u);
}

TEST(VfioUserServer, BadCommandGetsAnErrorReply)
{
	ServerRig rig;
	TestClient c = rig.connect_client();
	c.negotiate();
	const Message r = c.request(message(Command::GetRegionInfo, bytes_of(RegionInfo{sizeof(RegionInfo), 0, 99, 0, 0, 0})));
	EXPECT_EQ(reply_error(r), static_cast<uint32_t>(EINVAL));
	EXPECT_EQ(read32(c, 0, regs::MHIVER), regs::kMhiVersion);  // the connection lives on
}

// 17 eventfds where the server takes 16: EINVAL, the fds closed, the
// connection goes on.
TEST(VfioUserServer, MoreFdsThanNegotiatedGetEinval)
{
	ServerRig rig;
	TestClient c = rig.connect_client();
	c.negotiate();
	UniqueFd e(eventfd(0, EFD_CLOEXEC));
	const std::vector<int> fds(17, e.get());
	const Message r = c.request(set_irqs_message(kIrqDataEventfd | kIrqActionTrigger, kMsiIrq, 0, 17), fds);
	EXPECT_EQ(reply_error(r), static_cast<uint32_t>(EINVAL));
	EXPECT_EQ(rig.on_server([&] { return rig.card().msi_vectors_enabled(); }).get(), 0u);
	EXPECT_EQ(read32(c, 0, regs::MHIVER), regs::kMhiVersion);
}

// A header whose size the server would never take loses the stream: the
// server closes the socket and serves the next client.
TEST(VfioUserServer, MalformedMessageClosesTheSocketAndTheServerLivesOn)
{
	ServerRig rig;
	TestClient c = rig.connect_client();
	c.negotiate();
	std::vector<uint8_t> huge = message(Command::RegionWrite, {});
	const uint32_t size = 256u << 20;
	std::memcpy(huge.data() + offsetof(Header, size), &size, sizeof(size));
	c.send(huge);
	EXPECT_TRUE(c.closed_by_server());
	TestClient next = rig.connect_client();
	next.negotiate();
	EXPECT_EQ(read32(next, 0, regs::MHIVER), regs::kMhiVersion);
}

TEST(VfioUserServer, CommandBeforeVersionClosesTheSocket)
{
	ServerRig rig;
	TestClient c = rig.connect_client();
	c.send(region_read_message(0, regs::MHIVER, 4));
	EXPECT_TRUE(c.closed_by_server());
}

// EOF drops the client's eventfds; the card keeps its state for the next.
TEST(VfioUserServer, EofThenASecondClientFindsTheCardAsItWas)
{
	ServerRig rig;
	{
		TestClient first = rig.connect_client();
		first.negotiate();
		std::vector<UniqueFd> efds = give_msi_eventfds(first);
		write32(first, 0, kBhi + regs::BHI_INTVEC, 9);
		first.close();
	}
	TestClient second = rig.connect_client();
	second.negotiate();
	EXPECT_EQ(read32(second, 0, kBhi + regs::BHI_INTVEC), 9u);
	EXPECT_EQ(rig.on_server([&] { return rig.card().msi_vectors_enabled(); }).get(), 0u);
	EXPECT_EQ(rig.on_server([&] { return rig.server().dispatcher().irqs().assigned(kMsiIrq); }).get(), 0u);
}

size_t open_fds()
{
	size_t n = 0;
	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) != -1;
	return n;
}

// Eventfds and a memfd given to the server are its copies: once the
// client goes, the server holds none of them (and no mapping's fd).
TEST(VfioUserServer, NoFdOutlivesItsClient)
{
	ServerRig rig;
	size_t before;
	{
		TestClient c = rig.connect_client();
		c.negotiate();
		before = open_fds();
		std::vector<UniqueFd> efds = give_msi_eventfds(c);
		UniqueFd ram(memfd_create("ram", MFD_CLOEXEC));
		ASSERT_EQ(ftruncate(ram.get(), 1u << 20), 0);
		EXPECT_EQ(reply_error(c.request(dma_map_message(0, 1u << 20), {ram.get()})), 0u);
		EXPECT_GT(open_fds(), before + 33);
		efds.clear();
		ram.reset();
		EXPECT_GT(open_fds(), before);  // the server's copies
		c.close();
	}
	TestClient next = rig.connect_client();
	next.negotiate();  // answered once the first client is dropped
	EXPECT_EQ(open_fds(), before);
}

// What QEMU's client sends to bring the card up (the fuzzer's
// qemu-bringup seed), on the real server: guest RAM as a 2 GiB memfd, a
// ROM without an fd, info, config space, MSI on in 16 + 16, BAR accesses
// (one without a reply), a reset, MSI off, every region unmapped.
TEST(VfioUserServer, QemuBringUpSequenceSucceeds)
{
	ServerRig rig;
	TestClient c = rig.connect_client();
	c.negotiate();
	UniqueFd ram(memfd_create("guest-ram", MFD_CLOEXEC));
	ASSERT_EQ(ftruncate(ram.get(), 0x80000000), 0);
	auto ok = [&](const std::vector<uint8_t> &msg, const std::vector<int> &fds = {}) {
		Message r = c.request(msg, fds);
		EXPECT_EQ(reply_error(r), 0u) << "command " << load<Header>(msg).command;
		return r;
	};
	ok(dma_map_message(0x0, 0x80000000), {ram.get()});
	ok(dma_map_message(0xfffc0000, 0x40000, kDmaRead));
	ok(message(Command::DeviceGetInfo, bytes_of(DeviceInfo{16, 0, 0, 0})));
	for (uint32_t i = 0; i < kPciRegions; i++)
		ok(message(Command::GetRegionInfo, bytes_of(RegionInfo{32, 0, i, 0, 0, 0})));
	for (uint32_t i = 0; i < kPciIrqs; i++)
		ok(message(Command::GetIrqInfo, bytes_of(IrqInfo{16, 0, i, 0})));
	const Message cfg = ok(region_read_message(kConfigRegion, 0, 256));
	PciConfigSpace model(pci_layout(false, 0xa100, 64 * 1024));
	std::vector<uint8_t> want(256);
	model.read(0, want);
	ASSERT_EQ(cfg.bytes.size(), sizeof(Header) + sizeof(RegionAccess) + 256);
	EXPECT_TRUE(std::equal(want.begin(), want.end(), cfg.bytes.begin() + sizeof(Header) + sizeof(RegionAccess)));
	ok(region_write_message(kConfigRegion, 4, {0x06, 0x04}));
	std::vector<UniqueFd> efds = give_msi_eventfds(c);
	c.send(region_write_message(0, kBhi + regs::BHI_INTVEC, {1, 0, 0, 0}, kNoReply));
	EXPECT_EQ(read32(c, 0, kBhi + regs::BHI_INTVEC), 1u);  // the write without a reply was made
	ok(region_read_message(2, 0x1000, 8));
	ok(message(Command::DeviceReset, {}));
	ok(set_irqs_message(kIrqDataNone | kIrqActionTrigger, kMsiIrq, 0, 0));
	ok(dma_unmap_message(0, 0, kUnmapAll));
	EXPECT_EQ(rig.on_server([&] { return rig.server().dispatcher().dma().size(); }).get(), 0u);
}

TEST(VfioUserServer, DeviceResetRestoresConfigSpace)
{
	ServerRig rig;
	TestClient c = rig.connect_client();
	c.negotiate();
	write32(c, kConfigRegion, 0x04, 0x6);  // memory + bus master
	EXPECT_EQ(read32(c, kConfigRegion, 0x04) & 0xffff, 0x6u);
	EXPECT_EQ(reply_error(c.request(message(Command::DeviceReset, {}))), 0u);
	EXPECT_EQ(read32(c, kConfigRegion, 0x04) & 0xffff, 0u);
}

TEST(VfioUserServer, Aic200PresentsMsixAndItsBars)
{
	ServerRig rig(ServerRig::aic200_pbl_config());
	TestClient c = rig.connect_client();
	c.negotiate();
	EXPECT_EQ(read32(c, kConfigRegion, 0x00), 0xa11017cbu);
	const Message r = c.request(message(Command::GetIrqInfo, bytes_of(IrqInfo{sizeof(IrqInfo), 0, kMsixIrq, 0})));
	EXPECT_EQ(load<IrqInfo>(r.bytes, sizeof(Header)).count, 32u);
	EXPECT_EQ(read32(c, 1, regs::MHIVER), regs::kMhiVersion);  // MHI in BAR1
	std::vector<UniqueFd> efds = give_msi_eventfds(c, kMsixIrq);
	EXPECT_EQ(rig.on_server([&] { return rig.card().msi_vectors_enabled(); }).get(), 32u);
}

// With MSI-X's eventfds given (and MSI's too), the card signals through
// MSI-X, as the glue prefers msix_notify once MSI-X is enabled.
TEST(VfioUserServer, Aic200SignalsThroughMsixOnceItHasEventfds)
{
	ServerRig rig(ServerRig::aic200_pbl_config());
	TestClient c = rig.connect_client();
	c.negotiate();
	std::vector<UniqueFd> msi = give_msi_eventfds(c, kMsiIrq);
	std::vector<UniqueFd> msix = give_msi_eventfds(c, kMsixIrq);
	rig.on_server([&] { rig.card().raise_msi(3); }).get();
	EXPECT_EQ(wait_eventfd(msix[3].get()), 1u);
	EXPECT_EQ(wait_eventfd(msi[3].get(), 0), 0u);
}

}  // namespace
}  // namespace aic100::vfio_user::test
