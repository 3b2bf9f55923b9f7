// SPDX-License-Identifier: GPL-2.0-or-later
// The QSM against the miniature MHI host: NNC transport (framing, CRC, DMA
// continuations, terminate) and the command protocol 17.0 with the card's
// resources behind it.
#include <gtest/gtest.h>

#include <cstring>

#include "aic100/device.h"
#include "aic100/nnc.h"
#include "host_mhi.h"

namespace aic100::test {
namespace {

using namespace nnc;
using namespace nnc::cmd;

template <typename T> std::vector<uint8_t> raw(const T &v)
{
	std::vector<uint8_t> b(sizeof(T));
	std::memcpy(b.data(), &v, sizeof(T));
	return b;
}
template <typename T> T as(const std::vector<uint8_t> &b, size_t off = 0)
{
	T v{};
	std::memcpy(&v, b.data() + off, std::min(sizeof(T), b.size() - std::min(off, b.size())));
	return v;
}

// zlib's CRC-32, written independently of the card's.
uint32_t ref_crc32(const std::vector<uint8_t> &m)
{
	uint32_t c = 0xFFFFFFFF;
	for (uint8_t b : m) {
		c ^= b;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
	}
	return ~c;
}

// An ELF64 header with no sections: an image the card does not run itself.
std::vector<uint8_t> tiny_elf(size_t n, uint16_t machine = 164)
{
	std::vector<uint8_t> e(n, 0xAB);
	std::fill(e.begin() + 16, e.begin() + 64, 0);
	const uint8_t ident[] = {0x7F, 'E', 'L', 'F', 2, 1, 1};
	std::memcpy(e.data(), ident, sizeof(ident));
	e[18] = machine & 0xFF;
	e[19] = machine >> 8;
	return e;
}

struct Trans {
	uint32_t type;
	std::vector<uint8_t> data; // whole transaction, header included
};

class QsmTest : public ::testing::Test {
protected:
	void SetUp() override { make({}); }
	void make(DeviceConfig cfg)
	{
		cfg.boot_amss = true;
		cfg.nsp_count = cfg.nsp_count ? cfg.nsp_count : 16;
		dev = std::make_unique<Device>(host, cfg);
		mhi = std::make_unique<HostMhi>(host, *dev);
		mhi->ready_handshake();
		ASSERT_TRUE(mhi->start(10, 128));
		ASSERT_TRUE(mhi->start(11, 128));
		mhi->queue_dl(11, 4096, 4);
	}

	// Wire transactions the driver would build.
	static Trans passthrough(std::vector<uint8_t> req)
	{
		req.resize(req.size() + 8, 0); // the UMD's trailing 8 zero bytes
		Trans t{kPassthroughToDev, raw(TransHdr{kPassthroughToDev, static_cast<uint32_t>(8 + req.size())})};
		t.data.insert(t.data.end(), req.begin(), req.end());
		return t;
	}
	Trans dma(uint32_t tag, const std::vector<uint8_t> &data, uint32_t chunk = 0)
	{
		const uint64_t addr = data.empty() ? 0 : mhi->alloc(data.size(), 64);
		if (!data.empty())
			mhi->put(addr, data.data(), data.size());
		const uint32_t pairs = data.empty() ? 0 : 1;
		Trans t{kDmaXferToDev,
			raw(DmaXferToDev{{kDmaXferToDev, static_cast<uint32_t>(24 + 16 * pairs)}, tag, pairs, chunk, 0})};
		if (pairs) {
			auto p = raw(DmaPair{addr, data.size()});
			t.data.insert(t.data.end(), p.begin(), p.end());
		}
		return t;
	}
	static Trans activate_to_dev(uint32_t n = 512)
	{
		const uint32_t buf = (68 * n + 256 + 4095) & ~4095u;
		return {kActivateToDev, raw(ActivateToDev{{kActivateToDev, 40}, 0x80000000ull, 0x80000000ull + buf - 4 * n,
							  n, n, buf, 0})};
	}

