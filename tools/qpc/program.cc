// SPDX-License-Identifier: GPL-2.0-or-later
// Packs NSP workloads into program containers and reads them back.
#include "program.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>

#include <aic100/wire.h>

#include "elf_sections.h"
#include "metadata.h"

namespace aic100::qpc {

namespace {

// The fields every reader of our metadata must understand to run the
// program correctly.
const char *const kRequired[] = {
	"AicMetadataFlat_Metadata->requiredFields", "AicMetadataFlat_Metadata->networkName",
	"AicMetadataFlat_Metadata->numNSPs",        "AicMetadataFlat_Metadata->numSemaphores",
	"AicMetadataFlat_Metadata->dmaRequests",    "AicMetadataFlat_Metadata->dmaRequests->semaphoreOps",
	"AicMetadataFlat_Metadata->staticSharedDDRSize", "AicMetadataFlat_Metadata->staticConstantsSize",
};

std::string hex(uint64_t v)
{
	char b[24];
	std::snprintf(b, sizeof(b), "0x%" PRIx64, v);
	return b;
}

bool is_sem_op(uint8_t op)
{
	return op >= uint8_t(nsp::Op::SemWait) && op <= uint8_t(nsp::Op::SemSet);
}

bool is_vector_fp(uint8_t op)
{
	switch (nsp::Op(op)) {
	case nsp::Op::VAddF: case nsp::Op::VMulF: case nsp::Op::VScaleF: case nsp::Op::ActF: case nsp::Op::SumF:
	case nsp::Op::MaxF: case nsp::Op::BiasF: case nsp::Op::CvtI32F:
		return true;
	default:
		return false;
	}
}

std::unique_ptr<meta::SemaphoreOpT> sem_op(sem::Op op, unsigned num, uint16_t value, uint8_t pre)
{
	auto s = std::make_unique<meta::SemaphoreOpT>();
	s->semOp = uint8_t(op);
	s->semNum = uint16_t(num);
	s->semValue = value;
	s->preOrPost = pre;
	return s;
}

bool overlap(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
	return a < b + bn && b < a + an;
}

const char *type_name(int t)
{
	return netdesc::DataType_IsValid(t) ? netdesc::DataType_Name(netdesc::DataType(t)).c_str() : "?";
}

std::string dims_text(const google::protobuf::RepeatedField<int32_t> &d)
{
	std::string s = "[";
	for (int i = 0; i < d.size(); i++)
		s += (i ? "," : "") + std::to_string(d[i]);
	return s + "]";
}

bool is_quantized(int t)
{
	return t == netdesc::Int8QTy || t == netdesc::UInt8QTy || t == netdesc::Int16QTy || t == netdesc::Int32QTy;
}

uint64_t binding_bytes(const netdesc::IoDescriptor &d)
{
	Tensor t;
	t.type = d.type();
	t.dims.assign(d.dims().begin(), d.dims().end());
	return tensor_bytes(t);
}

} // namespace

bool umd_runs(const netdesc::networkDescriptor &d, std::string &why)
{
	for (const auto *list : {&d.inputs(), &d.outputs()})
		for (const netdesc::IoBinding &b : *list) {
			const char *what = list == &d.inputs() ? "input " : "output ";
			if (b.transformseq_size() > 1) {
				why = what + b.name() + " has " + std::to_string(b.transformseq_size()) + " transforms";
				return false;
			}
			if (b.transformseq_size() == 1 && b.transformseq(0).kind() != netdesc::CopyDMABufferTransform) {
				why = what + b.name() + "'s transform is " +
				      netdesc::TransformKind_Name(b.transformseq(0).kind());
				return false;
			}
		}
	return true;
}

unsigned element_size(netdesc::DataType t)
{
	switch (t) {
	case netdesc::FloatTy:
	case netdesc::Int32QTy:
	case netdesc::Int32ITy:
		return 4;
	case netdesc::Float16Ty:
	case netdesc::Int16QTy:
		return 2;
	case netdesc::Int8QTy:
	case netdesc::UInt8QTy:
	case netdesc::Int8Ty:
		return 1;
	case netdesc::Int64ITy:
		return 8;
	default:
		return 0;
	}
}

uint64_t tensor_bytes(const Tensor &t)
{
	uint64_t n = element_size(t.type);
	if (t.dims.empty())
		return 0;
	for (int32_t d : t.dims) {
		if (d <= 0)
			return 0;
		n *= uint64_t(d);
		if (n > std::numeric_limits<uint32_t>::max())
			return 0;
	}
	return n;
}

std::vector<uint8_t> encode_constants_descriptor(const ConstantsDescriptor &d)
{
	std::vector<uint8_t> b(kConstantsDescriptorSize);
	wire::store(b.data(), 0, ConstantsDescriptor{d.static_size, d.dynamic_size, d.ecc_static, d.ecc_dynamic, {}});
	return b;
}

std::optional<ConstantsDescriptor> decode_constants_descriptor(std::span<const uint8_t> b, std::string &err)
{
	if (b.size() != kConstantsDescriptorSize) {
		err = "constantsdesc.bin is " + std::to_string(b.size()) + " bytes, not 24";
		return std::nullopt;
	}
	for (size_t i = 18; i < kConstantsDescriptorSize; i++)
		if (b[i]) {
			err = "constantsdesc.bin: padding byte " + std::to_string(i) + " is not 0";
			return std::nullopt;
		}
	if (b[16] > 1 || b[17] > 1) {
		err = "constantsdesc.bin: an ECC flag is neither 0 nor 1";
		return std::nullopt;
	}
	return wire::load<ConstantsDescriptor>(b);
}

namespace {

// A byte range of the window that one tensor, or the constants, takes.
struct Range {
	std::string what;
	uint64_t at, n;
};

// Why tensor `t` (an input when `input`) cannot be in a window of `window`
// bytes, or "" when it can.
std::string tensor_problem(const Tensor &t, bool input, uint64_t window)
{
	const uint64_t n = tensor_bytes(t);
	if (n == 0)
		return t.name + ": its type and dims give no size below 4 GiB";
	if (t.float_input && (!input || !is_quantized(t.type)))
		return t.name + ": only an input of a quantized type can be handed over as float";
	if (t.float_input &&
	    uint64_t(element_size(netdesc::FloatTy)) * (n / element_size(t.type)) > std::numeric_limits<uint32_t>::max())
		return t.name + ": as float it is 4 GiB or more";
	if (t.dev_offset > window || n > window - t.dev_offset)
		return t.name + ": [" + hex(t.dev_offset) + ", +" + hex(n) + ") is outside the window of " + hex(window) +
		       " bytes";
	return {};
}

// The window ranges of the spec's tensors and constants, in that order;
// the first problem in `why` when one does not fit.
std::vector<Range> window_ranges(const ProgramSpec &spec, const nsp::Workload &w, std::string &why)
{
	const uint64_t window = w.meta.io_size;
	std::vector<Range> ranges;
	std::set<std::string> names;
	for (const auto *list : {&spec.inputs, &spec.outputs})
		for (const Tensor &t : *list) {
			if (t.name.empty() || !names.insert(t.name).second)
				why = "tensor names must be non-empty and different (\"" + t.name + "\")";
			else
				why = tensor_problem(t, list == &spec.inputs, window);
			if (!why.empty())
				return {};
			ranges.push_back({t.name, t.dev_offset, tensor_bytes(t)});
		}
	if (!spec.constants.empty()) {
		const uint64_t at = w.meta.const_offset, n = spec.constants.size();
		if (at > window || n > window - at) {
			why = "the constants ([" + hex(at) + ", +" + hex(n) + ")) do not fit in the window of " +
			      hex(window) + " bytes";
			return {};
		}
		ranges.push_back({"the constants", at, n});
	}
	return ranges;
}

// Why `spec` does not fit its workload `w`, or "" when it does.
std::string spec_problem(const ProgramSpec &spec, const nsp::Workload &w)
{
	if (spec.inputs.empty() || spec.outputs.empty())
		return "a program needs at least one input and one output";
	if (spec.sem_in >= sem::kCount || spec.sem_out >= sem::kCount || spec.sem_in == spec.sem_out)
		return "sem_in and sem_out must be two different semaphores below 32";
	std::string why;
	const std::vector<Range> ranges = window_ranges(spec, w, why);
	if (!why.empty())
		return why;
	for (size_t i = 0; i < ranges.size(); i++)
		for (size_t j = i + 1; j < ranges.size(); j++)
			if (overlap(ranges[i].at, ranges[i].n, ranges[j].at, ranges[j].n))
				return ranges[i].what + " and " + ranges[j].what + " overlap in the window";
	return {};
}

// What the metadata says about the program's instructions.
struct ProgramUse {
	unsigned top_sem = 0; // the highest semaphore it or the host protocol uses
	bool hvx_fp = false, hmx_fp = false, hmx = false;
};

ProgramUse program_use(const ProgramSpec &spec, const nsp::Workload &w)
{
	ProgramUse u;
	u.top_sem = std::max(spec.sem_in, spec.sem_out);
	for (const nsp::Instr &in : w.program) {
		if (is_sem_op(in.op))
			u.top_sem = std::max<unsigned>(u.top_sem, in.a);
		u.hvx_fp |= is_vector_fp(in.op);
		u.hmx_fp |= in.op == uint8_t(nsp::Op::MmF32);
		u.hmx |= in.op == uint8_t(nsp::Op::MmI8) || in.op == uint8_t(nsp::Op::MmF32) ||
			 in.op == uint8_t(nsp::Op::MmI8P);
	}
	return u;
}

// The DMA request of buffer `num`, tensor `t`, without semaphore operations.
std::unique_ptr<meta::DmaRequestT> dma_request(const Tensor &t, uint16_t num, uint8_t in_out, uint16_t port)
{
	auto r = std::make_unique<meta::DmaRequestT>();
	r->devOffset = t.dev_offset;
	r->size = uint32_t(tensor_bytes(t));
	r->num = num;
	r->devAddrSpace = kAddrSpaceDdr;
	r->inOut = in_out;
	r->portId = port;
	return r;
}

// One DMA request per input, then one per output, with the host's
// semaphore protocol (ProgramSpec::sem_in, sem_out).
void add_dma_requests(meta::MetadataT &m, const ProgramSpec &spec)
{
	uint16_t num = 0;
	for (size_t i = 0; i < spec.inputs.size(); i++, num++) {
		auto r = dma_request(spec.inputs[i], num, kDmaIn, kPortHostInput);
		if (i == 0)
			r->semaphoreOps.push_back(sem_op(sem::Op::WaitEq, spec.sem_in, 0, kSemPre));
		if (i + 1 == spec.inputs.size())
			r->semaphoreOps.push_back(sem_op(sem::Op::Inc, spec.sem_in, 1, kSemPost));
		m.dmaRequests.push_back(std::move(r));
	}
	for (size_t i = 0; i < spec.outputs.size(); i++, num++) {
		auto r = dma_request(spec.outputs[i], num, kDmaOut, kPortHostOutput);
		// WAIT >= 1 rather than P: P means "wait and take 1" to the UMD
		// but only "wait" to upstream's uapi and to our card.
		if (i == 0)
			r->semaphoreOps.push_back(sem_op(sem::Op::WaitGe, spec.sem_out, 1, kSemPre));
		if (i + 1 == spec.outputs.size())
			r->semaphoreOps.push_back(sem_op(sem::Op::Dec, spec.sem_out, 1, kSemPost));
		m.dmaRequests.push_back(std::move(r));
	}
}

// The multicast tables (empty), the one thread and the constants' mapping.
void add_tables(meta::MetadataT &m, const ProgramSpec &spec, const nsp::Workload &w, const ProgramUse &use)
{
	for (unsigned i = 0; i < w.meta.nsp_count; i++)
		m.nspMulticastTables.push_back(std::make_unique<meta::NspMulticastEntryTableT>());
	m.hostMulticastTable = std::make_unique<meta::HostMulticastEntryTableT>();
	auto thread = std::make_unique<meta::ThreadDescriptorT>();
	thread->entryPoint = w.meta.entry;
	thread->typeMask = kThreadHvx | (use.hmx ? kThreadHmx : 0);
	m.threadDescriptors.push_back(std::move(thread));
	if (!spec.constants.empty()) {
		auto c = std::make_unique<meta::ConstantMappingT>();
		c->constantDataBaseOffset = 0;
		c->coreMask = uint32_t((1ull << w.meta.nsp_count) - 1);
		c->size = uint32_t(spec.constants.size());
		m.constantMappings.push_back(std::move(c));
	}
}

} // namespace

std::optional<meta::MetadataT> make_metadata(const ProgramSpec &spec, const nsp::Workload &w, std::string &err)
{
	if (std::string why = spec_problem(spec, w); !why.empty()) {
		err = std::move(why);
		return std::nullopt;
	}
	const ProgramUse use = program_use(spec, w);
	if (use.top_sem >= sem::kCount) {
		err = "the program uses semaphore " + std::to_string(use.top_sem) + "; a DBC has 32";
		return std::nullopt;
	}
	meta::MetadataT m;
	m.versionMajor = kMetadataMajor;
	m.versionMinor = kMetadataMinor;
	m.networkName = w.meta.name;
	for (const char *f : kRequired)
		m.requiredFields.emplace_back(f);
	m.numSemaphores = uint16_t(use.top_sem + 1);
	m.semaphoreInitState.assign(m.numSemaphores, 0);
	add_dma_requests(m, spec);
	add_tables(m, spec, w, use);
	m.staticSharedDDRSize = w.meta.io_size;
	m.staticConstantsSize = spec.constants.size();
	m.exitDoorbellOffset = kNoExitDoorbell;
	m.execContextMajorVersion = kExecContextMajor;
	m.numNSPs = w.meta.nsp_count;
	m.hwVersionMajor = kHwVersionMajor;
	m.hwVersionMinor = kHwVersionMinor;
	m.hasHvxFP = use.hvx_fp;
	m.hasHmxFP = use.hmx_fp;
	return m;
}

netdesc::networkDescriptor make_network_descriptor(const ProgramSpec &spec, const nsp::Workload &w)
{
	netdesc::networkDescriptor d;
	d.set_major_version(kNetDescMajor);
	d.set_minor_version(kNetDescMinor);
	d.set_network_name(w.meta.name);
	d.set_num_cores(w.meta.nsp_count);
	d.set_num_threads(1);
	d.set_num_hvx_threads(1);
	d.set_batch_size(1);
	uint32_t buffer = 0;
	auto fill = [](netdesc::IoDescriptor *io, const Tensor &t) {
		io->set_type(t.type);
		io->set_qscale(t.qscale);
		io->set_qoffset(t.qoffset);
		for (int32_t v : t.dims)
			io->add_dims(v);
		io->set_layout(netdesc::FlatNXYD);
	};
	for (const auto *list : {&spec.inputs, &spec.outputs}) {
		const bool in = list == &spec.inputs;
		for (const Tensor &t : *list) {
			netdesc::IoBinding *b = in ? d.add_inputs() : d.add_outputs();
			b->set_name(t.name);
			fill(b->mutable_io_initial(), t);
			fill(b->mutable_io_transformed(), t);
			b->set_align(element_size(t.type));
			auto transform = [&](netdesc::TransformKind kind) {
				netdesc::Transform *x = b->add_transformseq();
				x->set_kind(kind);
				x->set_type(t.type);
				x->set_scale(t.qscale);
				x->set_offset(t.qoffset);
				for (int32_t v : t.dims)
					x->add_dims(v);
				x->set_layout(netdesc::FlatNXYD);
				return x;
			};
			if (t.float_input) {
				// The user's tensor is float; the quantize step makes
				// `type` of it, which the copy then moves.
				netdesc::IoDescriptor *user = b->mutable_io_initial();
				user->set_type(netdesc::FloatTy);
				user->set_qscale(1);
				user->set_qoffset(0);
				b->set_align(element_size(netdesc::FloatTy));
				transform(netdesc::QuantizeTransform);
			}
			netdesc::Transform *x = transform(netdesc::CopyDMABufferTransform);
			x->mutable_copy_dma_buffer()->set_dir(in ? netdesc::In : netdesc::Out);
			x->mutable_copy_dma_buffer()->set_offset(0);
			x->mutable_copy_dma_buffer()->set_buffer_num(buffer++);
			netdesc::DmaBuffer *db = d.add_dma_buffers();
			db->set_size(uint32_t(tensor_bytes(t)));
			db->set_dir(in ? netdesc::In : netdesc::Out);
		}
	}
	return d;
}

std::optional<std::vector<uint8_t>> build_qpc(const ProgramSpec &spec, std::string &err)
{
	const auto w = nsp::parse(spec.elf, err);
	if (!w) {
		err = "the ELF is not a workload for our NSPs: " + err;
		return std::nullopt;
	}
	std::string why;
	for (const char *name : {kMetadataSection, kMetadataFbSection})
		if (find_section(spec.elf, name, why)) {
			err = std::string("the ELF already has a ") + name + " section";
			return std::nullopt;
		}
	const auto m = make_metadata(spec, *w, err);
	if (!m)
		return std::nullopt;
	auto elf = add_section(spec.elf, kMetadataSection, encode_metadata(*m), err);
	if (elf)
		elf = add_section(*elf, kMetadataFbSection, encode_flatbuffer(*m), err);
	if (!elf)
		return std::nullopt;
	std::string desc;
	if (!make_network_descriptor(spec, *w).SerializeToString(&desc)) {
		err = "the network descriptor did not serialize";
		return std::nullopt;
	}
	std::vector<Segment> segs;
	segs.push_back({kNetworkElf, std::move(*elf), 0});
	segs.push_back({kNetworkDesc, std::vector<uint8_t>(desc.begin(), desc.end()), 0});
	segs.push_back({kConstantsDesc, encode_constants_descriptor({spec.constants.size(), 0, 0, 0, {}}), 0});
	if (!spec.constants.empty())
		segs.push_back({kConstants, spec.constants, spec.constants.size()});
	auto file = write_container(segs, err);
	if (!file)
		return std::nullopt;
	// What we write, we must be able to read.
	if (!read_qpc(*file, why)) {
		err = "the container would not read back: " + why;
		return std::nullopt;
	}
	return file;
}

namespace {

// Why container `c` lacks what a program needs, or "".
std::string segments_problem(const Container &c)
{
	for (const char *name : {kNetworkElf, kNetworkDesc, kConstantsDesc})
		if (!c.find(name))
			return std::string("no ") + name + " segment";
	for (const Segment &s : c.segments)
		if (s.split && s.name != kConstants)
			return "segment " + s.name + " has a split; only constants.bin may";
	return {};
}

// network.elf: the card's view (the workload), then the host's (the
// metadata section).
std::string read_network_elf(Program &p, const Segment &s)
{
	std::string err;
	p.elf = s.data;
	auto w = nsp::parse(p.elf, err);
	if (!w)
		return "network.elf is not a workload for our NSPs: " + err;
	p.workload = std::move(*w);
	const auto section = find_section(p.elf, kMetadataSection, err);
	if (!section)
		return "network.elf: " + err;
	p.metadata = decode_metadata(*section, err);
	if (!p.metadata)
		return "network.elf: " + err;
	// The UMD reads metadata_fb where there is one, the compiler's own
	// tools read metadata: they must say the same.
	if (const auto fb = find_section(p.elf, kMetadataFbSection, err)) {
		const auto fb_metadata = decode_metadata(*fb, err);
		if (!fb_metadata)
			return "network.elf: metadata_fb: " + err;
		if (encode_flatbuffer(*fb_metadata) != encode_flatbuffer(*p.metadata))
			return "network.elf: metadata_fb and metadata disagree";
	}
	return {};
}

std::string read_network_desc(Program &p, const Segment &s)
{
	if (!p.desc.ParseFromArray(s.data.data(), int(s.data.size())))
		return "networkdesc.bin is not a network descriptor";
	if (p.desc.major_version() != kNetDescMajor)
		return "network descriptor version " + std::to_string(p.desc.major_version()) + " is not 9";
	return {};
}

// constantsdesc.bin, and constants.bin cut as the UMD cuts it: a non-zero
// split is the static part.
std::string read_constants(Program &p, const Container &c)
{
	std::string err;
	auto cd = decode_constants_descriptor(c.find(kConstantsDesc)->data, err);
	if (!cd)
		return err;
	p.constants_desc = *cd;
	if (const Segment *k = c.find(kConstants)) {
		const auto mid = k->data.begin() + long(k->split);
		if (k->split)
			p.static_constants.assign(k->data.begin(), mid);
		p.dynamic_constants.assign(mid, k->data.end());
	}
	return {};
}

// Whether the metadata, the network descriptor and .aic.meta agree on the
// program's name, NSPs, semaphores and memory.
std::string metadata_problem(const Program &p)
{
	const nsp::Meta &am = p.workload.meta;
	const meta::MetadataT &m = *p.metadata;
	const uint64_t window = am.io_size;
	if (m.numNSPs != am.nsp_count || p.desc.num_cores() != am.nsp_count)
		return "NSP counts disagree: metadata " + std::to_string(m.numNSPs) + ", network descriptor " +
		       std::to_string(p.desc.num_cores()) + ", .aic.meta " + std::to_string(am.nsp_count);
	if (m.networkName != am.name || p.desc.network_name() != am.name)
		return "names disagree: metadata \"" + m.networkName + "\", network descriptor \"" +
		       p.desc.network_name() + "\", .aic.meta \"" + am.name + "\"";
	if (m.numSemaphores > sem::kCount || m.semaphoreInitState.size() != m.numSemaphores)
		return "numSemaphores " + std::to_string(m.numSemaphores) + " with " +
		       std::to_string(m.semaphoreInitState.size()) + " initial states (a DBC has 32)";
	for (uint32_t v : m.semaphoreInitState)
		if (v > sem::kMax)
			return "a semaphore's initial state is above 4095";
	if (m.nspMulticastTables.size() != m.numNSPs || !m.hostMulticastTable)
		return "the metadata needs one NSP multicast table per NSP and a host multicast table";
	if (m.staticSharedDDRSize > window || m.dynamicSharedDDRSize > window - m.staticSharedDDRSize)
		return "the shared DDR (" + hex(m.staticSharedDDRSize) + " + " + hex(m.dynamicSharedDDRSize) +
		       ") is larger than the window of " + hex(window);
	return {};
}

// Whether the three views of the constants agree and fit in the window.
std::string constants_problem(const Program &p)
{
	const nsp::Meta &am = p.workload.meta;
	const meta::MetadataT &m = *p.metadata;
	const ConstantsDescriptor &cd = p.constants_desc;
	const uint64_t window = am.io_size;
	if (m.staticConstantsSize != cd.static_size || m.dynamicConstantsSize != cd.dynamic_size ||
	    p.static_constants.size() > cd.static_size || p.dynamic_constants.size() > cd.dynamic_size)
		return "constant sizes disagree: metadata " + std::to_string(m.staticConstantsSize) + "+" +
		       std::to_string(m.dynamicConstantsSize) + ", constantsdesc.bin " + std::to_string(cd.static_size) +
		       "+" + std::to_string(cd.dynamic_size) + ", constants.bin " +
		       std::to_string(p.static_constants.size()) + "+" + std::to_string(p.dynamic_constants.size());
	const uint64_t consts = cd.static_size + cd.dynamic_size;
	if (consts && (am.const_offset > window || consts > window - am.const_offset))
		return "the constants (" + hex(consts) + " bytes at " + hex(am.const_offset) +
		       ") do not fit in the window of " + hex(window);
	return {};
}

// The semaphore operations of DMA request `what` as our card takes them:
// at most one presync, no wait after the transfer.
std::string semaphore_ops_problem(const meta::MetadataT &m, const meta::DmaRequestT &r, const std::string &what)
{
	unsigned pre = 0;
	for (const auto &s : r.semaphoreOps) {
		if (s->semNum >= m.numSemaphores || s->semOp > uint8_t(sem::Op::WaitGt0) || s->semValue > sem::kMax ||
		    s->preOrPost > kSemPre || s->inSyncFence > 1 || s->outSyncFence > 1)
			return what + " has a malformed semaphore operation";
		pre += s->preOrPost == kSemPre && s->semOp != uint8_t(sem::Op::Nop);
		if (s->preOrPost == kSemPost && s->semOp >= uint8_t(sem::Op::WaitEq))
			return what + " waits after its transfer (a wait must be presync)";
	}
	if (pre > 1)
		return what + " has more than one presync semaphore operation";
	return {};
}

// DMA request `i`: its buffer, direction and window range.
std::string dma_request_problem(const Program &p, size_t i)
{
	const meta::MetadataT &m = *p.metadata;
	const meta::DmaRequestT &r = *m.dmaRequests[i];
	const std::string what = "DMA request " + std::to_string(i);
	const int nbuf = p.desc.dma_buffers_size();
	if (r.num >= nbuf)
		return what + " names buffer " + std::to_string(r.num) + " of " + std::to_string(nbuf);
	const netdesc::DmaBuffer &b = p.desc.dma_buffers(r.num);
	if (r.inOut > kDmaOut || (r.inOut == kDmaIn) != (b.dir() == netdesc::In))
		return what + " moves data the other way from its buffer " + std::to_string(r.num);
	if (r.hostOffset > b.size() || r.size > b.size() - r.hostOffset)
		return what + " reaches past the end of its buffer " + std::to_string(r.num);
	if (r.size && r.devAddrSpace != kAddrSpaceDdr)
		return what + " addresses multicast space; our card has DDR windows only";
	if (r.devOffset > m.staticSharedDDRSize || r.size > m.staticSharedDDRSize - r.devOffset)
		return what + ": [" + hex(r.devOffset) + ", +" + hex(r.size) + ") is outside the shared DDR";
	if (r.semaphoreOps.size() > kMaxSemaphoreOps || r.doorbellOps.size() > kMaxDoorbellOps)
		return what + " has more than 4 semaphore or 1 doorbell operations";
	return semaphore_ops_problem(m, r, what);
}

// Input or output binding `b`: its transforms, sizes and DMA buffer.
std::string binding_problem(const netdesc::networkDescriptor &d, const netdesc::IoBinding &b, bool in)
{
	const std::string what = (in ? "input " : "output ") + b.name();
	const int steps = b.transformseq_size();
	const bool quantize = in && steps == 2 && b.transformseq(0).kind() == netdesc::QuantizeTransform;
	if ((steps != 1 && !quantize) || b.transformseq(steps - 1).kind() != netdesc::CopyDMABufferTransform)
		return what + ": its transforms must be one CopyDMABuffer, or for an input a Quantize "
			      "and then a CopyDMABuffer";
	const auto &copy = b.transformseq(steps - 1).copy_dma_buffer();
	// What the DMA buffer holds: the tensor as the card sees it.
	const netdesc::IoDescriptor &card = in ? b.io_transformed() : b.io_initial();
	const netdesc::IoDescriptor &user = in ? b.io_initial() : b.io_transformed();
	const uint64_t n = binding_bytes(card);
	if (quantize) {
		const netdesc::Transform &q = b.transformseq(0);
		if (user.type() != netdesc::FloatTy || !is_quantized(card.type()) || q.type() != card.type() ||
		    b.transformseq(1).type() != card.type() || binding_bytes(user) == 0 ||
		    binding_bytes(user) / element_size(netdesc::FloatTy) != n / element_size(card.type()))
			return what + ": its Quantize step must take a float tensor to the quantized type "
				      "of the same elements that its copy moves";
	} else if (n == 0 || n != binding_bytes(user)) {
		return what + ": no size, or its two descriptors differ in size";
	}
	if (int(copy.buffer_num()) >= d.dma_buffers_size() || (copy.dir() == netdesc::In) != in ||
	    (d.dma_buffers(int(copy.buffer_num())).dir() == netdesc::In) != in)
		return what + ": its DMA buffer does not exist or goes the other way";
	if (copy.offset() > d.dma_buffers(int(copy.buffer_num())).size() ||
	    n > d.dma_buffers(int(copy.buffer_num())).size() - copy.offset())
		return what + " does not fit in its DMA buffer";
	return {};
}

// The cross-checks of a program's parts (docs/qpc.md, "What the reader
// checks"), in order; "" when they agree.
std::string program_problem(const Program &p)
{
	if (std::string why = metadata_problem(p); !why.empty())
		return why;
	if (std::string why = constants_problem(p); !why.empty())
		return why;
	for (size_t i = 0; i < p.metadata->dmaRequests.size(); i++)
		if (std::string why = dma_request_problem(p, i); !why.empty())
			return why;
	for (const auto *list : {&p.desc.inputs(), &p.desc.outputs()})
		for (const netdesc::IoBinding &b : *list)
			if (std::string why = binding_problem(p.desc, b, list == &p.desc.inputs()); !why.empty())
				return why;
	return {};
}

} // namespace

std::optional<Program> read_qpc(std::span<const uint8_t> file, std::string &err)
{
	auto c = read_container(file, err);
	if (!c)
		return std::nullopt;
	Program p;
	std::string why = segments_problem(*c);
	if (why.empty())
		why = read_network_elf(p, *c->find(kNetworkElf));
	if (why.empty())
		why = read_network_desc(p, *c->find(kNetworkDesc));
	if (why.empty())
		why = read_constants(p, *c);
	p.container = std::move(*c);
	if (why.empty())
		why = program_problem(p);
	if (!why.empty()) {
		err = std::move(why);
		return std::nullopt;
	}
	return p;
}

namespace {

// Lines of text, each from a printf format.
class Lines {
public:
	template <typename... Args> void operator()(const char *fmt, Args... args)
	{
		char b[320];
		std::snprintf(b, sizeof(b), fmt, args...);
		text += b;
		text += '\n';
	}

