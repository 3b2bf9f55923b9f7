// SPDX-License-Identifier: GPL-2.0-or-later
// qaic::Manage without a card: the user-layout transactions it builds
// (contract §11.3), the limits it keeps, and how it decodes what the
// driver writes back.
#include <cerrno>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "fake_driver.h"
#include "manage.h"

namespace qaic {
namespace {

using test::as;
using test::FakeDriver;

TEST(ManageBuild, TransactionLayouts)
{
	Manage m;
	const uint8_t payload[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	static const char data[] = "data";
	m.status().passthrough(payload).dma_xfer(100, data, 5).activate(512, 7).deactivate(3);
	EXPECT_FALSE(m.overflowed());
	EXPECT_EQ(m.count(), 5u);
	EXPECT_EQ(m.length(), 8u + 24 + 32 + 24 + 16);

	const auto b = std::vector<uint8_t>(m.bytes().begin(), m.bytes().end());
	const auto st = as<qaic_manage_trans_status_to_dev>(b, 0);
	EXPECT_EQ(st.hdr.type, 12u);
	EXPECT_EQ(st.hdr.len, 8u);
	const auto pt = as<qaic_manage_trans_hdr>(b, 8);
	EXPECT_EQ(pt.type, 1u);
	EXPECT_EQ(pt.len, 24u);
	EXPECT_EQ(std::memcmp(b.data() + 16, payload, sizeof(payload)), 0);
	const auto dma = as<qaic_manage_trans_dma_xfer>(b, 32);
	EXPECT_EQ(dma.hdr.type, 5u);
	EXPECT_EQ(dma.hdr.len, 32u);
	EXPECT_EQ(dma.tag, 100u);
	EXPECT_EQ(dma.pad, 0u);
	EXPECT_EQ(dma.addr, reinterpret_cast<uintptr_t>(data));
	EXPECT_EQ(dma.size, 5u);
	const auto act = as<qaic_manage_trans_activate_to_dev>(b, 64);
	EXPECT_EQ(act.hdr.type, 7u);
	EXPECT_EQ(act.hdr.len, 24u);
	EXPECT_EQ(act.queue_size, 512u);
	EXPECT_EQ(act.eventfd, 0u);
	EXPECT_EQ(act.options, 7u);
	EXPECT_EQ(act.pad, 0u);
	const auto de = as<qaic_manage_trans_deactivate>(b, 88);
	EXPECT_EQ(de.hdr.type, 10u);
	EXPECT_EQ(de.hdr.len, 16u);
	EXPECT_EQ(de.dbc_id, 3u);
	EXPECT_EQ(de.pad, 0u);
}

TEST(ManageBuild, FillsExactly4096Bytes)
{
	Manage m;
	std::vector<uint8_t> p(4096 - 8);
	m.passthrough(p);
	EXPECT_FALSE(m.overflowed());
	EXPECT_EQ(m.length(), 4096u);
	m.status();
	EXPECT_TRUE(m.overflowed());
	EXPECT_EQ(m.length(), 4096u) << "an overflowing transaction must not be half-written";
	EXPECT_EQ(m.count(), 1u);
}

TEST(ManageBuild, OverflowRefusesToSend)
{
	FakeDriver drv;
	Manage m;
	std::vector<uint8_t> p(4096 - 7);
	m.passthrough(p);
	EXPECT_TRUE(m.overflowed());
	EXPECT_EQ(m.send(drv.ioctl()), -EMSGSIZE);
	EXPECT_EQ(drv.calls, 0u);
	m.clear();
	EXPECT_FALSE(m.overflowed());
	EXPECT_EQ(m.length(), 0u);
}

TEST(ManageBuild, AtMost512Transactions)
{
	Manage m;
	for (int i = 0; i < 512; i++)
		m.status();
	EXPECT_FALSE(m.overflowed());
	EXPECT_EQ(m.count(), 512u);
	EXPECT_EQ(m.length(), 4096u);
	m.raw(std::vector<uint8_t>{});
	EXPECT_TRUE(m.overflowed());
}

TEST(ManageBuild, RawIsUnchecked)
{
	Manage m;
	const uint32_t t[2] = {99, 4}; // unknown type, length below a header
	m.raw(std::span(reinterpret_cast<const uint8_t *>(t), sizeof(t)));
	EXPECT_EQ(m.length(), 8u);
	EXPECT_EQ(m.count(), 1u);
	EXPECT_EQ(as<qaic_manage_trans_hdr>(std::vector<uint8_t>(m.bytes().begin(), m.bytes().end())).type, 99u);
}

TEST(ManageSend, PassesLengthCountAndBuffer)
{
	FakeDriver drv;
	drv.add(qaic_manage_trans_status_from_dev{{14, 24}, 5, 0, 0, 1});
	Manage m;
	m.status();
	ASSERT_EQ(m.send(drv.ioctl()), 0);
	EXPECT_EQ(drv.len, 8u);
	EXPECT_EQ(drv.count, 1u);
	EXPECT_EQ(drv.request.size(), 8u);
	ASSERT_TRUE(m.reply().ok()) << m.reply().error;
	auto st = m.reply().status();
	ASSERT_TRUE(st);
	EXPECT_EQ(st->major, 5);
	EXPECT_EQ(st->minor, 0);
	EXPECT_EQ(st->status_flags, 1u);
	EXPECT_EQ(m.length(), 24u) << "the buffer holds the reply";
}

TEST(ManageSend, SendAsOverridesLengthAndCount)
{
	FakeDriver drv;
	drv.ret = -EINVAL;
	Manage m;
	m.status();
	EXPECT_EQ(m.send_as(drv.ioctl(), 4097, 513), -EINVAL);
	EXPECT_EQ(drv.len, 4097u);
	EXPECT_EQ(drv.count, 513u);
	EXPECT_TRUE(m.reply().transactions.empty());
}

TEST(ManageSend, ReplyKeptOnEcanceled)
{
	FakeDriver drv;
	drv.ret = -ECANCELED;
	drv.add(qaic_manage_trans_status_from_dev{{14, 24}, 5, 0, 4, 0});
	Manage m;
	m.status();
	EXPECT_EQ(m.send(drv.ioctl()), -ECANCELED);
	ASSERT_TRUE(m.reply().status());
	EXPECT_EQ(m.reply().status()->status, 4u);
}

TEST(ManageSend, ReplyNotDecodedOnOtherErrors)
{
	FakeDriver drv;
	drv.ret = -ENODEV;
	drv.add(qaic_manage_trans_status_from_dev{{14, 24}, 5, 0, 0, 0});
	Manage m;
	m.status();
	EXPECT_EQ(m.send(drv.ioctl()), -ENODEV);
	EXPECT_TRUE(m.reply().transactions.empty());
}

// ---- decoding ----------------------------------------------------------------

std::vector<uint8_t> concat(std::initializer_list<std::vector<uint8_t>> parts)
{
	std::vector<uint8_t> out;
	for (const auto &p : parts)
		out.insert(out.end(), p.begin(), p.end());
	return out;
}

template <typename T> std::vector<uint8_t> bytes(const T &v)
{
	const auto *p = reinterpret_cast<const uint8_t *>(&v);
	return {p, p + sizeof(v)};
}

std::vector<uint8_t> passthrough(uint32_t len)
{
	std::vector<uint8_t> p(len, 0xAB);
	const qaic_manage_trans_hdr h{3, len};
	std::memcpy(p.data(), &h, sizeof(h));
	return p;
}

TEST(ManageDecode, PassthroughThenActivate)
{
	const auto b = concat({passthrough(96), bytes(qaic_manage_trans_activate_from_dev{{8, 24}, 0, 5, 0})});
	const auto r = ManageReply::decode(b, static_cast<uint32_t>(b.size()), 2);
	ASSERT_TRUE(r.ok()) << r.error;
	ASSERT_EQ(r.transactions.size(), 2u);
	EXPECT_EQ(r.transactions[0].type, 3u);
	EXPECT_EQ(r.transactions[0].payload().size(), 88u);
	EXPECT_EQ(r.transactions[0].payload()[0], 0xAB);
	ASSERT_TRUE(r.activate());
	EXPECT_EQ(r.activate()->dbc_id, 5u);
	EXPECT_FALSE(r.status());
	EXPECT_EQ(r.find(3), &r.transactions[0]);
	EXPECT_EQ(r.find(3, 1), nullptr);
}

TEST(ManageDecode, DeactivateFromDev)
{
	const auto b = concat({passthrough(16), bytes(aic100::nnc::DeactivateFromDev{{11, 16}, 0, 9})});
	const auto r = ManageReply::decode(b, static_cast<uint32_t>(b.size()), 2);
	ASSERT_TRUE(r.ok()) << r.error;
	ASSERT_TRUE(r.deactivate());
	EXPECT_EQ(r.deactivate()->dbc_id, 9u);
}

TEST(ManageDecode, CountBeyondTheCopiedTransactions)
{
	// Upstream counts the DEACTIVATE_FROM_DEV it consumes without copying it.
	const auto b = passthrough(16);
	const auto r = ManageReply::decode(b, 16, 2);
	EXPECT_TRUE(r.ok()) << r.error;
	EXPECT_EQ(r.transactions.size(), 1u);
	EXPECT_EQ(r.count, 2u);
}

TEST(ManageDecode, EmptyReply)
{
	const auto r = ManageReply::decode({}, 0, 0);
	EXPECT_TRUE(r.ok()) << r.error;
	EXPECT_TRUE(r.transactions.empty());
}

TEST(ManageDecode, Rejects)
{
	const auto pt = passthrough(16);
	struct Case {
		const char *what;
		std::vector<uint8_t> buf;
		uint32_t len, count;
	} cases[] = {
		{"length beyond the buffer", pt, 17, 1},
		{"trailing bytes", concat({pt, std::vector<uint8_t>(8)}), 24, 1},
		{"half a header", concat({pt, std::vector<uint8_t>(4)}), 20, 2},
		{"transaction shorter than a header", bytes(qaic_manage_trans_hdr{3, 4}), 8, 1},
		{"transaction overrunning the reply", bytes(qaic_manage_trans_hdr{3, 16}), 8, 1},
		{"a request type", bytes(qaic_manage_trans_hdr{1, 8}), 8, 1},
		{"DMA_XFER_CONT", concat({bytes(qaic_manage_trans_hdr{18, 24}), std::vector<uint8_t>(16)}), 24, 1},
		{"short ACTIVATE_FROM_DEV", concat({bytes(qaic_manage_trans_hdr{8, 16}), std::vector<uint8_t>(8)}), 16,
		 1},
		{"short STATUS_FROM_DEV", bytes(qaic_manage_trans_hdr{14, 8}), 8, 1},
		{"short DEACTIVATE_FROM_DEV", bytes(qaic_manage_trans_hdr{11, 8}), 8, 1},
		{"count 0 with bytes", pt, 16, 0},
	};
	for (const auto &c : cases) {
		const auto r = ManageReply::decode(c.buf, c.len, c.count);
		EXPECT_FALSE(r.ok()) << c.what;
		EXPECT_FALSE(r.error.empty()) << c.what;
	}
}

TEST(ManageDecode, ShortPayloadIsNotRead)
{
	// A passthrough of only its header: the payload is empty, not garbage.
	const auto b = bytes(qaic_manage_trans_hdr{3, 8});
	const auto r = ManageReply::decode(b, 8, 1);
	ASSERT_TRUE(r.ok()) << r.error;
	EXPECT_TRUE(r.transactions[0].payload().empty());
	EXPECT_FALSE(r.activate());
}

} // namespace
} // namespace qaic
