// SPDX-License-Identifier: GPL-2.0-or-later
// NNC messages from the host side, over the miniature MHI host: what the
// qaic driver puts on QAIC_CONTROL for a user, and the replies taken apart.
// Shared by the QSM tests and the end-to-end data-path tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "aic100/device.h"
#include "aic100/nnc.h"
#include "fake_card.h"
#include "nnc_wire.h"

namespace aic100::test {

using namespace nnc;
using namespace nnc::cmd;

// zlib's CRC-32, written independently of the card's.
inline uint32_t ref_crc32(const std::vector<uint8_t> &m)
{
	uint32_t c = 0xFFFFFFFF;
	for (uint8_t b : m) {
		c ^= b;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
	}
	return ~c;
}

class NncHostTest : public CardTest<> {
protected:
	void SetUp() override { make({}); }
	// A card in AMSS with QAIC_CONTROL started and four reply buffers
	// posted.
	void make(DeviceConfig cfg)
	{
		cfg.boot_amss = true;
		cfg.nsp_count = cfg.nsp_count ? cfg.nsp_count : 16;
		new_card(cfg);
		ASSERT_NO_FATAL_FAILURE(online({10, 11}, 128));
		mhi->queue_dl(11, 4096, 4);
	}

	// Wire transactions the driver would build (nnc_wire.h).
	static NncTrans passthrough(std::vector<uint8_t> req) { return test::passthrough(std::move(req)); }
	NncTrans dma(uint32_t tag, const std::vector<uint8_t> &data, uint32_t chunk = 0)
	{
		const uint64_t addr = data.empty() ? 0 : mhi->alloc(data.size(), 64);
		if (!data.empty())
			mhi->put(addr, data.data(), data.size());
		return dma_xfer(tag, addr, data.size(), chunk);
	}
	static NncTrans activate_to_dev(uint32_t n = 512)
	{
		return test::activate_to_dev(0x80000000ull, n, (68 * n + 256 + 4095) & ~4095u);
	}

	// Lets the card take the passes it asks for (as QEMU's bottom half
	// does on a kick): a message's work may span several.
	void run_while_kicked()
	{
		for (unsigned seen = host.kicks, rounds = 0; rounds < 100000; rounds++) {
			mhi->settle();
			if (host.kicks == seen)
				return;
			seen = host.kicks;
		}
		ADD_FAILURE() << "the card kept asking for passes";
	}

	// Sends one message; returns the reply's transactions (empty if none).
	std::vector<NncTrans> send(const std::vector<NncTrans> &ts, uint32_t handle = 5, uint32_t partition = 0xFFFFFFFF,
				bool crc = false, bool corrupt = false)
	{
		const uint32_t sequence = seq++;
		std::vector<uint8_t> m = nnc_message(ts, sequence, handle, partition);
		if (crc) {
			const uint32_t crc32 = ref_crc32(m) ^ (corrupt ? 1 : 0);
			std::memcpy(m.data(), &crc32, 4);
		}
		std::vector<std::vector<uint8_t>> pieces{std::vector<uint8_t>(m.begin(), m.begin() + 32)};
		for (size_t off = 32; off < m.size();) {
			const size_t n = std::min<size_t>(4096, m.size() - off);
			pieces.emplace_back(m.begin() + off, m.begin() + off + n);
			off += n;
		}
		mhi->send(10, pieces);
		run_while_kicked();
		last = mhi->pop(11);
		std::vector<NncTrans> out;
		if (last.size() < 32)
			return out;
		const auto rh = as<Header>(last);
		EXPECT_EQ(rh.magic, kMagic);
		EXPECT_EQ(rh.sequence_number, sequence);
		EXPECT_EQ(rh.len, last.size());
		EXPECT_EQ(rh.handle, handle);
		size_t off = 32;
		for (uint32_t i = 0; i < rh.count && off + 8 <= last.size(); i++) {
			const auto th = as<TransHdr>(last, off);
			out.push_back({th.type, std::vector<uint8_t>(last.begin() + off, last.begin() + off + th.len)});
			off += th.len;
		}
		EXPECT_EQ(off, last.size()) << "transactions fill the reply";
		return out;
	}
	// One NNC command, answered by the first reply transaction's payload.
	std::vector<uint8_t> cmd(std::vector<uint8_t> req, uint32_t handle = 5, std::vector<NncTrans> more = {})
	{
		std::vector<NncTrans> ts{passthrough(std::move(req))};
		ts.insert(ts.end(), more.begin(), more.end());
		replies = send(ts, handle);
		if (replies.empty() || replies[0].type != kPassthroughFromDev)
			return {};
		EXPECT_EQ(replies[0].data.size() % 8, 0u);
		return std::vector<uint8_t>(replies[0].data.begin() + 8, replies[0].data.end());
	}
	ResourceInfo resources(int32_t group = -1, uint32_t handle = 5)
	{
		const auto r = cmd(raw(ResourceInfoReq{kResourceInfo, 0, group, 0}), handle);
		EXPECT_EQ(as<ResourceInfoResp>(r).type, kResourceInfoResp);
		return as<ResourceInfoResp>(r).info;
	}
	uint32_t load_elf(size_t n = 4096, uint32_t handle = 5, int32_t *status = nullptr)
	{
		LoadElfReq req{};
		req.type = kLoadElf;
		req.tag = kTagElf;
		std::strcpy(req.network_name, "NetworkImage");
		req.data_length = n;
		const auto r = as<LoadElfResp>(cmd(raw(req), handle, {dma(kTagElf, tiny_elf(n))}));
		EXPECT_EQ(r.type, kLoadElfResp);
		if (status)
			*status = r.status;
		else
			EXPECT_EQ(r.status, kOk);
		return r.elf_id;
	}
	ActivateResp activate(uint32_t elf, uint32_t consts = 0, uint32_t handle = 5, int32_t group = -1)
	{
		ActivateReq req{};
		req.type = kActivate;
		req.constants_id = consts;
		req.elf_id = elf;
		req.resource_res_id = group;
		req.vc_res_id = -1;
		req.opt_vc_setup = 1;
		req.initial_state = 1;
		return as<ActivateResp>(cmd(raw(req), handle, {activate_to_dev()}));
	}

	uint32_t seq = 100;
	std::vector<uint8_t> last;
	std::vector<NncTrans> replies;
};

} // namespace aic100::test
