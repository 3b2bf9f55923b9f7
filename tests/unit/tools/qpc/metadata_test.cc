// SPDX-License-Identifier: GPL-2.0-or-later
// The metadata section: every field through encode and decode, the 8-byte
// header, and the refusals.
#include "metadata.h"

#include <gtest/gtest.h>

namespace aic100::qpc {
namespace {

// A DMA request with every field set, a semaphore and a doorbell
// operation.
std::unique_ptr<meta::DmaRequestT> full_dma_request()
{
	auto r = std::make_unique<meta::DmaRequestT>();
	auto s = std::make_unique<meta::SemaphoreOpT>();
	s->semNum = 2;
	s->semValue = 7;
	s->semOp = uint8_t(sem::Op::WaitGe);
	s->preOrPost = kSemPre;
	s->inSyncFence = 1;
	s->outSyncFence = 1;
	r->semaphoreOps.push_back(std::move(s));
	auto d = std::make_unique<meta::DoorbellOpT>();
	d->offset = 0x40;
	d->data = 0xDEADBEEF;
	d->mcId = 3;
	d->size = 2;
	r->doorbellOps.push_back(std::move(d));
	r->hostOffset = 11;
	r->devOffset = 0x123456789;
	r->size = 4096;
	r->num = 4;
	r->mcId = 5;
	r->devAddrSpace = kAddrSpaceDdr;
	r->inOut = kDmaOut;
	r->portId = kPortHostOutput;
	return r;
}

// One entry in each multicast table, a thread and a constant mapping.
void add_full_tables(meta::MetadataT &m)
{
	auto t = std::make_unique<meta::NspMulticastEntryTableT>();
	auto e = std::make_unique<meta::NspMulticastEntryT>();
	e->baseAddrOffset = 0x1000;
	e->mask = 6;
	e->size = 64;
	e->addrSpace = 1;
	e->dynamic = 1;
	t->multicastEntries.push_back(std::move(e));
	m.nspMulticastTables.push_back(std::move(t));
	m.hostMulticastTable = std::make_unique<meta::HostMulticastEntryTableT>();
	auto h = std::make_unique<meta::HostMulticastEntryT>();
	h->mask = 0xF;
	h->size = 1124;
	m.hostMulticastTable->multicastEntries.push_back(std::move(h));
	auto th = std::make_unique<meta::ThreadDescriptorT>();
	th->entryPoint = 0x1234;
	th->typeMask = 3;
	m.threadDescriptors.push_back(std::move(th));
	auto c = std::make_unique<meta::ConstantMappingT>();
	c->constantDataBaseOffset = 0x100;
	c->coreMask = 0xF;
	c->size = 77;
	m.constantMappings.push_back(std::move(c));
}

// Every scalar of the root table, each to a value of its own.
void set_full_scalars(meta::MetadataT &m)
{
	m.staticSharedDDRSize = 1;
	m.dynamicSharedDDRSize = 2;
	m.staticConstantsSize = 3;
	m.dynamicConstantsSize = 4;
	m.exitDoorbellOffset = 5;
	m.l2CachedDDRSize = 6;
	m.L2TCMInitSize = 7;
	m.execContextMajorVersion = 8;
	m.numNSPs = 9;
	m.numSemaphores = 10;
	m.hwVersionMajor = 11;
	m.hwVersionMinor = 12;
	m.staticSharedDDRECCEnabled = 13;
	m.dynamicSharedDDRECCEnabled = 14;
	m.staticConstantsECCEnabled = 15;
	m.dynamicConstantsECCEnabled = 16;
	m.singleVTCMPage = 17;
	m.hasHvxFP = 18;
	m.hasHmxFP = 19;
	m.VTCMSize = 20;
	m.L2TCMSize = 21;
	m.networkHeapSize = 22;
	m.raw_struct_version_length = 23;
}

meta::MetadataT full()
{
	meta::MetadataT m;
	m.versionMajor = 1;
	m.versionMinor = 3;
	m.networkName = "net";
	m.requiredFields = {"AicMetadataFlat_Metadata->numNSPs", "AicMetadataFlat_Metadata->dmaRequests->num"};
	m.semaphoreInitState = {0, 5, 4095};
	m.L2TCMInitState = {1, 2, 3};
	m.dmaRequests.push_back(full_dma_request());
	add_full_tables(m);
	set_full_scalars(m);
	return m;
}

void expect_same_request(const meta::DmaRequestT &x, const meta::DmaRequestT &y)
{
	EXPECT_EQ(x.hostOffset, y.hostOffset);
	EXPECT_EQ(x.devOffset, y.devOffset);
	EXPECT_EQ(x.size, y.size);
	EXPECT_EQ(x.num, y.num);
	EXPECT_EQ(x.mcId, y.mcId);
	EXPECT_EQ(x.devAddrSpace, y.devAddrSpace);
	EXPECT_EQ(x.inOut, y.inOut);
	EXPECT_EQ(x.portId, y.portId);
	ASSERT_EQ(x.semaphoreOps.size(), y.semaphoreOps.size());
	for (size_t k = 0; k < x.semaphoreOps.size(); k++) {
		const auto &s = *x.semaphoreOps[k], &t = *y.semaphoreOps[k];
		EXPECT_EQ(s.semNum, t.semNum);
		EXPECT_EQ(s.semValue, t.semValue);
		EXPECT_EQ(s.semOp, t.semOp);
		EXPECT_EQ(s.preOrPost, t.preOrPost);
		EXPECT_EQ(s.inSyncFence, t.inSyncFence);
		EXPECT_EQ(s.outSyncFence, t.outSyncFence);
	}
	ASSERT_EQ(x.doorbellOps.size(), y.doorbellOps.size());
	for (size_t k = 0; k < x.doorbellOps.size(); k++) {
		EXPECT_EQ(x.doorbellOps[k]->offset, y.doorbellOps[k]->offset);
		EXPECT_EQ(x.doorbellOps[k]->data, y.doorbellOps[k]->data);
		EXPECT_EQ(x.doorbellOps[k]->mcId, y.doorbellOps[k]->mcId);
		EXPECT_EQ(x.doorbellOps[k]->size, y.doorbellOps[k]->size);
	}
}

void expect_same_multicast(const meta::MetadataT &a, const meta::MetadataT &b)
{
	ASSERT_EQ(a.nspMulticastTables.size(), b.nspMulticastTables.size());
	for (size_t i = 0; i < a.nspMulticastTables.size(); i++) {
		const auto &x = a.nspMulticastTables[i]->multicastEntries, &y = b.nspMulticastTables[i]->multicastEntries;
		ASSERT_EQ(x.size(), y.size());
		for (size_t k = 0; k < x.size(); k++) {
			EXPECT_EQ(x[k]->baseAddrOffset, y[k]->baseAddrOffset);
			EXPECT_EQ(x[k]->mask, y[k]->mask);
			EXPECT_EQ(x[k]->size, y[k]->size);
			EXPECT_EQ(x[k]->addrSpace, y[k]->addrSpace);
			EXPECT_EQ(x[k]->dynamic, y[k]->dynamic);
		}
	}
	ASSERT_EQ(!a.hostMulticastTable, !b.hostMulticastTable);
	if (a.hostMulticastTable) {
		const auto &x = a.hostMulticastTable->multicastEntries, &y = b.hostMulticastTable->multicastEntries;
		ASSERT_EQ(x.size(), y.size());
		for (size_t k = 0; k < x.size(); k++) {
			EXPECT_EQ(x[k]->mask, y[k]->mask);
			EXPECT_EQ(x[k]->size, y[k]->size);
		}
	}
}

void expect_same_threads_and_constants(const meta::MetadataT &a, const meta::MetadataT &b)
{
	ASSERT_EQ(a.threadDescriptors.size(), b.threadDescriptors.size());
	for (size_t k = 0; k < a.threadDescriptors.size(); k++) {
		EXPECT_EQ(a.threadDescriptors[k]->entryPoint, b.threadDescriptors[k]->entryPoint);
		EXPECT_EQ(a.threadDescriptors[k]->typeMask, b.threadDescriptors[k]->typeMask);
	}
	ASSERT_EQ(a.constantMappings.size(), b.constantMappings.size());
	for (size_t k = 0; k < a.constantMappings.size(); k++) {
		EXPECT_EQ(a.constantMappings[k]->constantDataBaseOffset, b.constantMappings[k]->constantDataBaseOffset);
		EXPECT_EQ(a.constantMappings[k]->coreMask, b.constantMappings[k]->coreMask);
		EXPECT_EQ(a.constantMappings[k]->size, b.constantMappings[k]->size);
	}
}

void expect_same_scalars(const meta::MetadataT &a, const meta::MetadataT &b)
{
	EXPECT_EQ(a.versionMajor, b.versionMajor);
	EXPECT_EQ(a.versionMinor, b.versionMinor);
	EXPECT_EQ(a.networkName, b.networkName);
	EXPECT_EQ(a.requiredFields, b.requiredFields);
	EXPECT_EQ(a.semaphoreInitState, b.semaphoreInitState);
	EXPECT_EQ(a.L2TCMInitState, b.L2TCMInitState);
	EXPECT_EQ(a.staticSharedDDRSize, b.staticSharedDDRSize);
	EXPECT_EQ(a.dynamicSharedDDRSize, b.dynamicSharedDDRSize);
	EXPECT_EQ(a.staticConstantsSize, b.staticConstantsSize);
	EXPECT_EQ(a.dynamicConstantsSize, b.dynamicConstantsSize);
	EXPECT_EQ(a.exitDoorbellOffset, b.exitDoorbellOffset);
	EXPECT_EQ(a.l2CachedDDRSize, b.l2CachedDDRSize);
	EXPECT_EQ(a.L2TCMInitSize, b.L2TCMInitSize);
	EXPECT_EQ(a.execContextMajorVersion, b.execContextMajorVersion);
	EXPECT_EQ(a.numNSPs, b.numNSPs);
	EXPECT_EQ(a.numSemaphores, b.numSemaphores);
	EXPECT_EQ(a.hwVersionMajor, b.hwVersionMajor);
	EXPECT_EQ(a.hwVersionMinor, b.hwVersionMinor);
	EXPECT_EQ(a.staticSharedDDRECCEnabled, b.staticSharedDDRECCEnabled);
	EXPECT_EQ(a.dynamicSharedDDRECCEnabled, b.dynamicSharedDDRECCEnabled);
	EXPECT_EQ(a.staticConstantsECCEnabled, b.staticConstantsECCEnabled);
	EXPECT_EQ(a.dynamicConstantsECCEnabled, b.dynamicConstantsECCEnabled);
	EXPECT_EQ(a.singleVTCMPage, b.singleVTCMPage);
	EXPECT_EQ(a.hasHvxFP, b.hasHvxFP);
	EXPECT_EQ(a.hasHmxFP, b.hasHmxFP);
	EXPECT_EQ(a.VTCMSize, b.VTCMSize);
	EXPECT_EQ(a.L2TCMSize, b.L2TCMSize);
	EXPECT_EQ(a.networkHeapSize, b.networkHeapSize);
	EXPECT_EQ(a.raw_struct_version_length, b.raw_struct_version_length);
}

// Every field of `a` and `b` equal; stops at the first list whose length
// differs.
void expect_same(const meta::MetadataT &a, const meta::MetadataT &b)
{
	expect_same_scalars(a, b);
	ASSERT_EQ(a.dmaRequests.size(), b.dmaRequests.size());
	for (size_t i = 0; i < a.dmaRequests.size(); i++) {
		SCOPED_TRACE("DMA request " + std::to_string(i));
		ASSERT_NO_FATAL_FAILURE(expect_same_request(*a.dmaRequests[i], *b.dmaRequests[i]));
	}
	ASSERT_NO_FATAL_FAILURE(expect_same_multicast(a, b));
	expect_same_threads_and_constants(a, b);
}

TEST(QpcMetadata, EveryFieldRoundTrips)
{
	const auto m = full();
	const auto bytes = encode_metadata(m);
	// The header: u16 1, u16 0, u32 0.
	ASSERT_GT(bytes.size(), kMetadataHeaderSize);
	EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 8), (std::vector<uint8_t>{1, 0, 0, 0, 0, 0, 0, 0}));
	std::string err;
	const auto back = decode_metadata(bytes, err);
	ASSERT_TRUE(back) << err;
	expect_same(m, *back);
	// Without the header too, as the UMD reads it.
	const auto bare = decode_metadata(std::span(bytes).subspan(kMetadataHeaderSize), err);
	ASSERT_TRUE(bare) << err;
	expect_same(m, *bare);
}

