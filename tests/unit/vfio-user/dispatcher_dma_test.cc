// SPDX-License-Identifier: GPL-2.0-or-later
// The dispatcher: DMA_MAP and DMA_UNMAP.
#include "dispatcher_fixture.h"

namespace aic100::vfio_user::test {
namespace {

TEST_F(VfioUserDispatcher, DmaMapWithAndWithoutAnFd)
{
	negotiate();
	auto fds = eventfds(1);  // stands for guest RAM's memfd
	const int fd = fds[0].get();
	const Reply r = send(dma_map_message(0x0, 0x80000000, kDmaRead | kDmaWrite, 0x1000), std::move(fds));
	ASSERT_EQ(error(r), 0);
	EXPECT_EQ(r.bytes.size(), sizeof(Header));
	ASSERT_EQ(error(send(dma_map_message(0xfffc0000, 0x40000, kDmaRead))), 0);  // a ROM: no fd
	ASSERT_EQ(d.dma().size(), 2u);
	EXPECT_EQ(d.dma().at(0x1234)->fd.get(), fd);
	EXPECT_EQ(d.dma().at(0x1234)->offset, 0x1000u);
	EXPECT_FALSE(d.dma().at(0xfffc1000)->fd.valid());
	EXPECT_EQ(d.dma().find(0xfffc0000, 4, true).kind, DmaTarget::Kind::Denied);
	EXPECT_EQ(d.dma().find(0xfffc0000, 4, false).kind, DmaTarget::Kind::Message);
	EXPECT_EQ(dev.mapped, 2);
}

TEST_F(VfioUserDispatcher, DmaMapOverAMappedRangeIsEexistAndClosesItsFd)
{
	negotiate();
	ASSERT_EQ(error(send(dma_map_message(0x100000, 0x100000))), 0);
	auto fds = eventfds(1);
	const int fd = fds[0].get();
	EXPECT_EQ(error(send(dma_map_message(0x1ff000, 0x2000), std::move(fds))), EEXIST);
	EXPECT_FALSE(fd_open(fd));
	EXPECT_EQ(error(send(dma_map_message(0x0, 0x101000))), EEXIST);
	EXPECT_EQ(error(send(dma_map_message(0x200000, 0x1000))), 0);  // adjacent is fine
	EXPECT_EQ(d.dma().size(), 2u);
}

TEST_F(VfioUserDispatcher, DmaMapMalformedFormsAreEinval)
{
	negotiate();
	EXPECT_EQ(error(send(dma_map_message(0x1000, 0))), EINVAL);
	EXPECT_EQ(error(send(dma_map_message(0x1800, 0x1000))), EINVAL);  // address not page-aligned
	EXPECT_EQ(error(send(dma_map_message(0x1000, 0x1800))), EINVAL);  // size
	EXPECT_EQ(error(send(dma_map_message(0x1000, 0x1000, kDmaRead, 0x800), eventfds(1))), EINVAL);  // offset
	EXPECT_EQ(error(send(dma_map_message(0xfffffffffffff000, 0x2000))), EINVAL);  // wraps
	EXPECT_EQ(error(send(dma_map_message(0x1000, 0x1000, 0x4))), EINVAL);         // unknown flag
	EXPECT_EQ(error(send(dma_map_message(0x1000, 0x1000), eventfds(2))), EINVAL);
	EXPECT_EQ(error(send(message(Command::DmaMap, bytes_of(DmaUnmap{24, 0, 0x1000, 0x1000})))), EINVAL);  // short
	EXPECT_EQ(d.dma().size(), 0u);
	EXPECT_EQ(dev.mapped, 0);
}

TEST_F(VfioUserDispatcher, DmaMapUnalignedFdOffsetIsFineWithoutAnFd)
{
	negotiate();
	EXPECT_EQ(error(send(dma_map_message(0x1000, 0x1000, kDmaRead, 0x800))), 0);
}

TEST_F(VfioUserDispatcher, DmaMapPastMaxDmaMapsIsEnospc)
{
	negotiate();
	for (uint64_t i = 0; i < kOurs.max_dma_maps; i++)
		ASSERT_EQ(error(send(dma_map_message(i * 0x1000, 0x1000))), 0);
	EXPECT_EQ(error(send(dma_map_message(kOurs.max_dma_maps * 0x1000, 0x1000))), ENOSPC);
}

TEST_F(VfioUserDispatcher, DmaMapTheBackendRefusesLeavesNoRegion)
{
	negotiate();
	dev.map_error = ENOMEM;
	EXPECT_EQ(error(send(dma_map_message(0x1000, 0x1000), eventfds(1))), ENOMEM);
	EXPECT_EQ(d.dma().size(), 0u);
}

TEST_F(VfioUserDispatcher, DmaUnmapThatWouldCutAMapInTwoIsRefused)
{
	negotiate();
	ASSERT_EQ(error(send(dma_map_message(0x100000, 0x4000))), 0);
	EXPECT_EQ(error(send(dma_unmap_message(0x100000, 0x1000))), EINVAL);
	EXPECT_EQ(error(send(dma_unmap_message(0x101000, 0x3000))), EINVAL);
	EXPECT_EQ(error(send(dma_unmap_message(0xff000, 0x2000))), EINVAL);
	EXPECT_TRUE(dev.unmapped.empty());
	const Reply r = send(dma_unmap_message(0x100000, 0x4000));
	ASSERT_EQ(error(r), 0);
	const DmaUnmap echo = payload<DmaUnmap>(r);
	EXPECT_EQ(echo.address, 0x100000u);
	EXPECT_EQ(echo.size, 0x4000u);
	EXPECT_EQ(r.bytes.size(), sizeof(Header) + sizeof(DmaUnmap));  // no more than QEMU sent
	EXPECT_EQ(dev.unmapped, std::vector<uint64_t>{0x100000});
	EXPECT_EQ(d.dma().size(), 0u);
}

// QEMU 11.1.3 behind intel-iommu (caching-mode=on), when the guest turns
// translation on: power-of-two ranges over the whole address space, most
// holding no map, some several (seen with -trace 'vfio_user_*').
TEST_F(VfioUserDispatcher, DmaUnmapTakesEveryMapInsideItsRangeAsLinuxType1Does)
{
	negotiate();
	ASSERT_EQ(error(send(dma_map_message(0x0, 0xa0000))), 0);
	ASSERT_EQ(error(send(dma_map_message(0xc0000, 0x40000))), 0);
	ASSERT_EQ(error(send(dma_map_message(0x100000, 0x7ff00000))), 0);
	EXPECT_EQ(error(send(dma_unmap_message(0x800000000, 0x800000000))), 0);  // none in it
	EXPECT_TRUE(dev.unmapped.empty());
	EXPECT_EQ(error(send(dma_unmap_message(0x0, 0x80000000))), 0);
	EXPECT_EQ(dev.unmapped, (std::vector<uint64_t>{0x0, 0xc0000, 0x100000}));
	EXPECT_EQ(d.dma().size(), 0u);
	// The same memory can be mapped again at once, as the IOMMU's maps come.
	EXPECT_EQ(error(send(dma_map_message(0x1000, 0x1000))), 0);
}

TEST_F(VfioUserDispatcher, DmaUnmapAllAsQemuSendsItForAWholeSection)
{
	negotiate();
	ASSERT_EQ(error(send(dma_map_message(0x0, 0x1000))), 0);
	ASSERT_EQ(error(send(dma_map_message(0x100000, 0x1000))), 0);
	EXPECT_EQ(error(send(dma_unmap_message(0, 0, kUnmapAll))), 0);
	EXPECT_EQ(d.dma().size(), 0u);
	EXPECT_EQ(dev.unmapped.size(), 2u);
	EXPECT_EQ(error(send(dma_unmap_message(0x1000, 0, kUnmapAll))), EINVAL);
	EXPECT_EQ(error(send(dma_unmap_message(0, 0x1000, kUnmapAll))), EINVAL);
}

TEST_F(VfioUserDispatcher, DmaUnmapMalformedFormsAreRefused)
{
	negotiate();
	EXPECT_EQ(error(send(dma_unmap_message(0x1000, 0x1000, kUnmapDirtyBitmap))), ENOTSUP);
	EXPECT_EQ(error(send(dma_unmap_message(0x1000, 0x1000, 0x8))), EINVAL);
	EXPECT_EQ(error(send(dma_unmap_message(0x1000, 0))), EINVAL);
	EXPECT_EQ(error(send(dma_unmap_message(0x1800, 0x1000))), EINVAL);
	EXPECT_EQ(error(send(dma_unmap_message(0xfffffffffffff000, 0x2000))), EINVAL);
	EXPECT_EQ(error(send(dma_unmap_message(0x1000, 0x1000), eventfds(1))), EINVAL);
}

}  // namespace
}  // namespace aic100::vfio_user::test
