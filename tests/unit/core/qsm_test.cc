// SPDX-License-Identifier: GPL-2.0-or-later
// The QSM against the miniature MHI host: NNC transport (framing, CRC, DMA
// continuations, terminate) and the command protocol 17.0 with the card's
// resources behind it.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <sys/resource.h>

#include <chrono>

#include <cstdio>
#include <cstring>

#include "aic100/nsp.h"
#include "common/alloc_budget.h"
#include "nnc_host.h"

namespace aic100::test {
namespace {

using namespace nnc;
using namespace nnc::cmd;

using QsmTest = NncHostTest;

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
	NncTrans shorty{kPassthroughToDev, raw(TransHdr{kPassthroughToDev, 16})};
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

// A host frees every DBC's queues when it sees SYS_ERR, before it resets
// MHI (Linux: status_cb(SYS_ERROR) runs first), and everything it gave the
// card when RESET clears. No DBC may still be writing to host memory then.
TEST_F(QsmTest, SysErrStopsEveryDbcBeforeTheHostCanSeeIt)
{
	const uint32_t elf = load_elf(4096, 7);
	const auto a = activate(elf, 0, 7);
	ASSERT_EQ(a.status, kOk);
	ASSERT_TRUE(dev->dma_bridge().active(a.virtual_channel_id));
	ASSERT_EQ(dev->inject("syserr"), "");
	EXPECT_EQ(mhi->r(regs::MHISTATUS) >> 8, 0xFFu);
	EXPECT_FALSE(dev->dma_bridge().active(a.virtual_channel_id));
}

TEST_F(QsmTest, MhiResetStopsEveryDbcBeforeRestClears)
{
	const uint32_t elf = load_elf(4096, 7);
	const auto a = activate(elf, 0, 7);
	ASSERT_EQ(a.status, kOk);
	mhi->w(regs::MHICTRL, mhi->r(regs::MHICTRL) | regs::MHICTRL_RESET);
	ASSERT_NE(mhi->r(regs::MHICTRL) & regs::MHICTRL_RESET, 0u);
	dev->process();
	EXPECT_EQ(mhi->r(regs::MHICTRL) & regs::MHICTRL_RESET, 0u);
	EXPECT_FALSE(dev->dma_bridge().active(a.virtual_channel_id));
}

TEST_F(QsmTest, SocResetStopsEveryDbcBeforeSysErrShows)
{
	const uint32_t elf = load_elf(4096, 7);
	const auto a = activate(elf, 0, 7);
	ASSERT_EQ(a.status, kOk);
	mhi->w(regs::MHI_SOC_RESET_REQ, 1);
	EXPECT_EQ(mhi->r(regs::MHISTATUS) >> 8, 2u) << "still M0 until the SoC reboots";
	EXPECT_TRUE(dev->dma_bridge().active(a.virtual_channel_id));
	dev->process();
	EXPECT_EQ(mhi->r(regs::MHISTATUS) >> 8, 0xFFu);
	EXPECT_FALSE(dev->dma_bridge().active(a.virtual_channel_id));
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
	auto ts = std::vector<NncTrans>{passthrough(raw(req)), dma(kTagElf, tiny_elf(4096))};
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

// CREATE_RESOURCE_GROUP as the UMD's qaic-device-partition sends it (the
// request with its trailing zero bytes, DDR in `l2region`: the UMD swaps it
// with `mem`), and RESOURCE_INFO of the device and of each group.
TEST_F(QsmTest, AGroupCarvedFromAGroupTakesNothingMoreFromTheDevice)
{
	auto umd_create_group = [this](int32_t source, uint32_t nsps) {
		CreateResourceGroupReq g{};
		g.type = kCreateResourceGroup;
		g.source_grp = source;
		g.nsp = nsps;
		g.l2region = 64ull << 20;
		return as<CreateResourceGroupResp>(cmd(raw(g)));
	};
	const auto g1 = umd_create_group(-1, 16);
	ASSERT_EQ(g1.status, kOk);
	const auto g2 = umd_create_group(g1.res_grp_id, 8);
	ASSERT_EQ(g2.status, kOk);
	EXPECT_EQ(resources().nsp_free, 0) << "G1 holds all 16; G2 is inside G1";
	EXPECT_EQ(resources().nsp_total, 16);
	EXPECT_EQ(resources(g1.res_grp_id).nsp_free, 8);
	EXPECT_EQ(resources(g2.res_grp_id).nsp_free, 8);
	EXPECT_EQ(umd_create_group(-1, 1).status, kErrNspAlloc) << "no NSP is left outside G1";
	EXPECT_EQ(umd_create_group(g1.res_grp_id, 9).status, kErrNspAlloc) << "G1 has 8 left";
	// Released in order, everything comes back once.
	EXPECT_EQ(as<StatusOnlyResp>(cmd(raw(IdReq{kReleaseResourceGroup, static_cast<uint32_t>(g2.res_grp_id)}))).status,
		  kOk);
	EXPECT_EQ(resources(g1.res_grp_id).nsp_free, 16);
	EXPECT_EQ(resources().nsp_free, 0);
	EXPECT_EQ(as<StatusOnlyResp>(cmd(raw(IdReq{kReleaseResourceGroup, static_cast<uint32_t>(g1.res_grp_id)}))).status,
		  kOk);
	EXPECT_EQ(resources().nsp_free, 16);
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
	std::vector<NncTrans> ts;
	for (int i = 0; i < 8; i++)
		ts.push_back(passthrough(raw(StatusReq{kStatus, 0, {}})));
	auto r = send(ts);
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(as<StatusFromDev>(r[0].data).status, 4u);
	EXPECT_LE(last.size(), 4096u);
}

// One DMA_XFER_TO_DEV: `size` bytes at host address `addr` for `tag`,
// under DMA chunk id `chunk`.
NncTrans tagged_dma(uint32_t tag, uint64_t addr, uint64_t size, uint32_t chunk)
{
	NncTrans t{kDmaXferToDev, raw(DmaXferToDev{{kDmaXferToDev, 24 + 16}, tag, 1, chunk, 0})};
	const auto p = raw(DmaPair{addr, size});
	t.data.insert(t.data.end(), p.begin(), p.end());
	return t;
}
// The same for ELF data.
NncTrans host_dma(uint64_t addr, uint64_t size, uint32_t chunk)
{
	return tagged_dma(kTagElf, addr, size, chunk);
}

// A LOAD_ELF that waits for more data than will ever come: its message
// stays held, with what its DMA_XFERs brought.
LoadElfReq held_load()
{
	LoadElfReq req{};
	req.type = kLoadElf;
	req.tag = kTagElf;
	req.data_length = 2ull << 30;
	return req;
}

TEST_F(QsmTest, DmaHeldForUnfinishedMessagesIsCappedForAllUsersTogether)
{
	// Each user may stage up to the cap, but the card holds no more than
	// the cap for everyone: the host chooses both the sizes and the users.
	constexpr uint64_t kBig = 0x80000000; // host memory that reads as zeros
	host.zero_from = kBig;
	LoadElfReq req{};
	req.type = kLoadElf;
	req.tag = kTagElf;
	req.data_length = 2ull << 30; // more than will ever arrive: the message stays held
	auto r = send({passthrough(raw(req)), host_dma(kBig, 600u << 20, 9)}, 5);
	ASSERT_EQ(r.size(), 1u);
	ASSERT_EQ(r[0].type, kDmaXferCont);
	r = send({passthrough(raw(req)), host_dma(kBig, 500u << 20, 9)}, 6);
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(as<StatusFromDev>(r[0].data).status, 4u) << "too large: the cap is shared";
	EXPECT_EQ(host.dma_read_bytes, 600ull << 20) << "refused before reading";
	// The first user gives up; the second now fits.
	r = send({dma(0, {}, 9)}, 5);
	EXPECT_TRUE(r.empty());
	r = send({passthrough(raw(req)), host_dma(kBig, 500u << 20, 9)}, 6);
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(r[0].type, kDmaXferCont);
	r = send({dma(0, {}, 9)}, 6);
	EXPECT_TRUE(r.empty());
}

// Handles are the host's to choose: 1024 users may each hold a message,
// the next one is refused before its DMA is read, and one giving up makes
// room again.
TEST_F(QsmTest, MessagesHeldAtOnceAreCapped)
{
	const auto elf = tiny_elf(3000);
	LoadElfReq req{};
	req.type = kLoadElf;
	req.tag = kTagElf;
	req.data_length = elf.size();
	constexpr uint64_t kZeros = 0x80000000; // host memory that reads as zeros, counted
	host.zero_from = kZeros;
	const NncTrans zeros = host_dma(kZeros, 100, 9);
	for (uint32_t user = 1; user <= Qsm::kMaxHeldMessages; user++) {
		auto r = send({passthrough(raw(req)), zeros}, user);
		ASSERT_EQ(r.size(), 1u);
		ASSERT_EQ(r[0].type, kDmaXferCont) << "user " << user;
	}
	const uint64_t read_before = host.dma_read_bytes;
	EXPECT_EQ(read_before, 100ull * Qsm::kMaxHeldMessages);
	auto r = send({passthrough(raw(req)), zeros}, 5000);
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(as<StatusFromDev>(r[0].data).status, 4u);
	EXPECT_EQ(host.dma_read_bytes, read_before) << "refused before reading";
	// A user that already holds one continues it.
	r = send({zeros}, 7);
	EXPECT_EQ(r[0].type, kDmaXferCont);
	r = send({dma(0, {}, 9)}, 1);
	EXPECT_TRUE(r.empty());
	r = send({passthrough(raw(req)), zeros}, 5000);
	EXPECT_EQ(r[0].type, kDmaXferCont);
}

// Bus addresses the host does not have: reading them fails.
constexpr uint64_t kHole = 1ull << 40;

TEST_F(QsmTest, DmaThatCannotBeReadCountsAgainstTheCapAllTheSame)
{
	std::vector<NncTrans> ts{passthrough(raw(held_load()))};
	for (uint32_t tag = 1; tag <= 2; tag++)
		ts.push_back(tagged_dma(tag, kHole, 600u << 20, 9));
	{
		test::AllocBudget budget(16u << 20);
		const auto r = send(ts, 5);
		ASSERT_EQ(r.size(), 1u);
		EXPECT_EQ(as<StatusFromDev>(r[0].data).status, 4u) << "1.2 GiB described: over the cap";
		EXPECT_FALSE(budget.exceeded()) << "refused before anything was allocated for it";
	}
	// One such tag fits, and the continuation reports every byte it
	// described (the host checks that), read or not.
	auto r = send({passthrough(raw(held_load())), tagged_dma(1, kHole, 600u << 20, 9)}, 5);
	ASSERT_EQ(r.size(), 1u);
	ASSERT_EQ(r[0].type, kDmaXferCont);
	EXPECT_EQ(as<DmaXferCont>(r[0].data).xferred_size, 600u << 20);
	// It holds its share of the cap.
	constexpr uint64_t kZeros = 0x80000000;
	host.zero_from = kZeros;
	r = send({passthrough(raw(held_load())), host_dma(kZeros, 500u << 20, 9)}, 6);
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(as<StatusFromDev>(r[0].data).status, 4u) << "the unread 600 MiB count";
	EXPECT_EQ(host.dma_read_bytes, 0u);
}

// The message (eight DMA_XFERs of 1 GiB each that the host cannot
// read, under one held MANAGE message), and the largest one that fits in
// 64 KiB: what the card's process holds at its peak.
TEST_F(QsmTest, UnreadableDmaHoldsNoMemory)
{
	auto peak_mib = [] {
		rusage u{};
		getrusage(RUSAGE_SELF, &u);
		return static_cast<uint64_t>(u.ru_maxrss) >> 10;
	};
	for (uint32_t tags : {8u, (64u * 1024 - 32 - 112) / 40}) {
		std::vector<NncTrans> ts{passthrough(raw(held_load()))};
		for (uint32_t tag = 1; tag <= tags; tag++)
			ts.push_back(tagged_dma(tag, kHole, 1ull << 30, 9));
		const uint64_t before = peak_mib();
		const auto r = send(ts, 5);
		const uint64_t grew = peak_mib() - before;
		std::printf("%u unreadable 1 GiB DMA_XFERs: peak RSS %llu MiB, +%llu MiB\n", tags,
			    static_cast<unsigned long long>(before + grew), static_cast<unsigned long long>(grew));
		ASSERT_EQ(r.size(), 1u);
		EXPECT_EQ(as<StatusFromDev>(r[0].data).status, 4u);
		EXPECT_LT(grew, 64u) << "MiB";
		if (HasFailure())
			return; // the larger message would take the machine's memory
	}
}

// ---- work per pass -------------------------------------------------------------

// A workload ELF of ours (docs/nsp.md), written here: a program that halts
// and one RW segment at 0 with `data`, zero-filled to `memsz`.
std::vector<uint8_t> halting_workload(uint64_t io_size, std::vector<uint8_t> data, uint64_t memsz)
{
	nsp::Meta m;
	m.version = nsp::kMetaVersion;
	m.nsp_count = 1;
	m.io_size = io_size;
	m.name = "halts";
	std::vector<uint8_t> f(64 + 56);
	auto append = [&f](const void *p, size_t n) {
		f.insert(f.end(), static_cast<const uint8_t *>(p), static_cast<const uint8_t *>(p) + n);
		return f.size() - n;
	};
	auto put = [&f](size_t off, uint64_t v, size_t n) { std::memcpy(&f[off], &v, n); };
	const auto meta = nsp::encode_meta(m);
	const size_t meta_off = append(meta.data(), meta.size());
	uint8_t halt[16];
	nsp::encode(nsp::Instr{static_cast<uint8_t>(nsp::Op::Halt), 0, 0, 0, 0, 0}, halt);
	const size_t text_off = append(halt, sizeof(halt));
	const size_t data_off = append(data.data(), data.size());
	const char names[] = "\0.aic.meta\0.aic.text\0.shstrtab";
	const size_t str_off = append(names, sizeof(names));
	f.resize((f.size() + 7) & ~size_t{7});
	const size_t shoff = f.size();
	f.resize(shoff + 4 * 64);
	const uint64_t sections[3][4] = {{1, 1, meta_off, meta.size()}, {11, 1, text_off, 16}, {21, 3, str_off, sizeof(names)}};
	for (size_t i = 0; i < 3; i++) {
		const size_t h = shoff + 64 * (i + 1);
		put(h, sections[i][0], 4);
		put(h + 4, sections[i][1], 4);
		put(h + 24, sections[i][2], 8);
		put(h + 32, sections[i][3], 8);
	}
	// The PT_LOAD (RW) at 0.
	put(64, 1, 4);
	put(68, 6, 4);
	put(72, data_off, 8);
	put(96, data.size(), 8);
	put(104, memsz, 8);
	// The ELF header: ELF64 LE, EM 164, program and section headers.
	std::memcpy(&f[0], "\x7f" "ELF\x02\x01\x01", 7);
	put(16, 2, 2);
	put(18, 164, 2);
	put(20, 1, 4);
	put(32, 64, 8);
	put(40, shoff, 8);
	put(52, 64 | 56u << 16 | 1ull << 32 | 64ull << 48, 8);
	put(60, 4 | 3u << 16, 4);
	return f;
}

class QsmPassTest : public NncHostTest {
protected:
	// Puts one message on QAIC_CONTROL and rings its doorbell, without
	// letting the card run.
	void queue(const std::vector<NncTrans> &ts, uint32_t handle = 5)
	{
		std::vector<uint8_t> body;
		for (const auto &t : ts)
			body.insert(body.end(), t.data.begin(), t.data.end());
		const Header h{0, kMagic, seq++, static_cast<uint32_t>(32 + body.size()), static_cast<uint32_t>(ts.size()),
			       handle, 0xFFFFFFFF, 0};
		std::vector<uint8_t> m = raw(h);
		m.insert(m.end(), body.begin(), body.end());
		const uint64_t at = mhi->alloc(m.size(), 8);
		mhi->put(at, m.data(), m.size());
		mhi->queue_ul(10, at, static_cast<uint32_t>(m.size()), 1);
	}
	// One pass of the card, as QEMU runs it under the BQL; its wall time.
	double pass_ms()
	{
		const auto t0 = std::chrono::steady_clock::now();
		dev->process();
		mhi->drain_events();
		return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
	}
	unsigned activations()
	{
		unsigned n = 0;
		for (unsigned dbc = 0; dbc < 16; dbc++)
			n += dev->boot().qsm().activation_on(dbc).has_value();
		return n;
	}
	ActivateReq activate_req(uint32_t elf)
	{
		ActivateReq req{};
		req.type = kActivate;
		req.elf_id = elf;
		req.resource_res_id = -1;
		req.vc_res_id = -1;
		req.opt_vc_setup = 1;
		req.initial_state = 1;
		return req;
	}
	uint32_t load_workload(const std::vector<uint8_t> &elf)
	{
		LoadElfReq req{};
		req.type = kLoadElf;
		req.tag = kTagElf;
		req.data_length = elf.size();
		const auto r = as<LoadElfResp>(cmd(raw(req), 5, {dma(kTagElf, elf)}));
		EXPECT_EQ(r.status, kOk);
		return r.elf_id;
	}
};

TEST_F(QsmPassTest, OnePassReadsAtMostSixtyFourMibOfAMessagesDma)
{
	constexpr uint64_t kZeros = 0x80000000;
	host.zero_from = kZeros;
	queue({passthrough(raw(held_load())), host_dma(kZeros, 256u << 20, 9)});
	pass_ms();
	EXPECT_LE(host.dma_read_bytes, 64u << 20) << "a 72-byte DMA_XFER may ask for 1 GiB";
	EXPECT_TRUE(mhi->rx[11].empty()) << "the reply waits for the rest";
	run_while_kicked();
	EXPECT_EQ(host.dma_read_bytes, 256u << 20);
	const auto r = mhi->pop(11);
	ASSERT_GE(r.size(), 32u + sizeof(DmaXferCont));
	EXPECT_EQ(as<TransHdr>(r, 32).type, kDmaXferCont);
	EXPECT_EQ(as<DmaXferCont>(r, 32).xferred_size, 256u << 20);
}

TEST_F(QsmPassTest, OnePassReadsLittleOfAMessagesDmaOutsideRam)
{
	// A DMA_XFER aimed at device registers (or unassigned space): QEMU
	// makes one access for every 1 to 8 bytes, so a byte there weighs 1024.
	constexpr uint64_t kRegs = 0x80000000;
	host.zero_from = host.not_ram_from = kRegs;
	queue({passthrough(raw(held_load())), host_dma(kRegs, 16u << 20, 9)});
	pass_ms();
	EXPECT_GT(host.dma_read_bytes, 0u);
	EXPECT_LE(host.dma_read_bytes, 64u << 10) << "64 MiB of budget at 1024 a byte";
	run_while_kicked();
	EXPECT_EQ(host.dma_read_bytes, 16u << 20) << "all of it, over later passes";
}

TEST_F(QsmPassTest, ActivationsOfOneMessageSpreadOverPassesAndAnswerInOrder)
{
	const uint32_t elf = load_elf();
	std::vector<NncTrans> ts{activate_to_dev()};
	for (int i = 0; i < 8; i++)
		ts.push_back(passthrough(raw(activate_req(elf))));
	queue(ts);
	pass_ms();
	EXPECT_LE(activations(), 4u) << "activations in one pass";
	EXPECT_TRUE(mhi->rx[11].empty());
	run_while_kicked();
	EXPECT_EQ(activations(), 8u);
	const auto r = mhi->pop(11);
	ASSERT_GE(r.size(), 32u);
	ASSERT_EQ(as<Header>(r).count, 16u);
	size_t off = 32;
	for (unsigned i = 0; i < 8; i++) {
		ASSERT_EQ(as<TransHdr>(r, off).type, kPassthroughFromDev);
		const auto a = as<ActivateResp>(r, off + 8);
		EXPECT_EQ(a.status, kOk);
		EXPECT_EQ(a.virtual_channel_id, i) << "in request order";
		off += as<TransHdr>(r, off).len;
		ASSERT_EQ(as<TransHdr>(r, off).type, kActivateFromDev);
		off += as<TransHdr>(r, off).len;
	}
}

TEST_F(QsmPassTest, MessagesQueuedBehindABusyOneWaitTheirTurn)
{
	constexpr uint64_t kZeros = 0x80000000;
	host.zero_from = kZeros;
	queue({passthrough(raw(held_load())), host_dma(kZeros, 256u << 20, 9)});
	queue({passthrough(raw(StatusReq{kStatus, 0, {}}))}, 6);
	run_while_kicked();
	const auto first = mhi->pop(11), second = mhi->pop(11);
	ASSERT_GE(first.size(), 32u);
	ASSERT_GE(second.size(), 32u);
	EXPECT_EQ(as<Header>(first).handle, 5u);
	EXPECT_EQ(as<Header>(second).handle, 6u);
	EXPECT_EQ(as<Header>(second).sequence_number, as<Header>(first).sequence_number + 1);
}

// The window of a new activation is zero already (DDR that was never
// written, or was released): its zero-filled part costs neither time nor
// host memory.
TEST_F(QsmPassTest, ActivationWritesOnlyTheSegmentsData)
{
	const uint64_t kWindow = 64u << 20;
	const uint32_t elf = load_workload(halting_workload(kWindow, {1, 2, 3, 4}, kWindow));
	const auto a = as<ActivateResp>(cmd(raw(activate_req(elf)), 5, {activate_to_dev()}));
	ASSERT_EQ(a.status, kOk);
	uint8_t *win = dev->ddr().span(a.ddr_base, kWindow);
	ASSERT_NE(win, nullptr);
	std::vector<unsigned char> pages(kWindow / 4096);
	ASSERT_EQ(mincore(win, kWindow, pages.data()), 0);
	size_t resident = 0;
	for (unsigned char p : pages)
		resident += p & 1;
	EXPECT_LE(resident, 1u) << "pages of the window in host memory";
	EXPECT_EQ(std::memcmp(win, "\1\2\3\4\0\0", 6), 0);
	EXPECT_EQ(win[kWindow - 1], 0);
}

// The worst message: ACTIVATE/DEACTIVATE pairs of a workload whose
// 4 GiB window is all zero-fill, as many as 64 KiB holds.
TEST_F(QsmPassTest, AMessageOfHundredsOfActivationsRunsInShortPasses)
{
	constexpr uint64_t k4G = 4ull << 30;
	const uint32_t elf = load_workload(halting_workload(k4G, {1}, k4G));
	// The header, ACTIVATE_TO_DEV, then 64 + 32 bytes a pair.
	const unsigned pairs = (kMaxRequest - 32 - 40) / 96;
	std::vector<NncTrans> ts{activate_to_dev()};
	for (uint32_t id = 1; id <= pairs; id++) { // activation ids count from 1 on a fresh card
		ts.push_back(passthrough(raw(activate_req(elf))));
		ts.push_back(passthrough(raw(DeactivateReq{kDeactivate, id, 1, 0})));
	}
	const ResourceInfo before = resources();
	queue(ts);
	double longest = 0;
	unsigned passes = 0;
	for (; mhi->rx[11].empty() && passes < 100000; passes++)
		longest = std::max(longest, pass_ms());
	std::printf("%u ACTIVATE/DEACTIVATE pairs of a 4 GiB window: %u passes, longest %.1f ms\n", pairs, passes,
		    longest);
	ASSERT_FALSE(mhi->rx[11].empty());
	EXPECT_EQ(as<StatusFromDev>(mhi->pop(11), 32).status, 4u) << "the reply would exceed 4 KiB";
	EXPECT_EQ(activations(), 0u);
	const ResourceInfo after = resources();
	EXPECT_EQ(std::memcmp(&after, &before, sizeof(after)), 0) << "every pair gave back what it took";
	EXPECT_LT(longest, 1000.0) << "ms (about 10 expected; a 4 GiB memset takes seconds)";
}

// A PCI reset restarts the firmware as power-on does: the ids it hands out
// start again from 1, so what a host sees after a reset does not depend on
// what ran before it (QEMU's generic-fuzz resets the machine between
// inputs, and its seeds name the ids a fresh card gives).
// A group of one NSP, VC, semaphore and MCID from the free pool.
CreateResourceGroupReq smallest_group()
{
	CreateResourceGroupReq g{};
	g.type = kCreateResourceGroup;
	g.source_grp = -1;
	g.nsp = g.mcid = g.sem = g.vc = 1;
	return g;
}

TEST_F(QsmTest, APciResetRestartsTheIdsAFreshCardHandsOut)
{
	const uint32_t first = load_elf();
	ASSERT_EQ(first, 1u);
	const CreateResourceGroupResp g =
		as<CreateResourceGroupResp>(cmd(raw(smallest_group())));
	ASSERT_EQ(g.status, kOk);
	dev->reset();
	new_host();
	ASSERT_NO_FATAL_FAILURE(online({10, 11}, 128));
	mhi->queue_dl(11, 4096, 4);
	EXPECT_EQ(load_elf(), first) << "the first ELF after the reset";
	const CreateResourceGroupResp again =
		as<CreateResourceGroupResp>(cmd(raw(smallest_group())));
	EXPECT_EQ(again.res_grp_id, g.res_grp_id) << "the first resource group after the reset";
}

} // namespace
} // namespace aic100::test
