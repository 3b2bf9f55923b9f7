// SPDX-License-Identifier: GPL-2.0-or-later
// build_qpc() and read_qpc(): every field of a hand-made program read back,
// the specs the builder refuses, and the inconsistencies the reader finds.
#include "program.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "elf_sections.h"
#include "metadata.h"
#include "nspasm.h"

namespace aic100::qpc {
namespace {

// Two inputs and one output on 2 NSPs, semaphores 5 (in), 6 (out) and 9
// (internal); window 0x8000, constants at 0x6000.
const char kSource[] = R"(
.name handmade
.nsps 2
.io_size 0x8000
.const_offset 0x6000
.data 0x5000
	.i32 1, 2, 3
.text
loop:
	semwait 5, 1, ge
	semwait 6, 0, eq
	seminc 9, 1
	li r10, 0x4000
	li r11, 0x0
	li r12, 0x1000
	li r13, 1024
	vaddf r10, r11, r12, r13
	semdec 5, 1
	seminc 6, 1
	jmp loop
)";

std::vector<uint8_t> handmade_elf()
{
	std::string err;
	nspasm::Options opt;
	auto elf = nspasm::assemble_elf(kSource, opt, err);
	EXPECT_TRUE(elf) << err;
	return elf ? *elf : std::vector<uint8_t>{};
}

Tensor tensor(const char *name, netdesc::DataType type, std::vector<int32_t> dims, uint64_t at)
{
	Tensor t;
	t.name = name;
	t.type = type;
	t.dims = std::move(dims);
	t.dev_offset = at;
	return t;
}

ProgramSpec handmade()
{
	ProgramSpec s;
	s.elf = handmade_elf();
	s.inputs = {tensor("x", netdesc::FloatTy, {1024}, 0), tensor("y", netdesc::FloatTy, {32, 32}, 0x1000)};
	s.outputs = {tensor("z", netdesc::FloatTy, {1024}, 0x4000)};
	s.outputs[0].qscale = 0.5f;
	s.outputs[0].qoffset = -3;
	s.sem_in = 5;
	s.sem_out = 6;
	s.constants.assign(0x800, 0);
	for (size_t i = 0; i < s.constants.size(); i++)
		s.constants[i] = uint8_t(i * 7);
	return s;
}

// The hand-made program, built and read back.
class QpcHandmade : public ::testing::Test {
protected:
	void SetUp() override
	{
		std::string err;
		const auto file = build_qpc(spec, err);
		ASSERT_TRUE(file) << err;
		p = read_qpc(*file, err);
		ASSERT_TRUE(p) << err;
	}