	// Sends one message; returns the reply's transactions (empty if none).
	std::vector<Trans> send(const std::vector<Trans> &ts, uint32_t handle = 5, uint32_t partition = 0xFFFFFFFF,
				bool crc = false, bool corrupt = false)
	{
		std::vector<uint8_t> body;
		for (const auto &t : ts)
			body.insert(body.end(), t.data.begin(), t.data.end());
		Header h{0, kMagic, seq++, static_cast<uint32_t>(32 + body.size()), static_cast<uint32_t>(ts.size()),
			 handle, partition, 0};
		std::vector<uint8_t> m = raw(h);
		m.insert(m.end(), body.begin(), body.end());
		if (crc) {
			h.crc32 = ref_crc32(m) ^ (corrupt ? 1 : 0);
			std::memcpy(m.data(), &h.crc32, 4);
		}
		std::vector<std::vector<uint8_t>> pieces{std::vector<uint8_t>(m.begin(), m.begin() + 32)};
		for (size_t off = 32; off < m.size();) {
			const size_t n = std::min<size_t>(4096, m.size() - off);
			pieces.emplace_back(m.begin() + off, m.begin() + off + n);
			off += n;
		}
		mhi->send(10, pieces);
		last = mhi->pop(11);
		std::vector<Trans> out;
		if (last.size() < 32)
			return out;
		const auto rh = as<Header>(last);
		EXPECT_EQ(rh.magic, kMagic);
		EXPECT_EQ(rh.sequence_number, h.sequence_number);
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
	std::vector<uint8_t> cmd(std::vector<uint8_t> req, uint32_t handle = 5, std::vector<Trans> more = {})
	{
		std::vector<Trans> ts{passthrough(std::move(req))};
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

	FakeHost host;
	std::unique_ptr<Device> dev;
	std::unique_ptr<HostMhi> mhi;
	uint32_t seq = 100;
	std::vector<uint8_t> last;
	std::vector<Trans> replies;
};

TEST_F(QsmTest, StatusReportsProtocol17AndTheCardsRealState)
{
	const auto r = cmd(raw(StatusReq{kStatus, 0, {}}));
	ASSERT_EQ(r.size(), 504u) << "the 504-byte response";
	const auto s = as<StatusResp>(r);
	EXPECT_EQ(s.type, kStatusResp);
	EXPECT_EQ(s.status, kOk);
	EXPECT_EQ(s.format_version, 12);
	EXPECT_EQ(s.dev.nnc_major, 17);
	EXPECT_EQ(s.dev.nnc_minor, 0);
	EXPECT_EQ(s.dev.meta_ver_major, 1);
	EXPECT_EQ(s.dev.meta_ver_minor, 0);
	EXPECT_EQ(s.dev.hw_version >> 24, 0u) << "bits 31:24 zero, major in 23:16";
	EXPECT_EQ((s.dev.hw_version >> 16) & 0xFF, 2u);
	EXPECT_EQ(s.dev.nsp_pgmask, 0u) << "no defective NSP";
	EXPECT_EQ(s.dev.perf_info.dram_bw_kbps, 0u) << "an idle card moves nothing";
	EXPECT_EQ(s.dev.resource_info.nsp_total, 16);
	EXPECT_EQ(s.dev.resource_info.vc_total, 16);
	EXPECT_EQ(s.dev.resource_info.dram_total_mb, 16u * 1024);
	EXPECT_STREQ(s.dev.serial, "00C0FFEE");
	EXPECT_EQ(s.dev.sku_type, 3) << "PCIe Pro";
	EXPECT_EQ(s.dev.fw_qc_image_version[sizeof(s.dev.fw_qc_image_version) - 1], 0);
	EXPECT_EQ(s.dev.sbl_image_name[23], 0);
	EXPECT_EQ(replies.size(), 1u);

	const auto p = as<PerformanceInfoResp>(cmd(raw(PerformanceInfoReq{kPerformanceInfo, 0})));
	EXPECT_EQ(p.type, kPerformanceInfoResp);
	EXPECT_EQ(p.status, kOk);
	EXPECT_GT(p.info.nsp_frequency_hz, 0u);
}

TEST_F(QsmTest, ResourceTotalsFollowTheCardsProperties)
{
	DeviceConfig cfg;
	cfg.nsp_count = 4;
	cfg.ddr_size = 32ull << 30; // more than this machine has: DDR is sparse
	make(cfg);
	const auto i = resources();
	EXPECT_EQ(i.nsp_total, 4);
	EXPECT_EQ(i.nsp_free, 4);
	EXPECT_EQ(i.dram_total_mb, 32u * 1024);
	EXPECT_EQ(i.dram_free_mb, 32u * 1024);
	EXPECT_EQ(i.sem_total, 16u * 32);
	const auto s = as<StatusResp>(cmd(raw(StatusReq{kStatus, 0, {}})));
	EXPECT_EQ(s.dev.nsp_pgmask, 0xFFF0u) << "the NSPs this card lacks show as gated";
}

TEST_F(QsmTest, ProgramLifecycleReturnsEveryResource)
{
	const ResourceInfo before = resources();
	// Constants: descriptor, then the payload by DMA.
	std::vector<uint8_t> ex = raw(LoadConstantsExReq{kLoadConstantsEx, 0, "ConstantsDescriptor", 24, 0});
	auto desc = raw(ConstantsDescriptor{8192, 4096, 0, 0, {}});
	ex.insert(ex.end(), desc.begin(), desc.end());
	auto cr = as<LoadConstantsResp>(cmd(ex));
	ASSERT_EQ(cr.type, kLoadConstantsResp);
	ASSERT_EQ(cr.status, kOk);
	ASSERT_NE(cr.constants_id, 0u);
	const uint32_t consts = cr.constants_id;
	std::vector<uint8_t> blob(8192, 0x5A);
	auto pr = as<LoadConstantsResp>(
		cmd(raw(LoadConstantsPayloadReq{kLoadConstantsPayload, 0, kTagConstants, consts, 8192, 0}), 5,
		    {dma(kTagConstants, blob)}));
	EXPECT_EQ(pr.type, kLoadConstantsResp);
	EXPECT_EQ(pr.status, kOk);
	// Past the end of the area: refused.
	pr = as<LoadConstantsResp>(cmd(raw(LoadConstantsPayloadReq{kLoadConstantsPayload, 0, kTagConstants, consts,
								    8192, 8192}),
				       5, {dma(kTagConstants, blob)}));
	EXPECT_EQ(pr.status, kErrParameter);

	const uint32_t elf = load_elf();
	ASSERT_NE(elf, 0u);
	const auto a = activate(elf, consts);
	ASSERT_EQ(a.type, kActivateResp);
	ASSERT_EQ(a.status, kOk);
	ASSERT_EQ(replies.size(), 2u) << "passthrough, then ACTIVATE_FROM_DEV";
	const auto fd = as<ActivateFromDev>(replies[1].data);
	EXPECT_EQ(fd.hdr.type, kActivateFromDev);
	EXPECT_EQ(fd.status, 0u);
	EXPECT_EQ(fd.dbc_id, a.virtual_channel_id) << "the UMD uses the VC as the DBC";
	EXPECT_LT(a.virtual_channel_id, 16u);
	EXPECT_TRUE(dev->dma_bridge().active(a.virtual_channel_id));
	EXPECT_EQ(dev->dma_bridge().queues(a.virtual_channel_id).n, 512u);
	EXPECT_EQ(std::popcount(a.nsp_mask), 1);
	const ResourceInfo during = resources();
	EXPECT_EQ(during.vc_free, before.vc_free - 1);
	EXPECT_EQ(during.nsp_free, before.nsp_free - 1);
	EXPECT_EQ(during.sem_free, before.sem_free - 32);
	EXPECT_LT(during.dram_free_mb, before.dram_free_mb + 1);

	// In use: cannot be unloaded.
	EXPECT_EQ(as<StatusOnlyResp>(cmd(raw(IdReq{kUnloadElf, elf}))).status, kErrNotPermitted);
	EXPECT_EQ(as<StatusOnlyResp>(cmd(raw(IdReq{kUnloadConstants, consts}))).status, kErrNotPermitted);

	const auto d = as<StatusOnlyResp>(cmd(raw(DeactivateReq{kDeactivate, a.activation_id, 1, 0})));
	EXPECT_EQ(d.type, kDeactivateResp);
	EXPECT_EQ(d.status, kOk);
	ASSERT_EQ(replies.size(), 2u);
	EXPECT_EQ(as<DeactivateFromDev>(replies[1].data).dbc_id, a.virtual_channel_id);
	EXPECT_FALSE(dev->dma_bridge().active(a.virtual_channel_id));
	EXPECT_EQ(as<StatusOnlyResp>(cmd(raw(IdReq{kUnloadElf, elf}))).type, kUnloadElfResp);
	EXPECT_EQ(as<StatusOnlyResp>(cmd(raw(IdReq{kUnloadElf, elf}))).status, kErrNotFound);
	EXPECT_EQ(as<StatusOnlyResp>(cmd(raw(IdReq{kUnloadConstants, consts}))).status, kOk);
	const ResourceInfo after = resources();
	EXPECT_EQ(std::memcmp(&after, &before, sizeof(after)), 0);
}

TEST_F(QsmTest, CommandsCheckTheirArguments)
{
	int32_t st = 0;
	EXPECT_EQ(load_elf(4096, 5, &st), 1u);
	EXPECT_EQ(st, kOk);
	// Not an NSP ELF.
	LoadElfReq req{};
	req.type = kLoadElf;
	req.tag = kTagElf;
	req.data_length = 256;
	EXPECT_EQ(as<LoadElfResp>(cmd(raw(req), 5, {dma(kTagElf, tiny_elf(256, 62))})).status, kErrParameter);
	// Fewer DMA bytes than announced, or none.
	EXPECT_EQ(as<LoadElfResp>(cmd(raw(req), 5, {dma(kTagElf, tiny_elf(128))})).status, kErrDma);
	EXPECT_EQ(as<LoadElfResp>(cmd(raw(req))).status, kErrDma);
	// Activate: no FIFOs in the message, unknown ELF, unknown constants.
	ActivateReq a{};
	a.type = kActivate;
	a.elf_id = 1;
	a.initial_state = 1;
	EXPECT_EQ(as<ActivateResp>(cmd(raw(a))).status, kErrParameter);
	EXPECT_EQ(replies.size(), 1u) << "no ACTIVATE_FROM_DEV on failure";
	EXPECT_EQ(activate(999).status, kErrNotFound);
	EXPECT_EQ(activate(1, 777).status, kErrNotFound);
	// Unknown commands and truncated ones.
	EXPECT_EQ(as<StatusOnlyResp>(cmd(raw(IdReq{kDeviceConfig, 0}))).status, kErrUndefinedRequest);
	EXPECT_EQ(as<StatusOnlyResp>(cmd(raw(IdReq{kDeviceConfig, 0}))).type, kDeviceConfigResp);
	// A passthrough too short for its command (no UMD padding either).
	Trans shorty{kPassthroughToDev, raw(TransHdr{kPassthroughToDev, 16})};
	auto body = raw(uint32_t{kUnloadElf});
	body.resize(8, 0);
	shorty.data.insert(shorty.data.end(), body.begin(), body.end());
	shorty.data.resize(12); // hdr.len says 16, but make it a 4-byte command:
	std::memcpy(shorty.data.data() + 4, "\x0c\0\0\0", 4);
	auto sr = send({shorty});
	ASSERT_EQ(sr.size(), 1u);
	EXPECT_EQ(as<StatusOnlyResp>(sr[0].data, 8).status, kErrCommandLength);
	// Huge constants: the protocol's memory status.
	std::vector<uint8_t> ex = raw(LoadConstantsExReq{kLoadConstantsEx, 0, "big", 24, 0});
	auto desc = raw(ConstantsDescriptor{64ull << 30, 0, 0, 0, {}});
	ex.insert(ex.end(), desc.begin(), desc.end());
	EXPECT_EQ(as<LoadConstantsResp>(cmd(ex)).status, kErrMemory);
}

TEST_F(QsmTest, ObjectsBelongToTheirUser)
{
	const uint32_t elf = load_elf(4096, 5);
	EXPECT_EQ(activate(elf, 0, 6).status, kErrNotFound);
	EXPECT_EQ(as<StatusOnlyResp>(cmd(raw(IdReq{kUnloadElf, elf}), 6)).status, kErrNotFound);
	const auto a = activate(elf, 0, 5);
	ASSERT_EQ(a.status, kOk);
	EXPECT_EQ(as<StatusOnlyResp>(cmd(raw(DeactivateReq{kDeactivate, a.activation_id, 1, 0}), 6)).status,
		  kErrNotFound);
}

TEST_F(QsmTest, TerminateReleasesEverythingOfThatUserOnly)
{
	const ResourceInfo before = resources();
	const uint32_t mine = load_elf(4096, 7);
	ASSERT_EQ(activate(mine, 0, 7).status, kOk);
	ASSERT_EQ(activate(mine, 0, 7).status, kOk);
	const uint32_t theirs = load_elf(4096, 8);
	ASSERT_EQ(activate(theirs, 0, 8).status, kOk);
	EXPECT_EQ(resources().vc_free, before.vc_free - 3);

	auto r = send({{kTerminateToDev, raw(TerminateToDev{{kTerminateToDev, 16}, 7, 0})}}, 7, 0);
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(r[0].type, kTerminateFromDev);
	EXPECT_EQ(dev->boot().qsm().objects_of(7), 0u);
	EXPECT_EQ(dev->boot().qsm().objects_of(8), 2u);
	EXPECT_EQ(resources().vc_free, before.vc_free - 1);
	send({{kTerminateToDev, raw(TerminateToDev{{kTerminateToDev, 16}, 8, 0})}}, 8, 0);
	const ResourceInfo after = resources();
	EXPECT_EQ(std::memcmp(&after, &before, sizeof(after)), 0);
	for (unsigned d = 0; d < 16; d++)
		EXPECT_FALSE(dev->dma_bridge().active(d));
}

TEST_F(QsmTest, ExhaustionIsTheProtocolsStatus)
{
	const uint32_t elf = load_elf();
	std::vector<unsigned> dbcs;
	for (int i = 0; i < 16; i++) {
		const auto a = activate(elf);
		ASSERT_EQ(a.status, kOk) << i;
		dbcs.push_back(a.virtual_channel_id);
	}
	std::sort(dbcs.begin(), dbcs.end());
	EXPECT_EQ(std::unique(dbcs.begin(), dbcs.end()), dbcs.end()) << "16 distinct DBCs";
	EXPECT_EQ(activate(elf).status, kErrVcAlloc);

	DeviceConfig cfg;
	cfg.nsp_count = 2;
	make(cfg);
	const uint32_t e2 = load_elf();
	ASSERT_EQ(activate(e2).status, kOk);
	ASSERT_EQ(activate(e2).status, kOk);
	EXPECT_EQ(activate(e2).status, kErrNspAlloc);
}

TEST_F(QsmTest, ResourceGroupsCarveOutAndAccount)
{
	const ResourceInfo before = resources();
	CreateResourceGroupReq g{};
	g.type = kCreateResourceGroup;
	g.source_grp = -1;
	g.nsp = 2;
	g.vc = 1;
	g.sem = 32;
	g.mcid = 4;
	g.mem = 64ull << 20;
	const auto cr = as<CreateResourceGroupResp>(cmd(raw(g)));
	ASSERT_EQ(cr.type, kCreateResourceGroupResp);
	ASSERT_EQ(cr.status, kOk);
	const int32_t grp = cr.res_grp_id;
	EXPECT_GE(grp, 1);
	EXPECT_EQ(resources().nsp_free, before.nsp_free - 2);
	const ResourceInfo gi = resources(grp);
	EXPECT_EQ(gi.nsp_total, 2);
	EXPECT_EQ(gi.vc_total, 1);
	EXPECT_EQ(gi.dram_total_mb, 64u);

	// Allocations through the message's partition come from the group.
	LoadElfReq req{};
	req.type = kLoadElf;
	req.tag = kTagElf;
	req.data_length = 4096;
	auto ts = std::vector<Trans>{passthrough(raw(req)), dma(kTagElf, tiny_elf(4096))};
	auto r = send(ts, 5, static_cast<uint32_t>(grp));
	const uint32_t elf = as<LoadElfResp>(r[0].data, 8).elf_id;
	ASSERT_EQ(as<LoadElfResp>(r[0].data, 8).status, kOk);
	EXPECT_LT(resources(grp).dram_free_mb, 64u);
	ASSERT_EQ(activate(elf, 0, 5, grp).status, kOk);
	EXPECT_EQ(activate(elf, 0, 5, grp).status, kErrVcAlloc) << "the group has one VC";
	EXPECT_EQ(resources(grp).vc_free, 0);
	EXPECT_EQ(as<StatusOnlyResp>(cmd(raw(IdReq{kReleaseResourceGroup, static_cast<uint32_t>(grp)}))).status,
		  kErrNotPermitted);
	// A partition nobody created.
	r = send(ts, 5, 4242);
	EXPECT_EQ(as<LoadElfResp>(r[0].data, 8).status, kErrNotFound);
	// VALIDATE_PARTITION says which exist.
	r = send({{kValidatePartitionToDev, raw(ValidatePartitionToDev{{kValidatePartitionToDev, 16}, 
								       static_cast<uint32_t>(grp), 0})},
		  {kValidatePartitionToDev, raw(ValidatePartitionToDev{{kValidatePartitionToDev, 16}, 4242, 0})}});
	ASSERT_EQ(r.size(), 2u);
	EXPECT_EQ(as<ValidatePartitionFromDev>(r[0].data).status, 0u);
	EXPECT_EQ(as<ValidatePartitionFromDev>(r[1].data).status, 1u);
	// Terminating the creator frees the group with everything in it.
	send({{kTerminateToDev, raw(TerminateToDev{{kTerminateToDev, 16}, 5, 0})}}, 5, 0);
	const ResourceInfo after = resources();
	EXPECT_EQ(std::memcmp(&after, &before, sizeof(after)), 0);
}

TEST_F(QsmTest, DmaContinuationsAssembleOneLoad)
{
	const auto elf = tiny_elf(3000);
	LoadElfReq req{};
	req.type = kLoadElf;
	req.tag = kTagElf;
	req.data_length = elf.size();
	const std::vector<uint8_t> a(elf.begin(), elf.begin() + 1000), b(elf.begin() + 1000, elf.begin() + 2000),
		c(elf.begin() + 2000, elf.end());
	auto r = send({passthrough(raw(req)), dma(kTagElf, a, 9)});
	ASSERT_EQ(r.size(), 1u);
	ASSERT_EQ(r[0].type, kDmaXferCont);
	EXPECT_EQ(as<DmaXferCont>(r[0].data).dma_chunk_id, 9u);
	EXPECT_EQ(as<DmaXferCont>(r[0].data).xferred_size, 1000u);
	r = send({dma(kTagElf, b, 9)});
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(as<DmaXferCont>(r[0].data).xferred_size, 2000u);
	r = send({dma(kTagElf, c, 9)});
	ASSERT_EQ(r.size(), 1u) << "the held message's own reply";
	ASSERT_EQ(r[0].type, kPassthroughFromDev);
	const auto lr = as<LoadElfResp>(r[0].data, 8);
	EXPECT_EQ(lr.status, kOk);
	EXPECT_NE(lr.elf_id, 0u);

	// Abort: the held message is dropped and the abort gets an empty reply.
	r = send({passthrough(raw(req)), dma(kTagElf, a, 10)});
	ASSERT_EQ(r[0].type, kDmaXferCont);
	r = send({dma(0, {}, 10)});
	EXPECT_TRUE(r.empty());
	EXPECT_EQ(as<Header>(last).count, 0u);
	// A chunk nobody holds, and chunked DMA that no command consumes.
	r = send({dma(kTagElf, b, 11)});
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(as<StatusFromDev>(r[0].data).status, 5u);
	r = send({dma(kTagElf, b, 12)});
	EXPECT_EQ(as<StatusFromDev>(r[0].data).status, 5u);
}

TEST_F(QsmTest, CrcIsOfferedCheckedAndSignedWhenEnabled)
{
	DeviceConfig cfg;
	cfg.nnc_crc = true;
	make(cfg);
	auto r = send({{kStatusToDev, raw(TransHdr{kStatusToDev, 8})}}, 0, 0xFFFFFFFF, true);
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(as<StatusFromDev>(r[0].data).status_flags & kStatusFlagCrc, 1u);
	auto check = [this] {
		std::vector<uint8_t> m = last;
		const uint32_t got = as<uint32_t>(m);
		std::memset(m.data(), 0, 4);
		EXPECT_EQ(got, ref_crc32(m)) << "reply signed";
	};
	check();
	r = send({passthrough(raw(StatusReq{kStatus, 0, {}}))}, 5, 0xFFFFFFFF, true);
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(r[0].type, kPassthroughFromDev);
	check();
	r = send({passthrough(raw(StatusReq{kStatus, 0, {}}))}, 5, 0xFFFFFFFF, true, true);
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(as<StatusFromDev>(r[0].data).status, 2u) << "CRC mismatch refused";

	make({}); // CRC off: not offered, replies unsigned
	r = send({{kStatusToDev, raw(TransHdr{kStatusToDev, 8})}});
	EXPECT_EQ(as<StatusFromDev>(r[0].data).status_flags, 0u);
	EXPECT_EQ(as<uint32_t>(last), 0u);
}

TEST_F(QsmTest, RepliesNeverExceedFourKilobytes)
{
	// Eight STATUS commands would need 8 * 520 bytes.
	std::vector<Trans> ts;
	for (int i = 0; i < 8; i++)
		ts.push_back(passthrough(raw(StatusReq{kStatus, 0, {}})));
	auto r = send(ts);
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(as<StatusFromDev>(r[0].data).status, 4u);
	EXPECT_LE(last.size(), 4096u);
}

} // namespace
} // namespace aic100::test
