// SPDX-License-Identifier: GPL-2.0-or-later
// The dispatcher: VERSION, framing and header errors, and device info.
#include <cstring>
#include <new>
#include <string>

#include "dispatcher_fixture.h"

namespace aic100::vfio_user::test {
namespace {

TEST_F(VfioUserDispatcher, VersionNegotiatesWithQemusCapabilities)
{
	const Reply r = send(version_message(kQemuCaps));
	ASSERT_EQ(error(r), 0);
	EXPECT_FALSE(r.close);
	const Version v = payload<Version>(r);
	EXPECT_EQ(v.major, 0);
	EXPECT_EQ(v.minor, 0);
	ASSERT_EQ(r.bytes.back(), 0);
	const std::string json(reinterpret_cast<const char *>(r.bytes.data()) + sizeof(Header) + sizeof(Version));
	EXPECT_EQ(json.size() + 1 + sizeof(Header) + sizeof(Version), r.bytes.size());  // one NUL, at the end
	const auto back = parse_caps(json);
	ASSERT_TRUE(back);
	EXPECT_EQ(back->max_msg_fds, 16u);
	EXPECT_EQ(back->max_data_xfer, 1u << 20);
	EXPECT_EQ(back->pgsizes, 4096u);
	EXPECT_EQ(back->max_dma_maps, 64u);  // ours, below QEMU's
	EXPECT_FALSE(back->write_multiple);  // QEMU offers it; we did not
	EXPECT_TRUE(d.client_caps().write_multiple);
}

TEST_F(VfioUserDispatcher, VersionReplyIsNeverLongerThanTheRequest)
{
	for (size_t pad = 0; pad < 160; pad++) {
		Dispatcher fresh(dev, kOurs);
		const std::string json = "{" + std::string(pad, ' ') + "}";
		const auto req = version_message(json);
		const Reply r = fresh.handle(req, {});
		SCOPED_TRACE(pad);
		ASSERT_EQ(error(r), 0);
		EXPECT_LE(r.bytes.size(), req.size());
		// The JSON goes only when it fits, and always NUL-terminated.
		if (r.bytes.size() > sizeof(Header) + sizeof(Version)) {
			EXPECT_EQ(r.bytes.back(), 0);
		}
	}
}

TEST_F(VfioUserDispatcher, VersionWithoutCapabilitiesGetsNone)
{
	const auto req = version_message("");
	const Reply r = send(req);
	ASSERT_EQ(error(r), 0);
	EXPECT_EQ(r.bytes.size(), req.size());
	EXPECT_EQ(d.sent_caps().max_msg_fds, kDefaultMaxMsgFds);
}

TEST_F(VfioUserDispatcher, VersionOfAnotherMajorFailsAndCloses)
{
	const Reply r = send(version_message(kQemuCaps, 1, 0));
	EXPECT_EQ(error(r), EINVAL);
	EXPECT_TRUE(r.close);
	EXPECT_FALSE(d.negotiated());
}

TEST_F(VfioUserDispatcher, VersionWithMalformedJsonFailsAndCloses)
{
	const Reply r = send(version_message(R"({"capabilities":{"max_msg_fds":"x"}})"));
	EXPECT_EQ(error(r), EINVAL);
	EXPECT_TRUE(r.close);
}

TEST_F(VfioUserDispatcher, VersionWithoutTheNulFailsAndCloses)
{
	auto req = version_message("{}");
	req.pop_back();
	req[4]--;  // size
	const Reply r = send(req);
	EXPECT_EQ(error(r), EINVAL);
	EXPECT_TRUE(r.close);
}

TEST_F(VfioUserDispatcher, VersionWithANulInsideTheJsonFails)
{
	auto req = version_message("{}  ");
	req[sizeof(Header) + sizeof(Version) + 2] = 0;
	EXPECT_EQ(error(send(req)), EINVAL);
}

TEST_F(VfioUserDispatcher, VersionWithNoCommonPageSizeFails)
{
	const Reply r = send(version_message(R"({"capabilities":{"pgsizes":8192}})"));
	EXPECT_EQ(error(r), EINVAL);
	EXPECT_TRUE(r.close);
}

TEST_F(VfioUserDispatcher, CommandBeforeVersionCloses)
{
	const Reply r = send(message(Command::DeviceGetInfo, bytes_of(DeviceInfo{16, 0, 0, 0})));
	EXPECT_FALSE(r.send);
	EXPECT_TRUE(r.close);
}

TEST_F(VfioUserDispatcher, SecondVersionIsEinvalAndKeepsTheSession)
{
	negotiate();
	const Reply r = send(version_message(kQemuCaps));
	EXPECT_EQ(error(r), EINVAL);
	EXPECT_FALSE(r.close);
	EXPECT_TRUE(d.negotiated());
}

TEST_F(VfioUserDispatcher, BrokenFramingCloses)
{
	negotiate();
	auto req = message(Command::DeviceReset, {});
	EXPECT_TRUE(send(std::vector<uint8_t>(req.begin(), req.begin() + 15)).close);  // short header
	auto bigger = req;
	bigger[4] = 17;  // size says one more byte than there is
	EXPECT_TRUE(send(bigger).close);
	auto huge = message(Command::RegionWrite, std::vector<uint8_t>(d.limits().max_message, 0));
	EXPECT_TRUE(send(huge).close);
	EXPECT_TRUE(send(message(Command::DeviceReset, {}, 1, kTypeReply)).close);  // no request pending
	EXPECT_TRUE(send(message(Command::DeviceReset, {}, 1, 2)).close);           // no such type
	EXPECT_EQ(dev.resets, 0);
}

TEST_F(VfioUserDispatcher, UnknownFlagBitsAndTheErrorFlagAreEinval)
{
	negotiate();
	EXPECT_EQ(error(send(message(Command::DeviceReset, {}, 1, 0x40))), EINVAL);
	EXPECT_EQ(error(send(message(Command::DeviceReset, {}, 1, kError))), EINVAL);
	EXPECT_EQ(dev.resets, 0);
}

TEST_F(VfioUserDispatcher, ReplyEchoesIdAndCommand)
{
	negotiate();
	const Reply r = send(message(Command::DeviceReset, {}, 0xbeef));
	ASSERT_EQ(error(r), 0);
	EXPECT_EQ(header(r).id, 0xbeef);
	EXPECT_EQ(header(r).command, static_cast<uint16_t>(Command::DeviceReset));
	EXPECT_EQ(header(r).size, sizeof(Header));
}

TEST_F(VfioUserDispatcher, NoReplyCommandsGetNoReplyEvenOnError)
{
	negotiate();
	EXPECT_FALSE(send(region_write_message(0, 0, {1, 2, 3, 4}, kNoReply)).send);
	EXPECT_EQ(dev.writes, 1);
	EXPECT_FALSE(send(region_write_message(0, FakeBackend::kBar0Size, {1}, kNoReply)).send);
	EXPECT_EQ(dev.writes, 1);
}

TEST_F(VfioUserDispatcher, UnservedCommandsAreEnosys)
{
	negotiate();
	for (const uint16_t cmd : {0, 6, 11, 12, 14, 16, 17, 18, 19, 0xffff}) {
		SCOPED_TRACE(cmd);
		EXPECT_EQ(error(send(message(static_cast<Command>(cmd), {}))), ENOSYS);
	}
}

TEST_F(VfioUserDispatcher, FdsOnACommandThatTakesNoneAreEinvalAndClosed)
{
	negotiate();
	auto fds = eventfds(1);
	const int fd = fds[0].get();
	EXPECT_EQ(error(send(message(Command::DeviceReset, {}), std::move(fds))), EINVAL);
	EXPECT_FALSE(fd_open(fd));
	EXPECT_EQ(dev.resets, 0);
}

TEST_F(VfioUserDispatcher, MoreFdsThanAdvertisedAreEinval)
{
	negotiate();
	EXPECT_EQ(error(send(set_irqs_message(kIrqDataEventfd | kIrqActionTrigger, kMsiIrq, 0, 17), eventfds(17))),
		  EINVAL);
	EXPECT_EQ(d.irqs().assigned(kMsiIrq), 0u);
}

TEST_F(VfioUserDispatcher, DeviceInfoSaysPciResetRegionsAndIrqs)
{
	negotiate();
	const Reply r = send(message(Command::DeviceGetInfo, bytes_of(DeviceInfo{16, 0, 0, 0})));
	ASSERT_EQ(error(r), 0);
	const DeviceInfo info = payload<DeviceInfo>(r);
	EXPECT_EQ(info.argsz, sizeof(DeviceInfo));
	EXPECT_EQ(info.flags, kDeviceReset | kDevicePci);
	EXPECT_EQ(info.num_regions, kPciRegions);
	EXPECT_EQ(info.num_irqs, kPciIrqs);
}

TEST_F(VfioUserDispatcher, InfoRequestsWithShortArgszOrPayloadAreEinval)
{
	negotiate();
	EXPECT_EQ(error(send(message(Command::DeviceGetInfo, bytes_of(DeviceInfo{15, 0, 0, 0})))), EINVAL);
	EXPECT_EQ(error(send(message(Command::DeviceGetInfo, std::vector<uint8_t>(12, 0xff)))), EINVAL);
	EXPECT_EQ(error(send(message(Command::GetRegionInfo, bytes_of(RegionInfo{31, 0, 0, 0, 0, 0})))), EINVAL);
	EXPECT_EQ(error(send(message(Command::GetIrqInfo, bytes_of(IrqInfo{8, 0, 0, 0})))), EINVAL);
}

TEST_F(VfioUserDispatcher, IrqInfoGivesEachIndexAndRefusesPastTheLast)
{
	negotiate();
	const Reply r = send(message(Command::GetIrqInfo, bytes_of(IrqInfo{16, 0, kMsiIrq, 0})));
	ASSERT_EQ(error(r), 0);
	const IrqInfo info = payload<IrqInfo>(r);
	EXPECT_EQ(info.index, kMsiIrq);
	EXPECT_EQ(info.count, 32u);
	EXPECT_TRUE(info.flags & kIrqEventfd);
	EXPECT_EQ(error(send(message(Command::GetIrqInfo, bytes_of(IrqInfo{16, 0, kPciIrqs, 0})))), EINVAL);
}

TEST_F(VfioUserDispatcher, ResetKeepsDmaRegionsAndEventfds)
{
	negotiate();
	ASSERT_EQ(error(send(dma_map_message(0x100000, 0x10000))), 0);
	ASSERT_EQ(error(send(set_irqs_message(kIrqDataEventfd | kIrqActionTrigger, kMsiIrq, 0, 1), eventfds(1))), 0);
	EXPECT_EQ(error(send(message(Command::DeviceReset, {}))), 0);
	EXPECT_EQ(dev.resets, 1);
	EXPECT_EQ(d.dma().size(), 1u);
	EXPECT_EQ(d.irqs().assigned(kMsiIrq), 1u);
	EXPECT_EQ(error(send(message(Command::DeviceReset, {0}))), EINVAL);  // reset takes no payload
}

TEST_F(VfioUserDispatcher, DisconnectDropsRegionsAndEventfdsAndWantsVersionAgain)
{
	negotiate();
	ASSERT_EQ(error(send(dma_map_message(0x100000, 0x10000))), 0);
	auto fds = eventfds(2);
	const int fd = fds[1].get();
	ASSERT_EQ(error(send(set_irqs_message(kIrqDataEventfd | kIrqActionTrigger, kMsiIrq, 0, 2), std::move(fds))), 0);
	d.disconnect();
	EXPECT_EQ(d.dma().size(), 0u);
	EXPECT_EQ(dev.unmapped.size(), 1u);
	EXPECT_EQ(d.irqs().assigned(kMsiIrq), 0u);
	EXPECT_FALSE(fd_open(fd));
	EXPECT_FALSE(d.negotiated());
	EXPECT_TRUE(send(message(Command::DeviceReset, {})).close);
	negotiate();
}

}  // namespace
}  // namespace aic100::vfio_user::test

