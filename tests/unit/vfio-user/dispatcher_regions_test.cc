// SPDX-License-Identifier: GPL-2.0-or-later
// The dispatcher: region info, region reads and writes, WRITE_MULTI, SET_IRQS.
#include <numeric>

#include "dispatcher_fixture.h"

namespace aic100::vfio_user::test {
namespace {

RegionInfo region_info_request(uint32_t index, uint32_t argsz) { return {argsz, 0, index, 0, 0, 0}; }

TEST_F(VfioUserDispatcher, RegionInfoWithRoomCarriesTheSparseAreasAndTheFd)
{
	negotiate();
	auto fds = eventfds(1);  // stands for the BAR's memfd
	dev.bar2_fd = fds[0].get();
	const auto req = message(Command::GetRegionInfo, bytes_of(region_info_request(2, 256)));
	const Reply r = send(req);
	ASSERT_EQ(error(r), 0);
	EXPECT_LE(r.bytes.size(), sizeof(Header) + 256);  // QEMU's buffer: argsz + header
	const RegionInfo info = payload<RegionInfo>(r);
	EXPECT_EQ(info.argsz, sizeof(RegionInfo) + sizeof(SparseMmap) + 2 * sizeof(SparseArea));
	EXPECT_EQ(info.flags, kRegionRead | kRegionWrite | kRegionMmap | kRegionCaps);
	EXPECT_EQ(info.cap_offset, sizeof(RegionInfo));
	EXPECT_EQ(info.size, FakeBackend::kBar2Size);
	const SparseMmap cap = payload<SparseMmap>(r, info.cap_offset);
	EXPECT_EQ(cap.header.id, kCapSparseMmap);
	EXPECT_EQ(cap.header.version, 1);
	EXPECT_EQ(cap.header.next, 0u);
	ASSERT_EQ(cap.nr_areas, 2u);
	const SparseArea second = payload<SparseArea>(r, info.cap_offset + sizeof(SparseMmap) + sizeof(SparseArea));
	EXPECT_EQ(second.offset, 0x3000u);
	EXPECT_EQ(second.size, 0x1000u);
	ASSERT_EQ(r.fds.size(), 1u);
	EXPECT_EQ(r.fds[0], dev.bar2_fd);
}

TEST_F(VfioUserDispatcher, RegionInfoWithoutRoomAsksForMoreAndClaimsNoCapsOrMmap)
{
	negotiate();
	auto fds = eventfds(1);
	dev.bar2_fd = fds[0].get();
	const Reply r = send(message(Command::GetRegionInfo, bytes_of(region_info_request(2, sizeof(RegionInfo)))));
	ASSERT_EQ(error(r), 0);
	EXPECT_EQ(r.bytes.size(), sizeof(Header) + sizeof(RegionInfo));
	const RegionInfo info = payload<RegionInfo>(r);
	EXPECT_EQ(info.argsz, sizeof(RegionInfo) + sizeof(SparseMmap) + 2 * sizeof(SparseArea));
	EXPECT_EQ(info.flags, kRegionRead | kRegionWrite);
	EXPECT_EQ(info.cap_offset, 0u);
	EXPECT_TRUE(r.fds.empty());
}

TEST_F(VfioUserDispatcher, RegionInfoOfAnUnimplementedBarHasSizeZero)
{
	negotiate();
	const Reply r = send(message(Command::GetRegionInfo, bytes_of(region_info_request(1, 32))));
	ASSERT_EQ(error(r), 0);
	EXPECT_EQ(payload<RegionInfo>(r).size, 0u);
	EXPECT_EQ(payload<RegionInfo>(r).flags, 0u);
	EXPECT_EQ(error(send(message(Command::GetRegionInfo, bytes_of(region_info_request(kPciRegions, 32))))), EINVAL);
}

TEST_F(VfioUserDispatcher, RegionInfoWithMmapButNoFdDropsMmap)
{
	negotiate();
	const Reply r = send(message(Command::GetRegionInfo, bytes_of(region_info_request(2, 256))));
	ASSERT_EQ(error(r), 0);
	EXPECT_FALSE(payload<RegionInfo>(r).flags & kRegionMmap);
	EXPECT_TRUE(r.fds.empty());
}

TEST_F(VfioUserDispatcher, RegionReadReturnsExactlyCountBytes)
{
	negotiate();
	std::iota(dev.memory(0).begin(), dev.memory(0).end(), 0);
	const Reply r = send(region_read_message(0, 0x10, 4));
	ASSERT_EQ(error(r), 0);
	EXPECT_EQ(r.bytes.size(), sizeof(Header) + sizeof(RegionAccess) + 4);  // QEMU's buffer: 32 + count
	const RegionAccess a = payload<RegionAccess>(r);
	EXPECT_EQ(a.offset, 0x10u);
	EXPECT_EQ(a.count, 4u);
	EXPECT_EQ(payload<uint32_t>(r, sizeof(RegionAccess)), 0x13121110u);
}

TEST_F(VfioUserDispatcher, RegionReadPastTheRegionsEndIsEinval)
{
	negotiate();
	EXPECT_EQ(error(send(region_read_message(0, FakeBackend::kBar0Size - 4, 8))), EINVAL);
	EXPECT_EQ(error(send(region_read_message(0, FakeBackend::kBar0Size, 1))), EINVAL);
	EXPECT_EQ(error(send(region_read_message(0, UINT64_MAX - 3, 8))), EINVAL);  // offset + count wraps
	EXPECT_EQ(error(send(region_read_message(1, 0, 4))), EINVAL);                // size 0
	EXPECT_EQ(error(send(region_read_message(kPciRegions, 0, 4))), EINVAL);
	EXPECT_EQ(error(send(region_read_message(0, FakeBackend::kBar0Size - 4, 4))), 0);
	EXPECT_EQ(dev.reads, 1);
}

TEST_F(VfioUserDispatcher, RegionReadCountOfZeroOrPastTheLimit)
{
	negotiate();
	EXPECT_EQ(error(send(region_read_message(0, 0, 0))), EINVAL);
	EXPECT_EQ(error(send(region_read_message(0, 0, (1u << 20) + 1))), E2BIG);
	auto req = region_read_message(0, 0, 4);
	req.push_back(0);
	req[4]++;
	EXPECT_EQ(error(send(req)), EINVAL);  // a read carries no data
}

TEST_F(VfioUserDispatcher, ConfigSpaceGoesToTheConfigCalls)
{
	negotiate();
	ASSERT_EQ(error(send(region_write_message(kConfigRegion, 0x04, {0x06, 0x04}))), 0);
	const Reply r = send(region_read_message(kConfigRegion, 0, 256));
	ASSERT_EQ(error(r), 0);
	EXPECT_EQ(payload<uint16_t>(r, sizeof(RegionAccess) + 4), 0x0406);
	EXPECT_EQ(dev.config_accesses, 2);
	EXPECT_EQ(dev.reads + dev.writes, 0);
}

TEST_F(VfioUserDispatcher, BackendErrorsReachTheClient)
{
	negotiate();
	dev.read_error = EIO;
	EXPECT_EQ(error(send(region_read_message(0, 0, 4))), EIO);
}

TEST_F(VfioUserDispatcher, RegionWriteRepliesWithoutTheData)
{
	negotiate();
	const Reply r = send(region_write_message(2, 0x100, {1, 2, 3, 4, 5, 6, 7, 8}));
	ASSERT_EQ(error(r), 0);
	EXPECT_EQ(r.bytes.size(), sizeof(Header) + sizeof(RegionAccess));
	EXPECT_EQ(payload<RegionAccess>(r).count, 8u);
	EXPECT_EQ(dev.memory(2)[0x107], 8);
}

TEST_F(VfioUserDispatcher, RegionWriteWhoseCountIsNotItsDataIsEinval)
{
	negotiate();
	auto req = region_write_message(0, 0, {1, 2, 3, 4});
	req[sizeof(Header) + 12] = 3;  // count 3, 4 bytes of data
	EXPECT_EQ(error(send(req)), EINVAL);
	req[sizeof(Header) + 12] = 5;
	EXPECT_EQ(error(send(req)), EINVAL);
	EXPECT_EQ(error(send(region_write_message(0, FakeBackend::kBar0Size - 2, {1, 2, 3, 4}))), EINVAL);
	EXPECT_EQ(dev.writes, 0);
}

TEST_F(VfioUserDispatcher, WriteMultiIsRefusedUnlessNegotiated)
{
	negotiate();
	const auto req = write_multi_message({write_entry(0, 0, 4, 0xaa)}, 1);
	auto asked = req;
	asked[8] = 0;  // the same, with a reply
	EXPECT_EQ(error(send(asked)), EINVAL);
	EXPECT_EQ(dev.writes, 0);
}

class VfioUserWriteMulti : public VfioUserDispatcher {
protected:
	static constexpr Caps kMulti{16, 1u << 20, 4096, 64, true};
	Dispatcher dm{dev, kMulti};