	const ProgramSpec spec = handmade();
	std::optional<Program> p;
};

TEST_F(QpcHandmade, ContainerHasFourSegmentsAndStaticConstants)
{
	// Container: the four segments, constants all static.
	ASSERT_EQ(p->container.segments.size(), 4u);
	EXPECT_EQ(p->container.segments[0].name, "network.elf");
	EXPECT_EQ(p->container.segments[1].name, "networkdesc.bin");
	EXPECT_EQ(p->container.segments[2].name, "constantsdesc.bin");
	EXPECT_EQ(p->container.segments[3].name, "constants.bin");
	EXPECT_EQ(p->container.segments[3].split, spec.constants.size());
	EXPECT_EQ(p->static_constants, spec.constants);
	EXPECT_TRUE(p->dynamic_constants.empty());
	EXPECT_EQ(p->constants_desc.static_size, spec.constants.size());
	EXPECT_EQ(p->constants_desc.dynamic_size, 0u);
	EXPECT_EQ(p->constants_desc.ecc_static, 0);
	EXPECT_EQ(p->constants_desc.ecc_dynamic, 0);
}

TEST_F(QpcHandmade, NetworkElfIsTheWorkloadGiven)
{
	// network.elf: the card's workload is the one given.
	std::string err;
	const auto given = nsp::parse(spec.elf, err);
	ASSERT_TRUE(given) << err;
	EXPECT_EQ(p->workload.meta.name, "handmade");
	EXPECT_EQ(p->workload.meta.nsp_count, 2);
	EXPECT_EQ(p->workload.meta.io_size, 0x8000u);
	EXPECT_EQ(p->workload.meta.const_offset, 0x6000u);
	EXPECT_EQ(p->workload.program, given->program);
	ASSERT_EQ(p->workload.segments.size(), 1u);
	EXPECT_EQ(p->workload.segments[0].offset, 0x5000u);
}

// metadata as the compiler of firmware 1.15 and later writes it, and
// metadata_fb, the same FlatBuffer without the header, which every UMD
// reader takes first (qaic-device-partition crashes on metadata alone).
TEST_F(QpcHandmade, NetworkElfCarriesBothMetadataSections)
{
	std::string err;
	const auto with_header = find_section(p->elf, kMetadataSection, err);
	ASSERT_TRUE(with_header) << err;
	const auto bare = find_section(p->elf, kMetadataFbSection, err);
	ASSERT_TRUE(bare) << err;
	ASSERT_GT(with_header->size(), kMetadataHeaderSize);
	EXPECT_TRUE(std::ranges::equal(with_header->subspan(kMetadataHeaderSize), *bare));
	EXPECT_EQ((std::vector<uint8_t>(with_header->begin(), with_header->begin() + 4)),
		  (std::vector<uint8_t>{1, 0, 0, 0}));
}

TEST_F(QpcHandmade, MetadataDescribesTheProgram)
{
	const meta::MetadataT &m = *p->metadata;
	EXPECT_EQ(m.versionMajor, 1);
	EXPECT_EQ(m.versionMinor, 0);
	EXPECT_EQ(m.networkName, "handmade");
	EXPECT_EQ(m.requiredFields.size(), 8u);
	EXPECT_EQ(m.numNSPs, 2);
	EXPECT_EQ(m.numSemaphores, 10); // semaphore 9 is the highest the program uses
	EXPECT_EQ(m.semaphoreInitState, std::vector<uint32_t>(10, 0));
	EXPECT_TRUE(m.L2TCMInitState.empty());
	ASSERT_EQ(m.nspMulticastTables.size(), 2u);
	EXPECT_TRUE(m.nspMulticastTables[0]->multicastEntries.empty());
	ASSERT_TRUE(m.hostMulticastTable);
	EXPECT_TRUE(m.hostMulticastTable->multicastEntries.empty());
	ASSERT_EQ(m.threadDescriptors.size(), 1u);
	EXPECT_EQ(m.threadDescriptors[0]->entryPoint, 0u);
	EXPECT_EQ(m.threadDescriptors[0]->typeMask, 2); // HVX, no matrix ops
	ASSERT_EQ(m.constantMappings.size(), 1u);
	EXPECT_EQ(m.constantMappings[0]->constantDataBaseOffset, 0u);
	EXPECT_EQ(m.constantMappings[0]->coreMask, 3u);
	EXPECT_EQ(m.constantMappings[0]->size, 0x800u);
	EXPECT_EQ(m.staticSharedDDRSize, 0x8000u);
	EXPECT_EQ(m.dynamicSharedDDRSize, 0u);
	EXPECT_EQ(m.staticConstantsSize, 0x800u);
	EXPECT_EQ(m.dynamicConstantsSize, 0u);
	EXPECT_EQ(m.exitDoorbellOffset, ~uint64_t(0));
	EXPECT_EQ(m.l2CachedDDRSize, 0u);
	EXPECT_EQ(m.L2TCMInitSize, 0u);
	EXPECT_EQ(m.execContextMajorVersion, 4);
	EXPECT_EQ(m.hwVersionMajor, 2);
	EXPECT_EQ(m.hwVersionMinor, 0);
	EXPECT_EQ(m.hasHvxFP, 1);
	EXPECT_EQ(m.hasHmxFP, 0);
	EXPECT_EQ(m.VTCMSize, 0u);
	EXPECT_EQ(m.L2TCMSize, 0u);
	EXPECT_EQ(m.networkHeapSize, 0u);
}

TEST_F(QpcHandmade, DmaRequestsCarryTheHostProtocol)
{
	const meta::MetadataT &m = *p->metadata;
	ASSERT_EQ(m.dmaRequests.size(), 3u);
	struct Want {
		uint16_t num;
		uint8_t in_out;
		uint64_t dev;
		uint32_t size;
		uint16_t port;
		std::vector<std::tuple<sem::Op, uint16_t, uint16_t, uint8_t>> sems; // op, num, value, pre
	};
	const Want want[] = {
		{0, kDmaIn, 0, 4096, 100, {{sem::Op::WaitEq, 5, 0, kSemPre}}},
		{1, kDmaIn, 0x1000, 4096, 100, {{sem::Op::Inc, 5, 1, kSemPost}}},
		{2, kDmaOut, 0x4000, 4096, 101, {{sem::Op::WaitGe, 6, 1, kSemPre}, {sem::Op::Dec, 6, 1, kSemPost}}},
	};
	for (size_t i = 0; i < 3; i++) {
		SCOPED_TRACE(i);
		const meta::DmaRequestT &r = *m.dmaRequests[i];
		EXPECT_EQ(r.num, want[i].num);
		EXPECT_EQ(r.inOut, want[i].in_out);
		EXPECT_EQ(r.devOffset, want[i].dev);
		EXPECT_EQ(r.size, want[i].size);
		EXPECT_EQ(r.portId, want[i].port);
		EXPECT_EQ(r.hostOffset, 0u);
		EXPECT_EQ(r.mcId, 0);
		EXPECT_EQ(r.devAddrSpace, kAddrSpaceDdr);
		EXPECT_TRUE(r.doorbellOps.empty());
		ASSERT_EQ(r.semaphoreOps.size(), want[i].sems.size());
		for (size_t k = 0; k < r.semaphoreOps.size(); k++) {
			const auto &[op, num, value, pre] = want[i].sems[k];
			EXPECT_EQ(sem::Op(r.semaphoreOps[k]->semOp), op);
			EXPECT_EQ(r.semaphoreOps[k]->semNum, num);
			EXPECT_EQ(r.semaphoreOps[k]->semValue, value);
			EXPECT_EQ(r.semaphoreOps[k]->preOrPost, pre);
			EXPECT_EQ(r.semaphoreOps[k]->inSyncFence, 0);
			EXPECT_EQ(r.semaphoreOps[k]->outSyncFence, 0);
		}
	}
}

TEST_F(QpcHandmade, NetworkDescriptorBindsEveryTensor)
{
	const netdesc::networkDescriptor &d = p->desc;
	EXPECT_EQ(d.major_version(), 9u);
	EXPECT_EQ(d.minor_version(), 0u);
	EXPECT_EQ(d.network_name(), "handmade");
	EXPECT_EQ(d.num_cores(), 2u);
	EXPECT_EQ(d.batch_size(), 1);
	ASSERT_EQ(d.inputs_size(), 2);
	ASSERT_EQ(d.outputs_size(), 1);
	ASSERT_EQ(d.dma_buffers_size(), 3);
	const netdesc::IoBinding *all[] = {&d.inputs(0), &d.inputs(1), &d.outputs(0)};
	const Tensor *src[] = {&spec.inputs[0], &spec.inputs[1], &spec.outputs[0]};
	for (int i = 0; i < 3; i++) {
		SCOPED_TRACE(i);
		const netdesc::IoBinding &b = *all[i];
		const Tensor &t = *src[i];
		const bool in = i < 2;
		EXPECT_EQ(b.name(), t.name);
		for (const netdesc::IoDescriptor *io : {&b.io_initial(), &b.io_transformed()}) {
			EXPECT_EQ(io->type(), t.type);
			EXPECT_EQ(std::vector<int32_t>(io->dims().begin(), io->dims().end()), t.dims);
			EXPECT_EQ(io->qscale(), t.qscale);
			EXPECT_EQ(io->qoffset(), t.qoffset);
			EXPECT_EQ(io->layout(), netdesc::FlatNXYD);
		}
		EXPECT_FALSE(b.is_partial_allowed());
		EXPECT_EQ(b.align(), 4u);
		ASSERT_EQ(b.transformseq_size(), 1);
		const netdesc::Transform &x = b.transformseq(0);
		EXPECT_EQ(x.kind(), netdesc::CopyDMABufferTransform);
		EXPECT_EQ(x.type(), t.type);
		EXPECT_EQ(std::vector<int32_t>(x.dims().begin(), x.dims().end()), t.dims);
		EXPECT_EQ(x.copy_dma_buffer().dir(), in ? netdesc::In : netdesc::Out);
		EXPECT_EQ(x.copy_dma_buffer().offset(), 0u);
		EXPECT_EQ(x.copy_dma_buffer().buffer_num(), uint32_t(i));
		EXPECT_EQ(d.dma_buffers(i).size(), 4096u);
		EXPECT_EQ(d.dma_buffers(i).dir(), in ? netdesc::In : netdesc::Out);
	}
}

TEST_F(QpcHandmade, DescribeShowsTheFields)
{
	const std::string text = describe(*p);
	EXPECT_NE(text.find("name \"handmade\", 2 NSPs, window 0x8000"), std::string::npos) << text;
	EXPECT_NE(text.find("input  y        FloatTy[32,32]"), std::string::npos) << text;
	EXPECT_NE(text.find("pre  sem 6 wait>= 1"), std::string::npos) << text;
}

TEST(QpcProgram, BuilderRefusesSpecsThatDoNotFit)
{
	std::string err;
	auto refused = [&err](const ProgramSpec &s, const std::string &why) {
		EXPECT_FALSE(build_qpc(s, err));
		EXPECT_NE(err.find(why), std::string::npos) << "got: " << err;
	};
	ProgramSpec s = handmade();
	s.inputs[1].dev_offset = 0x7800;
	refused(s, "outside the window");
	s = handmade();
	s.inputs[1].dev_offset = 0x800;
	refused(s, "overlap");
	s = handmade();
	s.outputs[0].dev_offset = 0x6000;
	refused(s, "the constants overlap");
	s = handmade();
	s.constants.assign(0x3000, 1);
	refused(s, "do not fit");
	s = handmade();
	s.inputs.clear();
	refused(s, "at least one input");
	s = handmade();
	s.sem_out = s.sem_in;
	refused(s, "two different semaphores");
	s = handmade();
	s.inputs[0].dims = {0};
	refused(s, "no size");
	s = handmade();
	s.inputs[0].type = netdesc::DataType(42);
	refused(s, "no size");
	s = handmade();
	s.outputs[0].name = "x";
	refused(s, "different");
	s = handmade();
	s.elf.resize(100);
	refused(s, "not a workload");
	s = handmade();
	s.elf = *add_section(s.elf, "metadata", std::vector<uint8_t>{1}, err);
	refused(s, "already has a metadata section");
	s = handmade();
	s.elf = *add_section(s.elf, "metadata_fb", std::vector<uint8_t>{1}, err);
	refused(s, "already has a metadata_fb section");
}

// A container whose segments are taken from a good one, one replaced.
std::vector<uint8_t> with_segment(const std::vector<uint8_t> &good, const std::string &name,
				  std::optional<std::vector<uint8_t>> data, uint64_t split = 0)
{
	std::string err;
	auto c = read_container(good, err);
	EXPECT_TRUE(c) << err;
	std::vector<Segment> segs;
	for (Segment &s : c->segments) {
		if (s.name == name) {
			if (data)
				segs.push_back({name, *data, split});
			continue;
		}
		segs.push_back(s);
	}
	return *write_container(segs, err);
}

// network.elf of `spec`'s QPC with its metadata replaced by `m`.
std::vector<uint8_t> elf_with_metadata(const ProgramSpec &spec, const meta::MetadataT &m)
{
	std::string err;
	return *add_section(spec.elf, kMetadataSection, encode_metadata(m), err);
}

TEST(QpcProgram, ReaderFindsInconsistencies)
{
	std::string err;
	const ProgramSpec spec = handmade();
	const auto good = *build_qpc(spec, err);
	const auto w = *nsp::parse(spec.elf, err);
	auto refused = [&err](const std::vector<uint8_t> &f, const std::string &why) {
		EXPECT_FALSE(read_qpc(f, err));
		EXPECT_NE(err.find(why), std::string::npos) << "got: " << err;
	};
	refused(with_segment(good, kNetworkDesc, std::nullopt), "no networkdesc.bin");
	refused(with_segment(good, kConstantsDesc, std::nullopt), "no constantsdesc.bin");
	refused(with_segment(good, kNetworkElf, spec.elf), "no section named metadata");
	refused(with_segment(good, kNetworkDesc, std::vector<uint8_t>{0xFF, 0xFF, 0xFF}), "not a network descriptor");
	refused(with_segment(good, kConstantsDesc, std::vector<uint8_t>(23, 0)), "not 24");
	refused(with_segment(good, kConstants, spec.constants, 0x10), "constant sizes disagree");
	const auto desc_bytes = read_container(good, err)->find(kNetworkDesc)->data;
	refused(with_segment(good, kNetworkDesc, desc_bytes, 3), "only constants.bin");

	auto meta_changed = [&](auto change, const std::string &why) {
		auto m = make_metadata(spec, w, err);
		ASSERT_TRUE(m) << err;
		change(*m);
		refused(with_segment(good, kNetworkElf, elf_with_metadata(spec, *m)), why);
	};
	meta_changed([](meta::MetadataT &m) { m.numNSPs = 3; }, "NSP counts disagree");
	{
		auto m = make_metadata(spec, w, err);
		ASSERT_TRUE(m) << err;
		const auto elf = elf_with_metadata(spec, *m);
		m->numSemaphores++;
		const auto two = *add_section(elf, kMetadataFbSection, encode_flatbuffer(*m), err);
		refused(with_segment(good, kNetworkElf, two), "metadata_fb and metadata disagree");
	}
	meta_changed([](meta::MetadataT &m) { m.networkName = "other"; }, "names disagree");
	meta_changed([](meta::MetadataT &m) { m.semaphoreInitState.pop_back(); }, "initial states");
	meta_changed([](meta::MetadataT &m) { m.staticSharedDDRSize = 0x9000; }, "larger than the window");
	meta_changed([](meta::MetadataT &m) { m.staticConstantsSize = 1; }, "constant sizes disagree");
	meta_changed([](meta::MetadataT &m) { m.dmaRequests[0]->num = 7; }, "names buffer 7");
	meta_changed([](meta::MetadataT &m) { m.dmaRequests[0]->inOut = kDmaOut; }, "the other way");
	meta_changed([](meta::MetadataT &m) { m.dmaRequests[0]->hostOffset = 1; }, "past the end of its buffer");
	meta_changed([](meta::MetadataT &m) { m.dmaRequests[0]->devAddrSpace = kAddrSpaceMulticast; },
		     "multicast");
	meta_changed([](meta::MetadataT &m) { m.dmaRequests[2]->devOffset = 0x7800; }, "outside the shared DDR");
	meta_changed([](meta::MetadataT &m) { m.dmaRequests[0]->semaphoreOps[0]->semNum = 10; },
		     "malformed semaphore");
	meta_changed([](meta::MetadataT &m) { m.dmaRequests[0]->semaphoreOps[0]->preOrPost = kSemPost; },
		     "waits after its transfer");
	meta_changed(
		[](meta::MetadataT &m) {
			auto s = std::make_unique<meta::SemaphoreOpT>(*m.dmaRequests[0]->semaphoreOps[0]);
			m.dmaRequests[0]->semaphoreOps.push_back(std::move(s));
		},
		"more than one presync");
	meta_changed([](meta::MetadataT &m) { m.nspMulticastTables.pop_back(); }, "multicast table");

	auto desc = make_network_descriptor(spec, w);
	desc.mutable_outputs(0)->mutable_transformseq(0)->mutable_copy_dma_buffer()->set_buffer_num(0);
	std::string bytes;
	ASSERT_TRUE(desc.SerializeToString(&bytes));
	refused(with_segment(good, kNetworkDesc, std::vector<uint8_t>(bytes.begin(), bytes.end())), "other way");
	desc = make_network_descriptor(spec, w);
	desc.set_num_cores(1);
	ASSERT_TRUE(desc.SerializeToString(&bytes));
	refused(with_segment(good, kNetworkDesc, std::vector<uint8_t>(bytes.begin(), bytes.end())), "NSP counts");
	desc = make_network_descriptor(spec, w);
	desc.set_major_version(8);
	ASSERT_TRUE(desc.SerializeToString(&bytes));
	refused(with_segment(good, kNetworkDesc, std::vector<uint8_t>(bytes.begin(), bytes.end())), "not 9");
	desc = make_network_descriptor(spec, w);
	desc.mutable_inputs(0)->mutable_transformseq(0)->set_kind(netdesc::TransposeTransform);
	ASSERT_TRUE(desc.SerializeToString(&bytes));
	refused(with_segment(good, kNetworkDesc, std::vector<uint8_t>(bytes.begin(), bytes.end())), "CopyDMABuffer");
}

// A quantized input handed over as float: the descriptor the open UMD's
// API tests need it to refuse to run, and what the builder and the reader
// accept of it.
TEST(QpcProgram, FloatInputIsQuantizedBeforeTheCopyAndTheUmdRefusesIt)
{
	std::string err;
	ProgramSpec spec = handmade();
	spec.inputs[0].type = netdesc::Int8QTy;
	spec.inputs[0].dims = {4096};
	spec.inputs[0].qscale = 0.25f;
	spec.inputs[0].qoffset = 7;
	std::string why;
	const auto plain = build_qpc(spec, err);
	ASSERT_TRUE(plain) << err;
	EXPECT_TRUE(umd_runs(read_qpc(*plain, err)->desc, why)) << why;

	spec.inputs[0].float_input = true;
	const auto file = build_qpc(spec, err);
	ASSERT_TRUE(file) << err;
	const auto p = read_qpc(*file, err);
	ASSERT_TRUE(p) << err;
	const netdesc::IoBinding &x = p->desc.inputs(0);
	EXPECT_EQ(x.io_initial().type(), netdesc::FloatTy);
	EXPECT_EQ(x.io_transformed().type(), netdesc::Int8QTy);
	EXPECT_EQ(x.align(), 4u);
	ASSERT_EQ(x.transformseq_size(), 2);
	EXPECT_EQ(x.transformseq(0).kind(), netdesc::QuantizeTransform);
	EXPECT_EQ(x.transformseq(0).type(), netdesc::Int8QTy);
	EXPECT_FLOAT_EQ(x.transformseq(0).scale(), 0.25f);
	EXPECT_EQ(x.transformseq(0).offset(), 7);
	EXPECT_EQ(x.transformseq(1).kind(), netdesc::CopyDMABufferTransform);
	EXPECT_EQ(x.transformseq(1).copy_dma_buffer().buffer_num(), 0u);
	// The card's side is the int8 tensor: the DMA buffer, the metadata's
	// request and everything but the descriptor are those of the plain one.
	EXPECT_EQ(p->desc.dma_buffers(0).size(), 4096u);
	EXPECT_EQ(p->metadata->dmaRequests[0]->size, 4096u);
	EXPECT_EQ(p->elf, read_qpc(*plain, err)->elf);
	EXPECT_EQ(p->static_constants, spec.constants);
	// The other input and the output keep their one copy.
	EXPECT_EQ(p->desc.inputs(1).transformseq_size(), 1);
	EXPECT_EQ(p->desc.outputs(0).transformseq_size(), 1);

	EXPECT_FALSE(umd_runs(p->desc, why));
	EXPECT_NE(why.find("input x has 2 transforms"), std::string::npos) << why;
	const std::string text = describe(*p);
	EXPECT_NE(text.find("input  x        FloatTy[4096]"), std::string::npos) << text;
	EXPECT_NE(text.find("quantized to Int8QTy scale 0.25 offset 7 before the copy"), std::string::npos) << text;
	EXPECT_NE(text.find("open UMD: loads this program but refuses to run it (input x has 2 transforms)"),
		  std::string::npos)
		<< text;
	EXPECT_EQ(describe(*read_qpc(*plain, err)).find("open UMD:"), std::string::npos);

	// One transform that is not a copy is refused by the UMD too.
	netdesc::networkDescriptor d = p->desc;
	d.mutable_outputs(0)->mutable_transformseq(0)->set_kind(netdesc::ConvertTransform);
	d.mutable_inputs(0)->mutable_transformseq()->RemoveLast();
	d.mutable_inputs(0)->mutable_transformseq(0)->set_kind(netdesc::CopyDMABufferTransform);
	EXPECT_FALSE(umd_runs(d, why));
	EXPECT_EQ(why, "output z's transform is ConvertTransform");
}

TEST(QpcProgram, FloatInputOnlyForQuantizedInputs)
{
	std::string err;
	auto refused = [&err](const ProgramSpec &s) {
		EXPECT_FALSE(build_qpc(s, err));
		EXPECT_NE(err.find("only an input of a quantized type can be handed over as float"), std::string::npos)
			<< "got: " << err;
	};
	ProgramSpec s = handmade();
	s.inputs[0].float_input = true; // FloatTy already
	refused(s);
	s = handmade();
	s.inputs[0].type = netdesc::Int8Ty; // not a quantized type
	s.inputs[0].dims = {4096};
	s.inputs[0].float_input = true;
	refused(s);
	s = handmade();
	s.outputs[0].type = netdesc::Int8QTy;
	s.outputs[0].dims = {4096};
	s.outputs[0].float_input = true;
	refused(s);
}

TEST(QpcProgram, ReaderChecksAQuantizeStep)
{
	std::string err;
	ProgramSpec spec = handmade();
	spec.inputs[0].type = netdesc::Int8QTy;
	spec.inputs[0].dims = {4096};
	spec.inputs[0].float_input = true;
	const auto good = *build_qpc(spec, err);
	const auto w = *nsp::parse(spec.elf, err);
	auto refused = [&](auto change, const std::string &why) {
		auto d = make_network_descriptor(spec, w);
		change(d);
		std::string bytes;
		ASSERT_TRUE(d.SerializeToString(&bytes));
		EXPECT_FALSE(read_qpc(with_segment(good, kNetworkDesc, std::vector<uint8_t>(bytes.begin(), bytes.end())),
				      err));
		EXPECT_NE(err.find(why), std::string::npos) << "got: " << err;
	};
	const std::string step = "its Quantize step must take a float tensor";
	using Desc = netdesc::networkDescriptor;
	refused([](Desc &d) { d.mutable_inputs(0)->mutable_io_initial()->set_type(netdesc::Int8QTy); }, step);
	refused([](Desc &d) { d.mutable_inputs(0)->mutable_io_initial()->set_dims(0, 4095); }, step);
	refused([](Desc &d) { d.mutable_inputs(0)->mutable_transformseq(0)->set_type(netdesc::UInt8QTy); }, step);
	refused([](netdesc::networkDescriptor &d) { d.mutable_inputs(0)->mutable_transformseq()->SwapElements(0, 1); },
		"its transforms must be one CopyDMABuffer, or for an input a Quantize");
	refused(
		[](netdesc::networkDescriptor &d) {
			*d.mutable_outputs(0)->mutable_transformseq()->Add() = d.outputs(0).transformseq(0);
			d.mutable_outputs(0)->mutable_transformseq(0)->set_kind(netdesc::QuantizeTransform);
		},
		"its transforms must be one CopyDMABuffer, or for an input a Quantize");
}

TEST(QpcProgram, ConstantsDescriptorLayout)
{
	const auto b = encode_constants_descriptor({0x1122334455667788, 9, 1, 0, {}});
	ASSERT_EQ(b.size(), 24u);
	EXPECT_EQ(b[0], 0x88);
	EXPECT_EQ(b[7], 0x11);
	EXPECT_EQ(b[8], 9);
	EXPECT_EQ(b[16], 1);
	std::string err;
	const auto d = decode_constants_descriptor(b, err);
	ASSERT_TRUE(d) << err;
	EXPECT_EQ(d->static_size, 0x1122334455667788u);
	EXPECT_EQ(d->dynamic_size, 9u);
	EXPECT_EQ(d->ecc_static, 1);
	auto bad = b;
	bad[20] = 1;
	EXPECT_FALSE(decode_constants_descriptor(bad, err));
	bad = b;
	bad[17] = 2;
	EXPECT_FALSE(decode_constants_descriptor(bad, err));
}

TEST(QpcProgram, TensorBytes)
{
	EXPECT_EQ(tensor_bytes(tensor("a", netdesc::Int64ITy, {3, 5}, 0)), 120u);
	EXPECT_EQ(tensor_bytes(tensor("a", netdesc::Float16Ty, {7}, 0)), 14u);
	EXPECT_EQ(tensor_bytes(tensor("a", netdesc::FloatTy, {}, 0)), 0u);
	EXPECT_EQ(tensor_bytes(tensor("a", netdesc::FloatTy, {65536, 65536}, 0)), 0u);
	EXPECT_EQ(tensor_bytes(tensor("a", netdesc::FloatTy, {-1}, 0)), 0u);
}

} // namespace
} // namespace aic100::qpc

namespace aic100::qpc {
namespace {

// Damage anywhere: every byte of a container flipped in turn, and every
// truncation, is either still a sound program or refused with a reason;
// never a crash (the sanitizer build checks the reads).
TEST(QpcProgram, DamagedContainersAreRefusedWithAReason)
{
	std::string err;
	const auto good = *build_qpc(handmade(), err);
	size_t refused = 0, read = 0;
	for (size_t i = 0; i < good.size(); i += (i < 512 ? 1 : 7)) {
		for (uint8_t x : {uint8_t(0x01), uint8_t(0x80), uint8_t(0xFF)}) {
			auto f = good;
			f[i] ^= x;
			err.clear();
			if (read_qpc(f, err)) {
				read++;
			} else {
				refused++;
				ASSERT_FALSE(err.empty()) << "byte " << i;
			}
		}
	}
	for (size_t n = 0; n < good.size(); n += 13) {
		err.clear();
		EXPECT_FALSE(read_qpc(std::span(good).first(n), err)) << n;
		EXPECT_FALSE(err.empty());
	}
	EXPECT_GT(refused, 0u);
	EXPECT_GT(read, 0u); // e.g. flips inside the constants' values
}

} // namespace
} // namespace aic100::qpc