namespace aic100::vfio_user::test {
namespace {

// Found by the fuzzer (regressions/limits-before-init): the constructor
// worked out the first limits from negotiated_ before that member was
// initialised (undefined behaviour). In memory that held ones, a server
// offering write_multiple had its limits allow WRITE_MULTI before any
// VERSION agreed on it.
TEST(VfioUserDispatcherInit, LimitsBeforeVersionAllowNoWriteMulti)
{
	FakeBackend dev;
	const Caps ours{16, 1u << 20, 4096, 64, true};
	alignas(Dispatcher) unsigned char storage[sizeof(Dispatcher)];
	std::memset(storage, 1, sizeof(storage));
	auto *d = new (storage) Dispatcher(dev, ours);
	EXPECT_FALSE(d->limits().write_multiple);
	d->~Dispatcher();
}

}  // namespace
}  // namespace aic100::vfio_user::test

namespace aic100::vfio_user::test {
namespace {

TEST_F(VfioUserDispatcher, VersionTakesTheSmallerOfEachLimit)
{
	// Padded so that the reply has room for every key.
	negotiate(R"({"capabilities":{"max_data_xfer_size":65536,"pgsizes":2101248,"max_dma_maps":8}})" +
		  std::string(32, ' '));
	EXPECT_EQ(d.limits().max_data_xfer, 65536u);
	EXPECT_EQ(d.limits().page_size, 4096u);  // 4 KiB | 2 MiB offered, 4 KiB taken
	EXPECT_EQ(d.sent_caps().max_dma_maps, 8u);
	EXPECT_EQ(error(send(region_read_message(0, 0, 65537))), E2BIG);
	for (uint64_t i = 0; i < 8; i++)
		ASSERT_EQ(error(send(dma_map_message(i * 0x1000, 0x1000))), 0);
	EXPECT_EQ(error(send(dma_map_message(8 * 0x1000, 0x1000))), ENOSPC);
}

// QEMU reads each reply into a buffer sized from its request (proxy.c):
// the request's size, argsz + 16 for region info, 32 + count for a read.
TEST_F(VfioUserDispatcher, RepliesToQemusBringUpFitQemusBuffers)
{
	auto fds = eventfds(1);
	dev.bar2_fd = fds[0].get();
	std::vector<std::vector<uint8_t>> requests = {
		version_message(kQemuCaps),
		dma_map_message(0x0, 0x80000000),
		message(Command::DeviceGetInfo, bytes_of(DeviceInfo{16, 0, 0, 0})),
		message(Command::GetIrqInfo, bytes_of(IrqInfo{16, 0, kMsiIrq, 0})),
		region_read_message(kConfigRegion, 0, 256),
		region_write_message(kConfigRegion, 4, {0x06, 0x04}),
		set_irqs_message(kIrqDataNone | kIrqActionTrigger, kMsiIrq, 0, 0),
		message(Command::DeviceReset, {}),
		dma_unmap_message(0x0, 0x80000000),
	};
	for (uint32_t i = 0; i < kPciRegions; i++) {
		requests.push_back(message(Command::GetRegionInfo, bytes_of(RegionInfo{32, 0, i, 0, 0, 0})));
		requests.push_back(message(Command::GetRegionInfo, bytes_of(RegionInfo{80, 0, i, 0, 0, 0})));
	}
	for (const auto &req : requests) {
		const Header h = load<Header>(req);
		SCOPED_TRACE(h.command);
		const Reply r = send(req);
		ASSERT_EQ(error(r), 0);
		size_t room = req.size();
		if (h.command == static_cast<uint16_t>(Command::GetRegionInfo))
			room = sizeof(Header) + load<uint32_t>(req, sizeof(Header));
		if (h.command == static_cast<uint16_t>(Command::RegionRead))
			room = sizeof(Header) + sizeof(RegionAccess) + load<RegionAccess>(req, sizeof(Header)).count;
		EXPECT_LE(r.bytes.size(), room);
	}
}

}  // namespace
}  // namespace aic100::vfio_user::test