TEST(QpcMetadata, ZerosAreWrittenToo)
{
	meta::MetadataT m;
	m.versionMajor = 1;
	m.hostMulticastTable = std::make_unique<meta::HostMulticastEntryTableT>();
	std::string err;
	const auto back = decode_metadata(encode_metadata(m), err);
	ASSERT_TRUE(back) << err;
	expect_same(m, *back);
}

TEST(QpcMetadata, Refusals)
{
	std::string err;
	EXPECT_FALSE(decode_metadata(std::vector<uint8_t>(64, 0x5A), err));
	EXPECT_NE(err.find("not a FlatBuffer"), std::string::npos) << err;
	EXPECT_FALSE(decode_metadata(std::vector<uint8_t>{}, err));
	auto m = full();
	m.versionMajor = 2;
	EXPECT_FALSE(decode_metadata(encode_metadata(m), err));
	EXPECT_NE(err.find("version 2.3"), std::string::npos) << err;
	m = full();
	m.requiredFields.push_back("AicMetadataFlat_Metadata->portTable");
	EXPECT_FALSE(decode_metadata(encode_metadata(m), err));
	EXPECT_NE(err.find("portTable"), std::string::npos) << err;
	// A truncated FlatBuffer does not verify.
	auto bytes = encode_metadata(full());
	bytes.resize(bytes.size() - 16);
	EXPECT_FALSE(decode_metadata(bytes, err));
}

TEST(QpcMetadata, KnownFieldsCoverTheSchema)
{
	const auto &k = known_required_fields();
	EXPECT_EQ(k.size(), 68u);
	for (const std::string &f : k)
		EXPECT_EQ(f.rfind("AicMetadataFlat_Metadata->", 0), 0u) << f;
}

} // namespace
} // namespace aic100::qpc