	std::string text;
};

void describe_container(Lines &line, const Container &c)
{
	line("container: version %u.%u, compression %u, base 0x%" PRIx64 ", %zu segments", c.major, c.minor,
	     c.compression, c.base, c.segments.size());
	for (const Segment &g : c.segments)
		line("  segment %-18s %10zu bytes, split %" PRIu64, g.name.c_str(), g.data.size(), g.split);
}

void describe_workload(Lines &line, const nsp::Workload &w)
{
	const nsp::Meta &am = w.meta;
	line("network.elf (.aic.meta): name \"%s\", %u NSPs, window 0x%" PRIx64 ", entry %u, const_offset 0x%x, "
	     "%zu instructions, %zu data segments",
	     am.name.c_str(), am.nsp_count, am.io_size, am.entry, am.const_offset, w.program.size(), w.segments.size());
}

// The metadata's scalars, semaphores and required fields.
void describe_metadata_fields(Lines &line, const meta::MetadataT &m)
{
	line("metadata: version %u.%u, name \"%s\", hw %u.%u, exec context %u", m.versionMajor, m.versionMinor,
	     m.networkName.c_str(), m.hwVersionMajor, m.hwVersionMinor, m.execContextMajorVersion);
	line("  numNSPs %u, numSemaphores %u, shared DDR 0x%" PRIx64 " static + 0x%" PRIx64 " dynamic, constants %" PRIu64
	     " static + %" PRIu64 " dynamic",
	     m.numNSPs, m.numSemaphores, m.staticSharedDDRSize, m.dynamicSharedDDRSize, m.staticConstantsSize,
	     m.dynamicConstantsSize);
	line("  ECC: shared %u/%u, constants %u/%u; VTCM %u, L2TCM %u (init %u bytes, %zu given), l2CachedDDR %u, "
	     "heap %" PRIu64 ", singleVTCMPage %u, hvxFP %u, hmxFP %u, exit doorbell 0x%" PRIx64
	     ", raw length %" PRIu64,
	     m.staticSharedDDRECCEnabled, m.dynamicSharedDDRECCEnabled, m.staticConstantsECCEnabled,
	     m.dynamicConstantsECCEnabled, m.VTCMSize, m.L2TCMSize, m.L2TCMInitSize, m.L2TCMInitState.size(),
	     m.l2CachedDDRSize, m.networkHeapSize, m.singleVTCMPage, m.hasHvxFP, m.hasHmxFP, m.exitDoorbellOffset,
	     m.raw_struct_version_length);
	std::string sems;
	for (uint32_t v : m.semaphoreInitState)
		sems += " " + std::to_string(v);
	line("  semaphore initial states:%s", sems.c_str());
	for (const std::string &f : m.requiredFields)
		line("  required field %s", f.c_str());
}

void describe_dma_requests(Lines &line, const meta::MetadataT &m)
{
	static const char *const ops[] = {"nop", "init", "inc", "dec", "wait==", "wait>=", "P"};
	for (size_t i = 0; i < m.dmaRequests.size(); i++) {
		const meta::DmaRequestT &r = *m.dmaRequests[i];
		line("  dma %zu: buffer %u +0x%" PRIx64 " %s %s 0x%" PRIx64 " (mcId %u), %u bytes, port %u", i, r.num,
		     r.hostOffset, r.inOut == kDmaIn ? "->" : "<-", r.devAddrSpace == kAddrSpaceDdr ? "DDR" : "MC",
		     r.devOffset, r.mcId, r.size, r.portId);
		for (const auto &o : r.semaphoreOps)
			line("    %s sem %u %s %u (fences in %u out %u)", o->preOrPost == kSemPre ? "pre " : "post",
			     o->semNum, o->semOp <= uint8_t(sem::Op::WaitGt0) ? ops[o->semOp] : "?", o->semValue,
			     o->inSyncFence, o->outSyncFence);
		for (const auto &d : r.doorbellOps)
			line("    doorbell mcId %u +0x%" PRIx64 " = 0x%x (size code %u)", d->mcId, d->offset, d->data, d->size);
	}
}

// The multicast tables, the threads and the constants' mappings.
void describe_metadata_tables(Lines &line, const meta::MetadataT &m)
{
	for (size_t i = 0; i < m.nspMulticastTables.size(); i++)
		for (const auto &e : m.nspMulticastTables[i]->multicastEntries)
			line("  NSP %zu multicast: +0x%" PRIx64 " mask 0x%x size %u space %u dynamic %u", i, e->baseAddrOffset,
			     e->mask, e->size, e->addrSpace, e->dynamic);
	for (const auto &e : m.hostMulticastTable->multicastEntries)
		line("  host multicast: mask 0x%x size %u", e->mask, e->size);
	for (const auto &t : m.threadDescriptors)
		line("  thread: entry %" PRIu64 ", type mask 0x%x", t->entryPoint, t->typeMask);
	for (const auto &k : m.constantMappings)
		line("  constant mapping: +0x%" PRIx64 " cores 0x%x size %u", k->constantDataBaseOffset, k->coreMask, k->size);
}

void describe_network_desc(Lines &line, const netdesc::networkDescriptor &d)
{
	line("networkdesc.bin: version %u.%u, name \"%s\", %u cores, %u threads (%u HVX), batch %d", d.major_version(),
	     d.minor_version(), d.network_name().c_str(), d.num_cores(), d.num_threads(), d.num_hvx_threads(),
	     d.batch_size());
	for (const auto *list : {&d.inputs(), &d.outputs()})
		for (const netdesc::IoBinding &io : *list) {
			const netdesc::IoDescriptor &x = list == &d.inputs() ? io.io_initial() : io.io_transformed();
			const auto &copy = io.transformseq(io.transformseq_size() - 1).copy_dma_buffer();
			line("  %s %-8s %s%s scale %g offset %d, DMA buffer %u +%u, align %u%s",
			     list == &d.inputs() ? "input " : "output", io.name().c_str(), type_name(x.type()),
			     dims_text(x.dims()).c_str(), double(x.qscale()), x.qoffset(), copy.buffer_num(), copy.offset(),
			     io.align(), io.is_partial_allowed() ? ", partial allowed" : "");
			if (io.transformseq_size() > 1) {
				const netdesc::Transform &q = io.transformseq(0);
				line("    quantized to %s scale %g offset %d before the copy", type_name(q.type()),
				     double(q.scale()), q.offset());
			}
		}
	if (std::string why; !umd_runs(d, why))
		line("open UMD: loads this program but refuses to run it (%s)", why.c_str());
	for (int i = 0; i < d.dma_buffers_size(); i++)
		line("  DMA buffer %d: %u bytes %s", i, d.dma_buffers(i).size(),
		     d.dma_buffers(i).dir() == netdesc::In ? "in" : "out");
}

void describe_constants(Lines &line, const Program &p)
{
	line("constantsdesc.bin: static %" PRIu64 ", dynamic %" PRIu64 ", ECC %u/%u", p.constants_desc.static_size,
	     p.constants_desc.dynamic_size, p.constants_desc.ecc_static, p.constants_desc.ecc_dynamic);
	if (p.container.find(kConstants))
		line("constants.bin: %zu static + %zu dynamic bytes, copied to window offset 0x%x at ACTIVATE",
		     p.static_constants.size(), p.dynamic_constants.size(), p.workload.meta.const_offset);
}

} // namespace

std::string describe(const Program &p)
{
	Lines line;
	describe_container(line, p.container);
	describe_workload(line, p.workload);
	describe_metadata_fields(line, *p.metadata);
	describe_dma_requests(line, *p.metadata);
	describe_metadata_tables(line, *p.metadata);
	describe_network_desc(line, p.desc);
	describe_constants(line, p);
	return line.text;
}

} // namespace aic100::qpc
