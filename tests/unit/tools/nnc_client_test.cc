// SPDX-License-Identifier: GPL-2.0-or-later
// qaic::Nnc without a card: the requests it sends (as the UMD sends them,
// umd-nnc-protocol.md §1 and §3) and how it reads the answers, against a
// fake driver.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "fake_driver.h"
#include "nnc_client.h"

namespace qaic {
namespace {

using namespace aic100::nnc::cmd;
using test::as;
using test::FakeDriver;

// The request carried by the n-th transaction, a passthrough.
std::vector<uint8_t> request_of(const FakeDriver &drv, size_t n = 0)
{
	auto t = drv.transaction(n);
	EXPECT_GE(t.size(), 8u);
	EXPECT_EQ(as<qaic_manage_trans_hdr>(t).type, 1u) << "transaction " << n << " is not a passthrough";
	return t.size() >= 8 ? std::vector<uint8_t>(t.begin() + 8, t.end()) : t;
}

// The UMD's passthrough: the request, then 8 zero bytes.
void expect_umd_sizing(const std::vector<uint8_t> &payload, size_t request_size)
{
	EXPECT_EQ(payload.size(), request_size + 8);
	for (size_t i = request_size; i < payload.size(); i++)
		EXPECT_EQ(payload[i], 0) << "byte " << i;
}

TEST(NncPayload, RequestThen8ZeroBytes)
{
	const std::vector<uint8_t> req(96, 0xFF);
	const auto p = Nnc::payload_of(req);
	EXPECT_EQ(p.size(), 104u);
	EXPECT_EQ(std::count(p.begin(), p.begin() + 96, 0xFF), 96);
	EXPECT_EQ(Nnc::payload_of(std::vector<uint8_t>(13)).size(), 24u) << "rounded to a multiple of 8";
}

TEST(NncStatus, RequestAndFields)
{
	FakeDriver drv;
	StatusResp resp{};
	resp.type = kStatusResp;
	resp.format_version = 12;
	resp.dev.nnc_major = 17;
	resp.dev.hw_version = 0x00020000;
	std::strcpy(resp.dev.serial, "0000CAFE");
	drv.add_passthrough(resp, 16);
	Nnc nnc(drv.ioctl());
	const auto r = nnc.status();
	EXPECT_TRUE(r.ok()) << r.describe();
	EXPECT_EQ(r.describe(), "ok");
	EXPECT_EQ(r.resp.dev.nnc_major, 17);
	EXPECT_EQ(r.resp.dev.hw_version, 0x00020000u);
	EXPECT_STREQ(r.resp.dev.serial, "0000CAFE");
	EXPECT_EQ(drv.count, 1u);
	EXPECT_EQ(drv.len, 24u) << "STATUS travels in a 24-byte passthrough";
	const auto p = request_of(drv);
	expect_umd_sizing(p, sizeof(StatusReq));
	EXPECT_EQ(as<StatusReq>(p).type, kStatus);
	EXPECT_EQ(as<StatusReq>(p).info_type, 0);
}

TEST(NncStatus, WrongResponseType)
{
	FakeDriver drv;
	drv.add_passthrough(StatusOnlyResp{kResourceInfoResp, 0});
	Nnc nnc(drv.ioctl());
	const auto r = nnc.status();
	EXPECT_FALSE(r.ok());
	EXPECT_FALSE(r.answered);
	EXPECT_NE(r.problem.find("response type 33, want 14"), std::string::npos) << r.problem;
	EXPECT_EQ(r.describe().rfind("error protocol: ", 0), 0u) << r.describe();
}

TEST(NncStatus, ShortResponse)
{
	FakeDriver drv;
	drv.add_passthrough(StatusOnlyResp{kStatusResp, 0});
	Nnc nnc(drv.ioctl());
	const auto r = nnc.status();
	EXPECT_TRUE(r.answered);
	EXPECT_FALSE(r.ok());
	EXPECT_NE(r.problem.find("want 504"), std::string::npos) << r.problem;
}

TEST(NncStatus, FirstTransactionMustBeThePassthrough)
{
	FakeDriver drv;
	drv.add(qaic_manage_trans_status_from_dev{{14, 24}, 5, 0, 0, 0});
	drv.add_passthrough(StatusResp{kStatusResp, 0, 12, {}, {}, {}});
	Nnc nnc(drv.ioctl());
	const auto r = nnc.status();
	EXPECT_FALSE(r.ok());
	EXPECT_NE(r.problem.find("not a passthrough"), std::string::npos) << r.problem;
}

TEST(NncStatus, IoctlErrors)
{
	FakeDriver drv;
	drv.ret = -ENODEV;
	Nnc nnc(drv.ioctl());
	auto r = nnc.status();
	EXPECT_EQ(r.err, -ENODEV);
	EXPECT_EQ(r.describe(), "error errno=ENODEV");

	drv.ret = -ECANCELED;
	drv.add(qaic_manage_trans_status_from_dev{{14, 24}, 5, 0, 4, 0});
	r = nnc.status();
	EXPECT_EQ(r.err, -ECANCELED);
	EXPECT_FALSE(r.answered);
	EXPECT_EQ(r.describe(), "error errno=ECANCELED (device status 4)");
	ASSERT_TRUE(r.reply.status()) << "the reply is kept on -ECANCELED";
}

TEST(NncResourceInfo, StatusAt48)
{
	FakeDriver drv;
	ResourceInfoResp resp{};
	resp.type = kResourceInfoResp;
	resp.res_grp_id = 7;
	resp.status = kErrNotFound;
	drv.add_passthrough(resp);
	Nnc nnc(drv.ioctl());
	const auto r = nnc.resource_info(7);
	EXPECT_TRUE(r.answered);
	EXPECT_EQ(r.status, -11);
	EXPECT_EQ(r.describe(), "error nnc=-11 (not found)");
	const auto p = request_of(drv);
	expect_umd_sizing(p, sizeof(ResourceInfoReq));
	EXPECT_EQ(as<ResourceInfoReq>(p).type, kResourceInfo);
	EXPECT_EQ(as<ResourceInfoReq>(p).res_grp_id, 7);
}

TEST(NncPerformanceInfo, Fields)
{
	FakeDriver drv;
	PerformanceInfoResp resp{};
	resp.type = kPerformanceInfoResp;
	resp.info.nsp_frequency_hz = 1'450'000'000;
	drv.add_passthrough(resp);
	Nnc nnc(drv.ioctl());
	const auto r = nnc.performance_info();
	EXPECT_TRUE(r.ok()) << r.describe();
	EXPECT_EQ(r.resp.info.nsp_frequency_hz, 1'450'000'000u);
	expect_umd_sizing(request_of(drv), sizeof(PerformanceInfoReq));
}

TEST(NncLoad, ElfRidesOnDmaTag100)
{
	FakeDriver drv;
	drv.add_passthrough(LoadElfResp{kLoadElfResp, 7, 0, 0}, 104);
	Nnc nnc(drv.ioctl());
	const std::vector<uint8_t> image(4096, 0x5A);
	const auto r = nnc.load_elf(image);
	EXPECT_TRUE(r.ok()) << r.describe();
	EXPECT_EQ(r.id, 7u);
	EXPECT_EQ(drv.count, 2u);
	const auto pt = drv.transaction(0);
	EXPECT_EQ(as<qaic_manage_trans_hdr>(pt).len, 112u) << "LOAD_ELF travels in a 112-byte passthrough";
	const auto req = as<LoadElfReq>(request_of(drv));
	EXPECT_EQ(req.type, kLoadElf);
	EXPECT_EQ(req.tag, 100u);
	EXPECT_EQ(req.data_length, 4096u);
	EXPECT_STREQ(req.network_name, "NetworkImage");
	const auto dma = as<qaic_manage_trans_dma_xfer>(drv.transaction(1));
	EXPECT_EQ(dma.hdr.type, 5u);
	EXPECT_EQ(dma.tag, 100u);
	EXPECT_EQ(dma.addr, reinterpret_cast<uintptr_t>(image.data()));
	EXPECT_EQ(dma.size, 4096u);
}

TEST(NncLoad, ElfStatusAt8)
{
	FakeDriver drv;
	drv.add_passthrough(LoadElfResp{kLoadElfResp, 0, kErrParameter, 0});
	Nnc nnc(drv.ioctl());
	const auto r = nnc.load_elf(std::vector<uint8_t>(64));
	EXPECT_EQ(r.status, -6);
	EXPECT_EQ(r.describe(), "error nnc=-6 (parameter)");
}

TEST(NncLoad, PlainConstantsOnTag300)
{
	FakeDriver drv;
	drv.add_passthrough(LoadConstantsResp{kLoadConstantsResp, 3, 0, 0});
	Nnc nnc(drv.ioctl());
	const std::vector<uint8_t> data(100);
	const auto r = nnc.load_constants(data);
	EXPECT_TRUE(r.ok()) << r.describe();
	EXPECT_EQ(r.id, 3u);
	const auto p = request_of(drv);
	expect_umd_sizing(p, sizeof(LoadConstantsReq));
	const auto req = as<LoadConstantsReq>(p);
	EXPECT_EQ(req.type, kLoadConstants);
	EXPECT_EQ(req.tag, 300u);
	EXPECT_EQ(req.data_length, 100u);
	EXPECT_EQ(as<qaic_manage_trans_dma_xfer>(drv.transaction(1)).tag, 300u);
}

TEST(NncLoad, ConstantsExCarriesTheDescriptor)
{
	FakeDriver drv;
	drv.add_passthrough(LoadConstantsResp{kLoadConstantsResp, 4, 0, 0});
	Nnc nnc(drv.ioctl());
	const auto r = nnc.load_constants_ex(1 << 20, 4096);
	EXPECT_TRUE(r.ok()) << r.describe();
	EXPECT_EQ(r.id, 4u);
	EXPECT_EQ(drv.count, 1u) << "PT only";
	const auto p = request_of(drv);
	expect_umd_sizing(p, sizeof(LoadConstantsExReq) + sizeof(ConstantsDescriptor));
	const auto req = as<LoadConstantsExReq>(p);
	EXPECT_EQ(req.type, kLoadConstantsEx);
	EXPECT_EQ(req.descriptor_len, 24u);
	EXPECT_STREQ(req.name, "ConstantsDescriptor");
	const auto d = as<ConstantsDescriptor>(p, sizeof(LoadConstantsExReq));
	EXPECT_EQ(d.static_size, 1u << 20);
	EXPECT_EQ(d.dynamic_size, 4096u);
}

TEST(NncLoad, PayloadAtOffset)
{
	FakeDriver drv;
	drv.add_passthrough(LoadConstantsResp{kLoadConstantsResp, 4, 0, 0});
	Nnc nnc(drv.ioctl());
	const std::vector<uint8_t> data(64);
	const auto r = nnc.load_constants_payload(4, 4096, data);
	EXPECT_TRUE(r.ok()) << r.describe();
	const auto req = as<LoadConstantsPayloadReq>(request_of(drv));
	EXPECT_EQ(req.type, kLoadConstantsPayload);
	EXPECT_EQ(req.tag, 300u);
	EXPECT_EQ(req.constants_id, 4u);
	EXPECT_EQ(req.data_length, 64u);
	EXPECT_EQ(req.offset, 4096u);
	EXPECT_EQ(as<qaic_manage_trans_dma_xfer>(drv.transaction(1)).size, 64u);
}

ActivateResp activate_resp(int32_t status, uint32_t vc)
{
	ActivateResp a{};
	a.type = kActivateResp;
	a.status = status;
	a.activation_id = 1;
	a.virtual_channel_id = vc;
	a.ddr_base = 0x1000;
	a.nsp_mask = 1;
	return a;
}

TEST(NncActivate, PassthroughPlusActivateTransaction)
{
	FakeDriver drv;
	drv.add_passthrough(activate_resp(0, 3));
	drv.add(qaic_manage_trans_activate_from_dev{{8, 24}, 0, 3, 0});
	Nnc nnc(drv.ioctl());
	const auto r = nnc.activate(2, 5, 256, 9);
	EXPECT_TRUE(r.ok()) << r.describe();
	EXPECT_EQ(r.activation_id, 1u);
	EXPECT_EQ(r.dbc_id, 3u);
	EXPECT_EQ(r.ddr_base, 0x1000u);
	ASSERT_TRUE(r.from_dev);
	EXPECT_EQ(drv.count, 2u);
	const auto p = request_of(drv);
	expect_umd_sizing(p, sizeof(ActivateReq));
	const auto req = as<ActivateReq>(p);
	EXPECT_EQ(req.type, kActivate);
	EXPECT_EQ(req.elf_id, 2u);
	EXPECT_EQ(req.constants_id, 5u);
	EXPECT_EQ(req.resource_res_id, 9);
	EXPECT_EQ(req.vc_res_id, -1);
	EXPECT_EQ(req.opt_vc_setup, 1u);
	EXPECT_EQ(req.initial_state, 1u);
	const auto act = as<qaic_manage_trans_activate_to_dev>(drv.transaction(1));
	EXPECT_EQ(act.hdr.type, 7u);
	EXPECT_EQ(act.queue_size, 256u);
}

TEST(NncActivate, MissingActivateFromDev)
{
	FakeDriver drv;
	drv.add_passthrough(activate_resp(0, 3));
	Nnc nnc(drv.ioctl());
	const auto r = nnc.activate(2);
	EXPECT_FALSE(r.ok());
	EXPECT_NE(r.problem.find("ACTIVATE_FROM_DEV"), std::string::npos) << r.problem;
}

TEST(NncActivate, DbcMustBeTheVc)
{
	FakeDriver drv;
	drv.add_passthrough(activate_resp(0, 3));
	drv.add(qaic_manage_trans_activate_from_dev{{8, 24}, 0, 4, 0});
	Nnc nnc(drv.ioctl());
	const auto r = nnc.activate(2);
	EXPECT_FALSE(r.ok());
	EXPECT_NE(r.problem.find("dbc 4"), std::string::npos) << r.problem;
}

TEST(NncActivate, ActivateFromDevMustFollow)
{
	FakeDriver drv;
	drv.add(qaic_manage_trans_activate_from_dev{{8, 24}, 0, 3, 0});
	drv.add_passthrough(activate_resp(0, 3));
	Nnc nnc(drv.ioctl());
	EXPECT_FALSE(nnc.activate(2).ok());
}

TEST(NncActivate, RefusedByTheCard)
{
	FakeDriver drv;
	drv.add_passthrough(activate_resp(kErrVcAlloc, 0));
	Nnc nnc(drv.ioctl());
	const auto r = nnc.activate(2);
	EXPECT_EQ(r.status, -14);
	EXPECT_TRUE(r.problem.empty()) << r.problem;
	EXPECT_EQ(r.describe(), "error nnc=-14 (VC allocation)");
}

TEST(NncDeactivate, WithAndWithoutTeardown)
{
	FakeDriver drv;
	drv.add_passthrough(StatusOnlyResp{kDeactivateResp, 0}, 24);
	Nnc nnc(drv.ioctl());
	EXPECT_TRUE(nnc.deactivate(6, 3u).ok());
	EXPECT_EQ(drv.count, 2u);
	auto req = as<DeactivateReq>(request_of(drv));
	EXPECT_EQ(req.type, kDeactivate);
	EXPECT_EQ(req.activation_id, 6u);
	EXPECT_EQ(req.opt_vc_teardown, 1u);
	const auto de = as<qaic_manage_trans_deactivate>(drv.transaction(1));
	EXPECT_EQ(de.hdr.type, 10u);
	EXPECT_EQ(de.dbc_id, 3u);

	EXPECT_TRUE(nnc.deactivate(6, std::nullopt).ok());
	EXPECT_EQ(drv.count, 1u);
	req = as<DeactivateReq>(request_of(drv));
	EXPECT_EQ(req.opt_vc_teardown, 0u);
}

TEST(NncUnload, TypesAndIds)
{
	FakeDriver drv;
	drv.add_passthrough(StatusOnlyResp{kUnloadElfResp, kErrNotPermitted});
	Nnc nnc(drv.ioctl());
	auto r = nnc.unload_elf(12);
	EXPECT_EQ(r.describe(), "error nnc=-9 (not permitted)");
	auto req = as<IdReq>(request_of(drv));
	EXPECT_EQ(req.type, kUnloadElf);
	EXPECT_EQ(req.id, 12u);
	expect_umd_sizing(request_of(drv), sizeof(IdReq));

	drv.reply.clear();
	drv.reply_count = 0;
	drv.add_passthrough(StatusOnlyResp{kUnloadConstantsResp, 0});
	EXPECT_TRUE(nnc.unload_constants(13).ok());
	EXPECT_EQ(as<IdReq>(request_of(drv)).type, kUnloadConstants);
	// The answer to the other command is not taken for this one.
	EXPECT_FALSE(nnc.unload_elf(13).ok());
}

TEST(NncGroups, CreateAndRelease)
{
	FakeDriver drv;
	drv.add_passthrough(CreateResourceGroupResp{kCreateResourceGroupResp, 0, 2, 0});
	Nnc nnc(drv.ioctl());
	GroupSpec g;
	g.nsp = 2;
	g.vc = 3;
	g.sem = 64;
	g.mcid = 3;
	g.mem = 256 << 20;
	const auto r = nnc.create_resource_group(g);
	EXPECT_TRUE(r.ok()) << r.describe();
	EXPECT_EQ(r.id, 2);
	const auto req = as<CreateResourceGroupReq>(request_of(drv));
	EXPECT_EQ(req.type, kCreateResourceGroup);
	EXPECT_EQ(req.source_grp, -1);
	EXPECT_EQ(req.nsp, 2u);
	EXPECT_EQ(req.vc, 3u);
	EXPECT_EQ(req.sem, 64u);
	EXPECT_EQ(req.mcid, 3u);
	EXPECT_EQ(req.mem, 256u << 20);

	drv.reply.clear();
	drv.reply_count = 0;
	drv.add_passthrough(StatusOnlyResp{kReleaseResourceGroupResp, 0});
	EXPECT_TRUE(nnc.release_resource_group(2).ok());
	EXPECT_EQ(as<IdReq>(request_of(drv)).id, 2u);
}

TEST(NncNames, StatusErrnoSku)
{
	EXPECT_STREQ(nnc_status_name(-11), "not found");
	EXPECT_STREQ(nnc_status_name(-36), "NSP under SSR");
	EXPECT_STREQ(nnc_status_name(-99), "unknown");
	EXPECT_EQ(errno_name(ECANCELED), "ECANCELED");
	EXPECT_STREQ(sku_name(3), "PCIe Pro");
	EXPECT_STREQ(sku_name(9), "PCIe Ultra 080");
	EXPECT_STREQ(sku_name(200), "Invalid");
}

} // namespace
} // namespace qaic
