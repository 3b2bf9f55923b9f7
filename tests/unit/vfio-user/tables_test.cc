// SPDX-License-Identifier: GPL-2.0-or-later
// The DMA map table and the eventfd table on their own.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/eventfd.h>

#include <vector>

#include "aic100/vfio_user.h"
#include "aic100/vfio_user/dma_map.h"
#include "aic100/vfio_user/irq_table.h"

namespace aic100::vfio_user {
namespace {

DmaRegion region(uint64_t address, uint64_t size, uint32_t prot = kDmaRead | kDmaWrite)
{
	DmaRegion r;
	r.address = address;
	r.size = size;
	r.prot = prot;
	return r;
}

bool fd_open(int fd) { return fcntl(fd, F_GETFD) != -1; }

TEST(VfioUserDmaMap, OverlapsInEveryShapeAreEexist)
{
	DmaMapTable t(16);
	ASSERT_EQ(t.insert(region(0x10000, 0x4000)), 0);
	EXPECT_EQ(t.insert(region(0x10000, 0x4000)), EEXIST);  // the same
	EXPECT_EQ(t.insert(region(0xf000, 0x2000)), EEXIST);   // over its start
	EXPECT_EQ(t.insert(region(0x13000, 0x2000)), EEXIST);  // over its end
	EXPECT_EQ(t.insert(region(0x11000, 0x1000)), EEXIST);  // inside
	EXPECT_EQ(t.insert(region(0x0, 0x100000)), EEXIST);    // around
	EXPECT_EQ(t.insert(region(0xf000, 0x1000)), 0);        // just before
	EXPECT_EQ(t.insert(region(0x14000, 0x1000)), 0);       // just after
	EXPECT_EQ(t.size(), 3u);
}

TEST(VfioUserDmaMap, FullTableIsEnospc)
{
	DmaMapTable t(2);
	ASSERT_EQ(t.insert(region(0x0, 0x1000)), 0);
	ASSERT_EQ(t.insert(region(0x1000, 0x1000)), 0);
	EXPECT_EQ(t.insert(region(0x2000, 0x1000)), ENOSPC);
}

TEST(VfioUserDmaMap, RemoveWithinTakesWholeRegionsOnly)
{
	DmaMapTable t(4);
	ASSERT_EQ(t.insert(region(0x10000, 0x4000)), 0);
	ASSERT_EQ(t.insert(region(0x20000, 0x1000)), 0);
	std::vector<uint64_t> gone;
	const auto note = [&](DmaRegion &r) { gone.push_back(r.address); };
	EXPECT_EQ(t.remove_within(0x11000, 0x10000, note), EINVAL);  // cuts the first
	EXPECT_EQ(t.remove_within(0x0, 0x10001000, note), 0);
	EXPECT_EQ(gone, (std::vector<uint64_t>{0x10000, 0x20000}));
	EXPECT_EQ(t.size(), 0u);
	EXPECT_EQ(t.remove_within(0x0, 0x1000, note), 0);  // nothing there
}

TEST(VfioUserDmaMap, RemoveNeedsTheExactRange)
{
	DmaMapTable t(4);
	ASSERT_EQ(t.insert(region(0x10000, 0x4000)), 0);
	DmaRegion out;
	EXPECT_EQ(t.remove(0x10000, 0x1000, out), ENOENT);
	EXPECT_EQ(t.remove(0x11000, 0x3000, out), ENOENT);
	EXPECT_EQ(t.remove(0x10000, 0x4000, out), 0);
	EXPECT_EQ(out.address, 0x10000u);
	EXPECT_EQ(t.size(), 0u);
}

TEST(VfioUserDmaMap, FindSaysMemoryMessageDeniedOrUnmapped)
{
	DmaMapTable t(4);
	uint8_t backing[0x2000];
	DmaRegion shared = region(0x2000, 0x2000);
	shared.host = backing;
	ASSERT_EQ(t.insert(std::move(shared)), 0);
	ASSERT_EQ(t.insert(region(0x8000, 0x1000)), 0);
	ASSERT_EQ(t.insert(region(0x9000, 0x1000, kDmaRead)), 0);

	DmaTarget m = t.find(0x3ff0, 0x100, false);
	EXPECT_EQ(m.kind, DmaTarget::Kind::Memory);
	EXPECT_EQ(m.host, backing + 0x1ff0);
	EXPECT_EQ(m.len, 0x10u);  // only what lies in the region
	EXPECT_EQ(t.find(0x8000, 8, true).kind, DmaTarget::Kind::Message);
	EXPECT_EQ(t.find(0x9000, 8, false).kind, DmaTarget::Kind::Message);
	EXPECT_EQ(t.find(0x9000, 8, true).kind, DmaTarget::Kind::Denied);
	EXPECT_EQ(t.find(0x4000, 8, false).kind, DmaTarget::Kind::Unmapped);
	EXPECT_EQ(t.find(UINT64_MAX, 8, false).kind, DmaTarget::Kind::Unmapped);
}

TEST(VfioUserDmaMap, RegionAtTheTopOfTheAddressSpace)
{
	DmaMapTable t(4);
	ASSERT_EQ(t.insert(region(UINT64_MAX - 0xfff, 0x1000)), 0);
	const DmaTarget d = t.find(UINT64_MAX, 100, false);
	EXPECT_EQ(d.kind, DmaTarget::Kind::Message);
	EXPECT_EQ(d.len, 1u);
	EXPECT_EQ(t.insert(region(UINT64_MAX - 0x1fff, 0x2000)), EEXIST);
}

TEST(VfioUserIrqTable, AssignReplacesAndClosesTheEarlierFd)
{
	const uint32_t counts[] = {1, 32};
	IrqTable t(counts);
	const int first = eventfd(0, EFD_CLOEXEC), second = eventfd(0, EFD_CLOEXEC);
	std::vector<UniqueFd> a;
	a.emplace_back(first);
	ASSERT_EQ(t.assign(1, 5, std::move(a)), 0);
	std::vector<UniqueFd> b;
	b.emplace_back(second);
	ASSERT_EQ(t.assign(1, 5, std::move(b)), 0);
	EXPECT_FALSE(fd_open(first));
	EXPECT_EQ(t.fd(1, 5), second);
	EXPECT_EQ(t.assigned(1), 1u);
	t.clear();
	EXPECT_FALSE(fd_open(second));
}

TEST(VfioUserIrqTable, RangesPastTheIndexAreEinval)
{
	const uint32_t counts[] = {1, 32};
	IrqTable t(counts);
	std::vector<UniqueFd> fds;
	fds.emplace_back(eventfd(0, EFD_CLOEXEC));
	fds.emplace_back(eventfd(0, EFD_CLOEXEC));
	EXPECT_EQ(t.assign(1, 31, std::move(fds)), EINVAL);
	EXPECT_EQ(t.deassign(1, 30, 3), EINVAL);
	EXPECT_EQ(t.deassign(2, 0, 1), EINVAL);
	EXPECT_EQ(t.deassign(1, UINT32_MAX, 2), EINVAL);
	EXPECT_EQ(t.fd(1, 32), -1);
	EXPECT_EQ(t.fd(7, 0), -1);
}

}  // namespace
}  // namespace aic100::vfio_user
