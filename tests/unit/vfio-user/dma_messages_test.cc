// SPDX-License-Identifier: GPL-2.0-or-later
// DMA_READ and DMA_WRITE as the server sends them, against a model of
// QEMU's client: its layout round-trips, the spec's arrives shifted.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "aic100/vfio_user.h"
#include "aic100/vfio_user/dma_messages.h"
#include "qemu_client_model.h"

namespace aic100::vfio_user {
namespace {

std::vector<uint8_t> pattern(size_t n, uint8_t first = 1)
{
	std::vector<uint8_t> v(n);
	std::iota(v.begin(), v.end(), first);
	return v;
}

TEST(VfioUserDmaMessages, QemuLayoutRoundTripsThroughQemusClient)
{
	test::QemuClientModel qemu;
	const auto data = pattern(100);
	const auto wreq = dma_write_request(7, 0x1000, data, DmaLayout::Qemu10);
	EXPECT_EQ(wreq.size(), kQemuDmaFixedSize + data.size());
	EXPECT_EQ(dma_write_reply(qemu.handle(wreq), 7, 0x1000, 100, DmaLayout::Qemu10), 0);
	EXPECT_TRUE(std::equal(data.begin(), data.end(), qemu.guest.begin() + 0x1000));

	std::vector<uint8_t> back(100);
	const auto rreq = dma_read_request(8, 0x1000, 100, DmaLayout::Qemu10);
	EXPECT_EQ(rreq.size(), kQemuDmaFixedSize);
	EXPECT_EQ(dma_read_reply(qemu.handle(rreq), 8, 0x1000, back, DmaLayout::Qemu10), 0);
	EXPECT_EQ(back, data);
}

// The spec's DMA_WRITE, read through QEMU's struct: the guest gets the
// count's upper half (4 zero bytes), then the data without its last 4.
TEST(VfioUserDmaMessages, SpecLayoutWriteLandsShiftedInQemu)
{
	test::QemuClientModel qemu;
	const auto data = pattern(16);
	const auto reply = qemu.handle(dma_write_request(1, 0x2000, data, DmaLayout::Spec));
	EXPECT_EQ(dma_write_reply(reply, 1, 0x2000, 16, DmaLayout::Spec), -1);  // header-only reply
	const std::vector<uint8_t> landed(qemu.guest.begin() + 0x2000, qemu.guest.begin() + 0x2010);
	std::vector<uint8_t> expect(4, 0);
	expect.insert(expect.end(), data.begin(), data.end() - 4);
	EXPECT_EQ(landed, expect);
}

// The spec's DMA_READ: QEMU's reply carries the data from payload offset
// 12, over the upper half of the count a spec server reads back.
TEST(VfioUserDmaMessages, SpecLayoutReadComesBackShiftedFromQemu)
{
	test::QemuClientModel qemu;
	const auto data = pattern(16);
	std::copy(data.begin(), data.end(), qemu.guest.begin() + 0x3000);
	std::vector<uint8_t> back(16);
	EXPECT_EQ(dma_read_reply(qemu.handle(dma_read_request(2, 0x3000, 16, DmaLayout::Spec)), 2, 0x3000, back,
				 DmaLayout::Spec),
		  -1);  // the count no longer matches
	// With 4 zero bytes first, the count survives and the shift goes unseen.
	std::fill_n(qemu.guest.begin() + 0x3000, 4, 0);
	EXPECT_EQ(dma_read_reply(qemu.handle(dma_read_request(3, 0x3000, 16, DmaLayout::Spec)), 3, 0x3000, back,
				 DmaLayout::Spec),
		  0);
	EXPECT_EQ(back[0], data[4]);
	EXPECT_EQ(back[15], 0);
}

TEST(VfioUserDmaMessages, ErrorRepliesGiveTheirErrno)
{
	test::QemuClientModel qemu;
	std::vector<uint8_t> back(16);
	EXPECT_EQ(dma_read_reply(qemu.handle(dma_read_request(4, 0xfff8, 16, DmaLayout::Qemu10)), 4, 0xfff8, back,
				 DmaLayout::Qemu10),
		  EFAULT);
	qemu.max_xfer = 8;
	EXPECT_EQ(dma_read_reply(qemu.handle(dma_read_request(5, 0, 16, DmaLayout::Qemu10)), 5, 0, back, DmaLayout::Qemu10),
		  E2BIG);
}

TEST(VfioUserDmaMessages, RepliesToAnotherRequestAreRefused)
{
	test::QemuClientModel qemu;
	std::vector<uint8_t> back(16);
	auto reply = qemu.handle(dma_read_request(6, 0, 16, DmaLayout::Qemu10));
	EXPECT_EQ(dma_read_reply(reply, 9, 0, back, DmaLayout::Qemu10), -1);       // id
	EXPECT_EQ(dma_read_reply(reply, 6, 0x10, back, DmaLayout::Qemu10), -1);    // address
	std::vector<uint8_t> shorter(8);
	EXPECT_EQ(dma_read_reply(reply, 6, 0, shorter, DmaLayout::Qemu10), -1);    // count
	EXPECT_EQ(dma_write_reply(reply, 6, 0, 16, DmaLayout::Qemu10), -1);        // command
	reply.pop_back();
	EXPECT_EQ(dma_read_reply(reply, 6, 0, back, DmaLayout::Qemu10), -1);       // size
	EXPECT_EQ(dma_read_reply(std::vector<uint8_t>(8), 6, 0, back, DmaLayout::Qemu10), -1);
}

}  // namespace
}  // namespace aic100::vfio_user