	int send_multi(std::vector<uint8_t> req)
	{
		req[8] = 0;  // ask for a reply, to see the errno
		const Reply r = dm.handle(req, {});
		return error(r);
	}
	void SetUp() override { ASSERT_EQ(error(dm.handle(version_message(kQemuCaps), {})), 0); }
};

TEST_F(VfioUserWriteMulti, AppliesEveryEntryAndRepliesWithTheCount)
{
	std::vector<WriteMultiEntry> entries;
	for (uint32_t i = 0; i < kWriteMultiMax; i++)
		entries.push_back(write_entry(0, i * 8, 8, static_cast<uint8_t>(i)));
	auto req = write_multi_message(entries, entries.size());
	req[8] = 0;
	const Reply r = dm.handle(req, {});
	ASSERT_EQ(error(r), 0);
	EXPECT_EQ(payload<WriteMulti>(r).wr_cnt, kWriteMultiMax);
	EXPECT_EQ(dev.writes, static_cast<int>(kWriteMultiMax));
	EXPECT_EQ(dev.memory(0)[199 * 8 + 7], 199);
	EXPECT_FALSE(dm.handle(write_multi_message(entries, entries.size()), {}).send);  // as QEMU sends it
}

TEST_F(VfioUserWriteMulti, CountsOutOfBoundsAreEinval)
{
	EXPECT_EQ(send_multi(write_multi_message({}, 0)), EINVAL);
	const std::vector<WriteMultiEntry> many(kWriteMultiMax + 1, write_entry(0, 0, 4, 1));
	EXPECT_EQ(send_multi(write_multi_message(many, many.size())), EINVAL);
	EXPECT_EQ(send_multi(write_multi_message({write_entry(0, 0, 4, 1)}, 2)), EINVAL);  // fewer than wr_cnt
	EXPECT_EQ(send_multi(write_multi_message({write_entry(0, 0, 4, 1), write_entry(0, 0, 4, 1)}, 1)), EINVAL);
	EXPECT_EQ(send_multi(write_multi_message({write_entry(0, 0, 9, 1)}, 1)), EINVAL);  // 9 > data[8]
	EXPECT_EQ(send_multi(write_multi_message({write_entry(0, 0, 0, 1)}, 1)), EINVAL);
	EXPECT_EQ(dev.writes, 0);
}

TEST_F(VfioUserWriteMulti, OneBadEntryAppliesNone)
{
	EXPECT_EQ(send_multi(write_multi_message(
			  {write_entry(0, 0, 4, 1), write_entry(0, FakeBackend::kBar0Size - 2, 4, 1)}, 2)),
		  EINVAL);
	EXPECT_EQ(dev.writes, 0);
}

TEST_F(VfioUserDispatcher, SetIrqsAssignsEventfdsInChunksAsQemuSendsThem)
{
	negotiate();
	const uint32_t flags = kIrqDataEventfd | kIrqActionTrigger;
	ASSERT_EQ(error(send(set_irqs_message(flags, kMsiIrq, 0, 16), eventfds(16))), 0);
	ASSERT_EQ(error(send(set_irqs_message(flags, kMsiIrq, 16, 16), eventfds(16))), 0);
	EXPECT_EQ(d.irqs().assigned(kMsiIrq), 32u);
	EXPECT_EQ(dev.eventfd_changes[kMsiIrq], 2);
}

TEST_F(VfioUserDispatcher, SetIrqsEventfdWithoutFdsDeassignsTheRange)
{
	negotiate();
	const uint32_t flags = kIrqDataEventfd | kIrqActionTrigger;
	auto fds = eventfds(8);
	const int fourth = fds[3].get();
	ASSERT_EQ(error(send(set_irqs_message(flags, kMsiIrq, 0, 8), std::move(fds))), 0);
	ASSERT_EQ(error(send(set_irqs_message(flags, kMsiIrq, 2, 3))), 0);
	EXPECT_EQ(d.irqs().assigned(kMsiIrq), 5u);
	EXPECT_EQ(d.irqs().fd(kMsiIrq, 2), -1);
	EXPECT_EQ(d.irqs().fd(kMsiIrq, 5), d.irqs().fd(kMsiIrq, 5));
	EXPECT_NE(d.irqs().fd(kMsiIrq, 5), -1);
	EXPECT_FALSE(fd_open(fourth));
}

TEST_F(VfioUserDispatcher, SetIrqsCountZeroTurnsTheIndexOff)
{
	negotiate();
	ASSERT_EQ(error(send(set_irqs_message(kIrqDataEventfd | kIrqActionTrigger, kMsiIrq, 0, 4), eventfds(4))), 0);
	ASSERT_EQ(error(send(set_irqs_message(kIrqDataNone | kIrqActionTrigger, kMsiIrq, 0, 0))), 0);
	EXPECT_EQ(d.irqs().assigned(kMsiIrq), 0u);
	EXPECT_EQ(error(send(set_irqs_message(kIrqDataNone | kIrqActionTrigger, kMsiIrq, 1, 0))), EINVAL);
	EXPECT_EQ(error(send(set_irqs_message(kIrqDataEventfd | kIrqActionTrigger, kMsiIrq, 0, 0))), EINVAL);
	EXPECT_EQ(error(send(set_irqs_message(kIrqDataNone | kIrqActionMask, kIntxIrq, 0, 0))), EINVAL);
}

TEST_F(VfioUserDispatcher, SetIrqsQemuMsixEnableWithoutFdsIsADeassign)
{
	negotiate();
	// The AIC100 has no MSI-X: QEMU's enable of vector 0 without an fd is out of range.
	EXPECT_EQ(error(send(set_irqs_message(kIrqDataEventfd | kIrqActionTrigger, kMsixIrq, 0, 1))), EINVAL);
	EXPECT_EQ(error(send(set_irqs_message(kIrqDataEventfd | kIrqActionTrigger, kErrIrq, 0, 1))), 0);
}

TEST_F(VfioUserDispatcher, SetIrqsMalformedFormsAreEinval)
{
	negotiate();
	const uint32_t efd = kIrqDataEventfd | kIrqActionTrigger;
	EXPECT_EQ(error(send(set_irqs_message(efd, kMsiIrq, 30, 4), eventfds(4))), EINVAL);        // past 32
	EXPECT_EQ(error(send(set_irqs_message(efd, kMsiIrq, UINT32_MAX, 2), eventfds(2))), EINVAL);  // wraps
	EXPECT_EQ(error(send(set_irqs_message(efd, kMsiIrq, 0, 4), eventfds(3))), EINVAL);         // fds != count
	EXPECT_EQ(error(send(set_irqs_message(efd, kPciIrqs, 0, 1), eventfds(1))), EINVAL);        // no such index
	EXPECT_EQ(error(send(set_irqs_message(efd | kIrqDataBool, kMsiIrq, 0, 1), eventfds(1))), EINVAL);
	EXPECT_EQ(error(send(set_irqs_message(efd | kIrqActionMask, kMsiIrq, 0, 1), eventfds(1))), EINVAL);
	EXPECT_EQ(error(send(set_irqs_message(kIrqDataEventfd | kIrqActionUnmask, kIntxIrq, 0, 1), eventfds(1))), EINVAL);
	EXPECT_EQ(error(send(set_irqs_message(efd | 0x40, kMsiIrq, 0, 1), eventfds(1))), EINVAL);
	EXPECT_EQ(error(send(set_irqs_message(kIrqDataNone | kIrqActionTrigger, kMsiIrq, 0, 1), eventfds(1))), EINVAL);
	EXPECT_EQ(error(send(set_irqs_message(kIrqDataBool | kIrqActionTrigger, kMsiIrq, 0, 4, {1, 0, 1}))), EINVAL);
	EXPECT_EQ(error(send(message(Command::SetIrqs, bytes_of(IrqSet{19, efd, kMsiIrq, 0, 1})))), EINVAL);  // argsz
	EXPECT_EQ(d.irqs().assigned(kMsiIrq), 0u);
	EXPECT_TRUE(dev.actions.empty());
}

TEST_F(VfioUserDispatcher, SetIrqsWithoutEventfdsGoToTheBackend)
{
	negotiate();
	ASSERT_EQ(error(send(set_irqs_message(kIrqDataBool | kIrqActionTrigger, kMsiIrq, 4, 3, {1, 0, 1}))), 0);
	ASSERT_EQ(error(send(set_irqs_message(kIrqDataNone | kIrqActionUnmask, kIntxIrq, 0, 1))), 0);
	EXPECT_EQ(error(send(set_irqs_message(kIrqDataNone | kIrqActionMask, kMsiIrq, 0, 1))), EINVAL);  // not maskable
	ASSERT_EQ(dev.actions.size(), 2u);
	EXPECT_EQ(dev.actions[0].start, 4u);
}

}  // namespace
}  // namespace aic100::vfio_user::test
