// SPDX-License-Identifier: GPL-2.0-or-later
// QSM commands: the NNC command protocol 17.0 carried in passthroughs, and
// the card's resources behind it (docs/qsm.md, "Commands").
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>

#include "aic100/qsm.h"
#include "aic100/wire.h"

namespace aic100 {

using wire::load;

using namespace nnc;
using namespace nnc::cmd;

namespace {

template <typename T> std::vector<uint8_t> bytes_of(const T &v)
{
	std::vector<uint8_t> b(sizeof(T));
	std::memcpy(b.data(), &v, sizeof(T));
	return b;
}

void copy_str(char *dst, size_t n, const std::string &s)
{
	std::memset(dst, 0, n);
	std::memcpy(dst, s.data(), std::min(n - 1, s.size()));
}

constexpr unsigned kVcs = regs::kNumDbc;
constexpr uint32_t kHwVersion = 0x00020000; // major 2
constexpr uint8_t kSkuPcieProfessional = 3; // the UMD's "PCIe Pro"
// Where the card shows activations' multicast (VTCM) windows to the UMD.
constexpr uint64_t kMcidBase = 0x10000000000ull;

} // namespace

// ---- resources -------------------------------------------------------------

Qsm::Counts Qsm::device_free() const
{
	Counts f{cfg_.nsp_count, kVcs, kVcs * kSemsPerVc, kMcids, ddr_.size()};
	auto take = [&f](const Counts &c) {
		f.nsp -= c.nsp;
		f.vc -= c.vc;
		f.sem -= c.sem;
		f.mcid -= c.mcid;
		f.mem -= c.mem;
	};
	take(device_used_);
	// A group carved from another is inside its source's share already.
	for (const auto &[id, g] : groups_)
		if (g.source < 0)
			take(g.cap);
	return f;
}

Qsm::Counts Qsm::free_counts(int32_t group) const
{
	if (group < 0)
		return device_free();
	auto it = groups_.find(group);
	if (it == groups_.end())
		return {};
	const Group &g = it->second;
	return {g.cap.nsp - g.used.nsp, g.cap.vc - g.used.vc, g.cap.sem - g.used.sem, g.cap.mcid - g.used.mcid,
		g.cap.mem - g.used.mem};
}

size_t Qsm::objects_of(uint32_t handle) const
{
	size_t n = 0;
	for (const auto &[id, o] : objects_)
		n += o.owner == handle;
	for (const auto &[id, a] : acts_)
		n += a.owner == handle;
	for (const auto &[id, g] : groups_)
		n += g.owner == handle && !g.orphaned;
	return n;
}

bool Qsm::reserve(int32_t group, const Counts &want)
{
	const Counts f = free_counts(group);
	if (want.nsp > f.nsp || want.vc > f.vc || want.sem > f.sem || want.mcid > f.mcid || want.mem > f.mem)
		return false;
	Counts &u = group < 0 ? device_used_ : groups_.at(group).used;
	u.nsp += want.nsp;
	u.vc += want.vc;
	u.sem += want.sem;
	u.mcid += want.mcid;
	u.mem += want.mem;
	return true;
}

void Qsm::unreserve(int32_t group, const Counts &give)
{
	Counts *u = &device_used_;
	if (group >= 0) {
		auto it = groups_.find(group);
		if (it == groups_.end())
			return;
		u = &it->second.used;
	}
	u->nsp -= give.nsp;
	u->vc -= give.vc;
	u->sem -= give.sem;
	u->mcid -= give.mcid;
	u->mem -= give.mem;
	if (group >= 0)
		maybe_retire_group(group);
}

Qsm::Group *Qsm::group_for(int32_t id, uint32_t handle)
{
	(void)handle; // a group is a partition: any user may allocate in it
	auto it = groups_.find(id);
	return it == groups_.end() || it->second.orphaned ? nullptr : &it->second;
}

// The group a command allocates from: its own argument, else the message's
// partition, else the device pool (-1).
int32_t Qsm::pick_group(const Ctx &c, int32_t explicit_group, bool &ok)
{
	ok = true;
	const int32_t g = explicit_group >= 0 ? explicit_group : c.partition;
	if (g < 0)
		return -1;
	ok = group_for(g, c.handle) != nullptr;
	return g;
}

void Qsm::maybe_retire_group(int32_t id)
{
	auto it = groups_.find(id);
	if (it == groups_.end() || !it->second.orphaned)
		return;
	const Counts &u = it->second.used;
	if (u.nsp || u.vc || u.sem || u.mcid || u.mem)
		return;
	const Group g = it->second;
	groups_.erase(it);
	if (g.source >= 0)
		unreserve(g.source, g.cap);
}

// ---- commands ----------------------------------------------------------------

std::optional<std::span<const uint8_t>> Qsm::take_dma(Ctx &c, uint32_t tag, uint64_t len)
{
	auto it = c.dma->find(tag);
	if (it == c.dma->end())
		return std::nullopt;
	size_t &used = c.dma_used[tag];
	if (it->second.size() - used < len)
		return std::nullopt;
	std::span<const uint8_t> s(it->second.data() + used, len);
	used += len;
	// The command copies it into DDR (and reads an ELF through).
	if (c.budget)
		c.budget->take_bytes(len);
	return s;
}

bool Qsm::command(Ctx &c, std::span<const uint8_t> req)
{
	std::vector<uint8_t> extra; // a transaction that follows the passthrough
	std::optional<std::vector<uint8_t>> answer = command_resp(c, req, extra);
	if (!answer)
		return false;
	std::vector<uint8_t> &resp = *answer;
	// The UMD reads the response in place of its request: pad to the
	// request's length, and to a multiple of 8 as the host requires.
	size_t len = std::max(resp.size(), req.size());
	len = (len + 7) & ~size_t{7};
	resp.resize(len, 0);
	const TransHdr th{kPassthroughFromDev, static_cast<uint32_t>(sizeof(TransHdr) + len)};
	std::vector<uint8_t> t = bytes_of(th);
	t.insert(t.end(), resp.begin(), resp.end());
	c.reply->add(t.data(), t.size());
	if (!extra.empty())
		c.reply->add(extra.data(), extra.size());
	return true;
}

// The response to one command, and in `extra` any transaction that must
// follow the passthrough.
std::optional<std::vector<uint8_t>> Qsm::command_resp(Ctx &c, std::span<const uint8_t> req,
						       std::vector<uint8_t> &extra)
{
	const uint32_t type = req.size() >= 4 ? load<uint32_t>(req) : 0;
	auto status_only = [](uint32_t rtype, int32_t st) { return bytes_of(StatusOnlyResp{rtype, st}); };
	auto too_short = [&](size_t need) { return req.size() < need; };

	switch (type) {
	case kStatus:
		return status_resp();
	case kResourceInfo:
		return resource_info_resp(req, c.handle);
	case kPerformanceInfo:
		return perf_info_resp();
	case kLoadElf:
	case kLoadConstants:
	case kLoadConstantsEx:
	case kLoadConstantsPayload: {
		uint32_t id = 0;
		const int32_t st = load_image(c, req, id);
		if (type == kLoadElf)
			return bytes_of(LoadElfResp{kLoadElfResp, id, st, 0});
		return bytes_of(LoadConstantsResp{kLoadConstantsResp, id, st, 0});
	}
	case kActivate: {
		ActivateResp r{};
		r.type = kActivateResp;
		const std::optional<int32_t> st = activate(c, req, r);
		if (!st)
			return std::nullopt; // its window is still being filled
		r.status = *st;
		if (r.status == kOk)
			extra = bytes_of(ActivateFromDev{{kActivateFromDev, sizeof(ActivateFromDev)}, 0,
							r.virtual_channel_id, 0});
		return bytes_of(r);
	}
	case kDeactivate: {
		unsigned dbc = 0;
		const int32_t st = deactivate(c, req, dbc);
		if (c.budget)
			c.budget->take_activation();
		if (st == kOk)
			extra = bytes_of(DeactivateFromDev{{kDeactivateFromDev, sizeof(DeactivateFromDev)}, 0, dbc});
		return status_only(kDeactivateResp, st);
	}
	case kUnloadElf:
	case kUnloadConstants:
		return status_only(type + 1,
				   too_short(sizeof(IdReq)) ? kErrCommandLength : unload(c, type, load<IdReq>(req).id));
	case kActivateStateCmd:
		return status_only(kActivateStateCmdResp, activate_state(c, req));
	case kCreateResourceGroup: {
		int32_t id = -1;
		const int32_t st = create_group(c, req, id);
		return bytes_of(CreateResourceGroupResp{kCreateResourceGroupResp, st, id, 0});
	}
	case kReleaseResourceGroup:
		return status_only(kReleaseResourceGroupResp,
				   too_short(sizeof(IdReq))
					   ? kErrCommandLength
					   : release_group(c.handle, static_cast<int32_t>(load<IdReq>(req).id)));
	case kReleaseVc:
		return status_only(kReleaseVcResp, kErrUndefinedRequest);
	default:
		// Reservations, device configuration and the rest: not served.
		return status_only(type + 1, kErrUndefinedRequest);
	}
}

std::vector<uint8_t> Qsm::status_resp() const
{
	StatusResp r{};
	r.type = kStatusResp;
	r.status = kOk;
	r.format_version = kFormatVersion;
	DevData &d = r.dev;
	auto image = [this](uint32_t id) -> const LoadedImage * {
		for (const auto &i : images_)
			if (i.header.image_id == id)
				return &i;
		return nullptr;
	};
	auto version = [](const LoadedImage *i, uint8_t *out) {
		for (int k = 0; k < 4; k++)
			out[k] = i ? static_cast<uint8_t>(i->header.version[k]) : (k == 0 ? 1 : 0);
	};
	auto vstr = [](const LoadedImage *i, const char *what) {
		char b[64];
		if (i)
			std::snprintf(b, sizeof(b), "%s.%u.%u.%u.%u", what, i->header.version[0], i->header.version[1],
				      i->header.version[2], i->header.version[3]);
		else
			std::snprintf(b, sizeof(b), "%s.1.0.0.0", what);
		return std::string(b);
	};
	const LoadedImage *qsm = image(cfg_.qsm_image_id), *nsp = image(cfg_.nsp_image_id);
	version(qsm, d.fw_version);
	copy_str(d.fw_qc_image_version, sizeof(d.fw_qc_image_version), vstr(qsm, "QSM"));
	copy_str(d.fw_oem_image_version, sizeof(d.fw_oem_image_version), "aic100-virt");
	copy_str(d.fw_image_variant, sizeof(d.fw_image_variant), qsm ? "full-boot" : "direct-amss");
	d.hw_version = kHwVersion;
	char serial[24];
	std::snprintf(serial, sizeof(serial), "%08X", cfg_.serial_number);
	copy_str(d.serial, sizeof(d.serial), serial);
	copy_str(d.board_serial, sizeof(d.board_serial), std::string(cfg_.board) + "-" + serial);
	d.compiler_version = 0;
	const auto rr = resource_info_resp({}, 0);
	std::memcpy(&d.resource_info, rr.data() + offsetof(ResourceInfoResp, info), sizeof(d.resource_info));
	const auto pr = perf_info_resp();
	std::memcpy(&d.perf_info, pr.data() + offsetof(PerformanceInfoResp, info), sizeof(d.perf_info));
	uint32_t consts = 0, consts_used = 0, elfs = 0;
	for (const auto &[id, o] : objects_) {
		if (o.elf) {
			elfs++;
		} else {
			consts++;
			consts_used += o.users > 0;
		}
	}
	d.num_loaded_consts = consts;
	d.num_consts_in_use = consts_used;
	d.num_loaded_nws = static_cast<uint8_t>(std::min<uint32_t>(elfs, 255));
	d.num_active_nws = static_cast<uint8_t>(std::min<size_t>(acts_.size(), 255));
	d.meta_ver_major = kMetadataMajor;
	d.meta_ver_minor = kMetadataMinor;
	d.nnc_major = kProtocolMajor;
	d.nnc_minor = kProtocolMinor;
	copy_str(d.sbl_image_name, sizeof(d.sbl_image_name), "sbl.bin");
	// Defective (power-gated) NSPs: the ones this card does not have.
	d.nsp_pgmask = ~((1ull << cfg_.nsp_count) - 1) & 0xFFFFull;
	d.qts_time_offset_usecs = static_cast<uint64_t>(host_offset_us_);
	d.sku_type = kSkuPcieProfessional;
	version(nsp, r.nsp.version);
	copy_str(r.nsp.qc_image_version, sizeof(r.nsp.qc_image_version), vstr(nsp, "NSP"));
	copy_str(r.nsp.oem_image_version, sizeof(r.nsp.oem_image_version), "aic100-virt");
	copy_str(r.nsp.image_variant, sizeof(r.nsp.image_variant), "virtual-nsp");
	return bytes_of(r);
}

std::vector<uint8_t> Qsm::resource_info_resp(std::span<const uint8_t> req, uint32_t handle) const
{
	(void)handle;
	const int32_t grp = req.size() >= sizeof(ResourceInfoReq) ? load<ResourceInfoReq>(req).res_grp_id : -1;
	ResourceInfoResp r{};
	r.type = kResourceInfoResp;
	r.res_grp_id = grp;
	Counts total{cfg_.nsp_count, kVcs, kVcs * kSemsPerVc, kMcids, ddr_.size()};
	if (grp >= 0) {
		auto it = groups_.find(grp);
		if (it == groups_.end() || it->second.orphaned) {
			r.status = kErrNotFound;
			return bytes_of(r);
		}
		total = it->second.cap;
	}
	const Counts f = free_counts(grp);
	ResourceInfo &i = r.info;
	i.dram_total_mb = static_cast<uint32_t>(total.mem >> 20);
	i.dram_free_mb = static_cast<uint32_t>(f.mem >> 20);
	// Percent of free DDR not in the largest... kept simple: extents - 1.
	// Percent of free DDR outside the largest free extent.
	i.fragmentation_status =
		grp < 0 && ddr_.free_bytes()
			? static_cast<uint32_t>(100 - ddr_.largest_free() * 100 / ddr_.free_bytes())
			: 0;
	i.vc_total = static_cast<uint8_t>(total.vc);
	i.vc_free = static_cast<uint8_t>(f.vc);
	i.nsp_total = static_cast<uint8_t>(total.nsp);
	i.nsp_free = static_cast<uint8_t>(f.nsp);
	i.mcid_total = total.mcid;
	i.mcid_free = f.mcid;
	i.sem_total = total.sem;
	i.sem_free = f.sem;
	i.pc_total = 8;
	i.pc_reserved = 0;
	r.status = kOk;
	return bytes_of(r);
}

std::vector<uint8_t> Qsm::perf_info_resp() const
{
	PerformanceInfoResp r{};
	r.type = kPerformanceInfoResp;
	r.status = kOk;
	r.info.nsp_frequency_hz = 1'450'000'000;
	r.info.ddr_frequency_hz = 2'133'000'000;
	r.info.comp_frequency_hz = 1'450'000'000;
	r.info.mem_frequency_hz = 1'000'000'000;
	r.info.sys_frequency_hz = 800'000'000;
	r.info.peak_compute = uint64_t{cfg_.nsp_count} * 8'000'000'000'000ull; // 8 TOPS int8 per NSP
	r.info.dram_bw_kbps = dram_bw_kbps();
	return bytes_of(r);
}

uint64_t Qsm::dram_bw_kbps() const
{
	// Bytes the DMA Bridge moved to and from DDR since the last sample at
	// least 100 ms old; the value stands until the next such sample.
	uint64_t bytes = 0;
	for (unsigned i = 0; i < regs::kNumDbc; i++)
		bytes += dbr_.stats(i).bytes_in + dbr_.stats(i).bytes_out;
	const uint64_t now = host_.now_ns();
	if (bw_time_ns_ == 0 || bytes < bw_bytes_) {
		bw_time_ns_ = now;
		bw_bytes_ = bytes;
		return bw_kbps_ = 0;
	}
	if (now - bw_time_ns_ >= 100'000'000) {
		bw_kbps_ = (bytes - bw_bytes_) * 1'000'000 / (now - bw_time_ns_); // bytes/ns*1e9/1e3
		bw_time_ns_ = now;
		bw_bytes_ = bytes;
	}
	return bw_kbps_;
}

// LOAD_CONSTANTS_PAYLOAD: data into constants loaded with
// LOAD_CONSTANTS_EX.
int32_t Qsm::load_constants_payload(Ctx &c, std::span<const uint8_t> req, uint32_t &id)
{
	if (req.size() < sizeof(LoadConstantsPayloadReq))
		return kErrCommandLength;
	const auto r = load<LoadConstantsPayloadReq>(req);
	id = r.constants_id;
	auto it = objects_.find(r.constants_id);
	if (it == objects_.end() || it->second.owner != c.handle || it->second.elf)
		return kErrNotFound;
	Image &img = it->second;
	const uint64_t area = img.static_size + img.dynamic_size;
	if (r.offset > area || r.data_length > area - r.offset)
		return kErrParameter;
	auto data = take_dma(c, r.tag, r.data_length);
	if (!data)
		return kErrDma;
	return ddr_.write(img.addr + r.offset, *data) ? kOk : kErrMemory;
}

// LOAD_ELF: the image from the message's DMA data, `size` bytes.
int32_t Qsm::read_elf(Ctx &c, std::span<const uint8_t> req, Image &img, ImageData &data, uint64_t &size)
{
	if (req.size() < sizeof(LoadElfReq))
		return kErrCommandLength;
	const auto r = load<LoadElfReq>(req);
	size = r.data_length;
	if (size < 64)
		return kErrParameter;
	data = take_dma(c, r.tag, size);
	if (!data)
		return kErrDma;
	const uint8_t *e = data->data();
	const uint16_t machine = static_cast<uint16_t>(e[18] | e[19] << 8);
	if (std::memcmp(e, "\x7f" "ELF", 4) != 0 || e[4] != 2 || e[5] != 1 || machine != nsp::kMachine)
		return kErrParameter; // not an ELF64 LE image for the NSP
	// Our workloads carry .aic.meta and must then be sound; an ELF
	// with no sections, or none named .aic.meta, is someone else's
	// image and activates without a program (docs/qsm.md).
	std::string why;
	const bool sections = (e[60] | e[61] << 8) != 0;
	if (auto w = sections ? nsp::parse(*data, why) : std::nullopt) {
		img.nsps = w->meta.nsp_count;
		img.workload = std::make_shared<const nsp::Workload>(std::move(*w));
	} else if (sections && why != "no .aic.meta section") {
		char m[160];
		std::snprintf(m, sizeof(m), "QSM: LOAD_ELF refused: %s", why.c_str());
		host_.trace(m);
		return kErrMetadata;
	}
	return kOk;
}

// LOAD_CONSTANTS: the constants from the message's DMA data.
int32_t Qsm::read_constants(Ctx &c, std::span<const uint8_t> req, ImageData &data, uint64_t &size)
{
	if (req.size() < sizeof(LoadConstantsReq))
		return kErrCommandLength;
	const auto r = load<LoadConstantsReq>(req);
	size = r.data_length;
	if (size == 0)
		return kErrParameter;
	data = take_dma(c, r.tag, size);
	return data ? kOk : kErrDma;
}

// LOAD_CONSTANTS_EX: only the sizes; LOAD_CONSTANTS_PAYLOAD brings the data.
int32_t Qsm::size_constants_ex(std::span<const uint8_t> req, Image &img, uint64_t &size) const
{
	if (req.size() < sizeof(LoadConstantsExReq))
		return kErrCommandLength;
	const auto r = load<LoadConstantsExReq>(req);
	if (r.descriptor_len < sizeof(ConstantsDescriptor) ||
	    req.size() < sizeof(LoadConstantsExReq) + sizeof(ConstantsDescriptor))
		return kErrParameter;
	const auto d = load<ConstantsDescriptor>(req, sizeof(LoadConstantsExReq));
	if (d.static_size > ddr_.size() || d.dynamic_size > ddr_.size() - d.static_size)
		return kErrMemory;
	img.static_size = d.static_size;
	img.dynamic_size = d.dynamic_size;
	size = std::max<uint64_t>(d.static_size + d.dynamic_size, Ddr::kAlign);
	return kOk;
}

// Reserves DDR for `img` in its group, copies `data` in and files it.
int32_t Qsm::place_image(Ctx &c, Image &img, uint64_t size, const ImageData &data, uint32_t &id)
{
	bool ok;
	img.group = pick_group(c, -1, ok);
	if (!ok)
		return kErrNotFound;
	const uint64_t rounded = (size + Ddr::kAlign - 1) & ~(Ddr::kAlign - 1);
	if (!reserve(img.group, Counts{0, 0, 0, 0, rounded}))
		return kErrMemory;
	img.addr = ddr_.allocate(rounded);
	if (img.addr == Ddr::kNoAddress) {
		unreserve(img.group, Counts{0, 0, 0, 0, rounded});
		return kErrMemory;
	}
	img.size = rounded;
	if (data)
		ddr_.write(img.addr, *data);
	img.id = next_object_id_++;
	if (next_object_id_ == 0)
		next_object_id_ = 1;
	id = img.id;
	objects_[img.id] = img;
	return kOk;
}

int32_t Qsm::load_image(Ctx &c, std::span<const uint8_t> req, uint32_t &id)
{
	const uint32_t type = load<uint32_t>(req);
	if (type == kLoadConstantsPayload)
		return load_constants_payload(c, req, id);
	size_t owned = 0;
	for (const auto &[oid, o] : objects_)
		owned += o.owner == c.handle;
	if (owned >= kMaxObjectsPerUser)
		return kErrIdsExhausted;
	Image img{};
	img.owner = c.handle;
	img.elf = type == kLoadElf;
	ImageData data;
	uint64_t size = 0;
	int32_t st;
	if (type == kLoadElf)
		st = read_elf(c, req, img, data, size);
	else if (type == kLoadConstants)
		st = read_constants(c, req, data, size);
	else
		st = size_constants_ex(req, img, size);
	if (st != kOk)
		return st;
	if (type != kLoadConstantsEx)
		img.static_size = size;
	return place_image(c, img, size, data, id);
}

// The message's ACTIVATE_TO_DEV, with the host's FIFOs.
std::optional<ActivateToDev> Qsm::activation_fifos(const Ctx &c) const
{
	for (const Trans &t : *c.trans) {
		if (t.type == kActivateToDev && t.len >= sizeof(ActivateToDev)) {
			ActivateToDev to;
			std::memcpy(&to, c.msg.data() + t.off, sizeof(to));
			return to;
		}
	}
	return std::nullopt;
}

// Whether the group has what the activation needs, and the card free DBCs
// and NSPs.
int32_t Qsm::room_for(const ActivationPlan &p) const
{
	const Counts f = free_counts(p.group);
	if (f.vc < 1 || std::popcount(~vc_busy_ & 0xFFFFu) < 1)
		return kErrVcAlloc;
	if (f.nsp < p.nsps ||
	    static_cast<unsigned>(std::popcount(~nsp_busy_ & ((1u << cfg_.nsp_count) - 1))) < p.nsps)
		return kErrNspAlloc;
	if (f.sem < kSemsPerVc)
		return kErrSemAlloc;
	if (f.mcid < 1)
		return kErrMcidAlloc;
	if (f.mem < p.window_size)
		return kErrMemory;
	return kOk;
}

// Checks the request against the host's FIFOs, the user's images and the
// resources left, filling in `p`.
int32_t Qsm::plan_activation(Ctx &c, ActivationPlan &p)
{
	const ActivateReq &r = p.req;
	const auto to = activation_fifos(c);
	if (!to || r.initial_state > 1)
		return kErrParameter;
	if (to->req_q_size == 0 || to->rsp_q_size != to->req_q_size ||
	    uint64_t{to->buf_len} < uint64_t{to->req_q_size} * 68)
		return kErrQueueTooSmall;
	p.fifos = *to;
	auto elf = objects_.find(r.elf_id);
	if (elf == objects_.end() || !elf->second.elf || elf->second.owner != c.handle)
		return kErrNotFound;
	p.elf = &elf->second;
	if (r.constants_id) {
		auto it = objects_.find(r.constants_id);
		if (it == objects_.end() || it->second.elf || it->second.owner != c.handle)
			return kErrNotFound;
		p.consts = &it->second;
	}
	size_t owned = 0;
	for (const auto &[id, a] : acts_)
		owned += a.owner == c.handle;
	if (owned >= kMaxObjectsPerUser)
		return kErrIdsExhausted;
	bool ok;
	p.group = pick_group(c, r.resource_res_id, ok);
	if (!ok)
		return kErrNotFound;
	p.nsps = p.elf->nsps;
	p.work = p.elf->workload.get();
	p.window_size = p.work ? (p.work->meta.io_size + Ddr::kAlign - 1) & ~(Ddr::kAlign - 1) : kDefaultWindow;
	return room_for(p);
}

// Allocates the window and lists what goes into it: the program's
// initial data, then the constants where it wants them. DDR is zero
// wherever nobody wrote since it was mapped or released (Ddr::release), so
// the zero-fill of the segments costs nothing: up to 4 GiB that was
// otherwise written again, and backed by host memory, at every ACTIVATE.
int32_t Qsm::open_window(ActivationPlan &p)
{
	p.window = ddr_.allocate(p.window_size);
	if (p.window == Ddr::kNoAddress)
		return kErrMemory;
	p.win = std::span(ddr_.span(p.window, p.window_size), p.window_size);
	auto fits = [&p](uint64_t at, uint64_t n) { return at <= p.window_size && n <= p.window_size - at; };
	for (size_t i = 0; p.work && i < p.work->segments.size(); i++) {
		const nsp::Segment &s = p.work->segments[i];
		if (s.data.size() > s.memsz || !fits(s.offset, s.memsz)) {
			ddr_.release(p.window);
			return kErrMetadata;
		}
		if (!s.data.empty())
			p.copies.push_back({s.data.data(), s.offset, s.data.size()});
	}
	if (p.consts) {
		const uint64_t at = p.work ? p.work->meta.const_offset : 0;
		const uint64_t n = p.consts->static_size + p.consts->dynamic_size;
		if (!fits(at, n)) {
			ddr_.release(p.window);
			return kErrMemory;
		}
		if (n)
			p.copies.push_back({ddr_.span(p.consts->addr, n), at, n});
	}
	return kOk;
}

// Copies into the window what fits in this pass's budget (all of it without
// one); true when the window is complete.
bool Qsm::fill_window(ActivationPlan &p, Budget *b)
{
	for (; p.next_copy < p.copies.size(); p.next_copy++, p.copied = 0) {
		const ActivationPlan::Copy &k = p.copies[p.next_copy];
		while (p.copied < k.len) {
			if (b && b->spent())
				return false;
			const uint64_t n = b ? std::min(k.len - p.copied, b->bytes) : k.len - p.copied;
			std::memcpy(p.win.data() + k.to + p.copied, k.from + p.copied, n);
			p.copied += n;
			if (b)
				b->take_bytes(n);
		}
	}
	return true;
}

// The first `n` free NSPs, taken.
uint32_t Qsm::take_nsps(unsigned n)
{
	uint32_t mask = 0;
	for (unsigned i = 0, got = 0; i < cfg_.nsp_count && got < n; i++) {
		if (!(nsp_busy_ & (1u << i))) {
			mask |= 1u << i;
			got++;
		}
	}
	nsp_busy_ |= mask;
	return mask;
}

// Takes the resources, starts the DBC and the program's threads, and
// answers with where everything is.
int32_t Qsm::start_activation(Ctx &c, ActivationPlan &p, ActivateResp &resp)
{
	const Counts need{p.nsps, 1, kSemsPerVc, 1, p.window_size};
	reserve(p.group, need);
	const unsigned dbc = static_cast<unsigned>(std::countr_one(vc_busy_));
	vc_busy_ |= 1u << dbc;
	const uint32_t mask = take_nsps(p.nsps);
	dbr_.activate(dbc, DmaBridge::Queues{p.fifos.req_q_addr, p.fifos.rsp_q_addr, p.fifos.req_q_size, p.window,
					     p.window + p.window_size});

	const ActivateReq &r = p.req;
	Activation a{next_act_id_++, c.handle, p.group, r.elf_id, r.constants_id, dbc, mask, r.initial_state,
		     p.window, p.window_size, std::make_unique<nsp::Counters>(), std::make_unique<nsp::Workers>(), {}, false, false};
	if (next_act_id_ == 0)
		next_act_id_ = 1;
	if (p.work)
		a.name = p.work->meta.name;
	// A program that ends by itself (HALT or a fault) wakes the event
	// loop: poll() looks for crashes.
	if (p.work && !a.workers->start(*p.work, p.win, dbr_.semaphores(dbc), *a.counters, p.nsps,
					 [this] { host_.kick(); })) {
		dbr_.deactivate(dbc);
		vc_busy_ &= ~(1u << dbc);
		nsp_busy_ &= ~mask;
		unreserve(p.group, need);
		ddr_.release(p.window);
		return kErrNspAlloc;
	}
	p.elf->users++;
	if (p.consts)
		p.consts->users++;
	resp.activation_id = a.id;
	resp.virtual_channel_id = dbc;
	resp.ddr_base = p.window;
	resp.dynamic_ddr_base =
		p.window + (p.work ? p.work->meta.const_offset : 0) + (p.consts ? p.consts->static_size : 0);
	resp.mcid_base = p.window;
	resp.mcid_base_dma_cmd = p.window;
	resp.dma_type = r.dma_type;
	resp.pc_mask = 0;
	resp.nsp_mask = mask;
	acts_[a.id] = std::move(a);
	return kOk;
}

// nullopt while the window is being filled (over several passes if it is
// large): the same request comes back in the next pass.
std::optional<int32_t> Qsm::activate(Ctx &c, std::span<const uint8_t> req, ActivateResp &resp)
{
	if (!c.filling) {
		if (req.size() < sizeof(ActivateReq))
			return kErrCommandLength;
		auto p = std::make_shared<ActivationPlan>();
		p->req = load<ActivateReq>(req);
		if (const int32_t st = plan_activation(c, *p); st != kOk)
			return st;
		if (const int32_t st = open_window(*p); st != kOk)
			return st;
		c.filling = std::move(p);
	}
	if (!fill_window(*c.filling, c.budget))
		return std::nullopt;
	const std::shared_ptr<ActivationPlan> p = std::move(c.filling);
	c.filling.reset();
	if (c.budget)
		c.budget->take_activation();
	// Nothing but crashes ran meanwhile, and they only free; checked all
	// the same, as start_activation() relies on it.
	if (const int32_t st = room_for(*p); st != kOk) {
		ddr_.release(p->window);
		return st;
	}
	return start_activation(c, *p, resp);
}

void Qsm::stop_activation(Activation &a)
{
	// The NSPs stop before the DBC, so no program waits on a semaphore the
	// DMA Bridge will never move again.
	if (a.workers)
		a.workers->stop();
	dbr_.deactivate(a.dbc);
}

std::optional<Qsm::ActivationInfo> Qsm::activation_on(unsigned dbc) const
{
	for (const auto &[id, a] : acts_) {
		if (a.dbc != dbc)
			continue;
		return ActivationInfo{a.id,
				      a.window,
				      a.window_size,
				      a.counters ? a.counters->busy_ns.load() : 0,
				      a.counters ? a.counters->iterations.load() : 0,
				      a.workers && a.workers->running(),
				      a.workers && a.workers->faulted(),
				      a.workers ? a.workers->fault() : std::string()};
	}
	return std::nullopt;
}

int32_t Qsm::deactivate(Ctx &c, std::span<const uint8_t> req, unsigned &dbc)
{
	if (req.size() < sizeof(DeactivateReq))
		return kErrCommandLength;
	const auto r = load<DeactivateReq>(req);
	auto it = acts_.find(r.activation_id);
	if (it == acts_.end() || it->second.owner != c.handle)
		return kErrNotFound;
	Activation a = std::move(it->second);
	acts_.erase(it);
	dbc = a.dbc;
	stop_activation(a);
	retire_counters(a);
	ddr_.release(a.window);
	vc_busy_ &= ~(1u << a.dbc);
	nsp_busy_ &= ~a.nsp_mask;
	if (auto e = objects_.find(a.elf_id); e != objects_.end())
		e->second.users--;
	if (auto k = objects_.find(a.const_id); a.const_id && k != objects_.end())
		k->second.users--;
	unreserve(a.group,
		  Counts{static_cast<unsigned>(std::popcount(a.nsp_mask)), 1, kSemsPerVc, 1, a.window_size});
	return kOk;
}

int32_t Qsm::unload(Ctx &c, uint32_t type, uint32_t id)
{
	auto it = objects_.find(id);
	if (it == objects_.end() || it->second.owner != c.handle || it->second.elf != (type == kUnloadElf))
		return kErrNotFound;
	if (it->second.users)
		return kErrNotPermitted;
	const Image img = it->second;
	objects_.erase(it);
	ddr_.release(img.addr);
	unreserve(img.group, Counts{0, 0, 0, 0, img.size});
	return kOk;
}

int32_t Qsm::activate_state(Ctx &c, std::span<const uint8_t> req)
{
	if (req.size() < sizeof(ActivateStateCmdReq))
		return kErrCommandLength;
	const auto r = load<ActivateStateCmdReq>(req);
	if (r.num_cmds > 8)
		return kErrParameter;
	for (uint32_t i = 0; i < r.num_cmds; i++) {
		auto it = acts_.find(r.cmds[i].activation_id);
		if (it == acts_.end() || it->second.owner != c.handle)
			return kErrNotFound;
		if (r.cmds[i].cmd > 2)
			return kErrParameter;
	}
	for (uint32_t i = 0; i < r.num_cmds; i++)
		acts_[r.cmds[i].activation_id].state = r.cmds[i].cmd;
	return kOk;
}

int32_t Qsm::create_group(Ctx &c, std::span<const uint8_t> req, int32_t &id)
{
	if (req.size() < sizeof(CreateResourceGroupReq))
		return kErrCommandLength;
	const auto r = load<CreateResourceGroupReq>(req);
	if (r.source_grp >= 0 && !group_for(r.source_grp, c.handle))
		return kErrNotFound;
	const Counts want{r.nsp, r.vc, r.sem, r.mcid, (r.mem + Ddr::kAlign - 1) & ~(Ddr::kAlign - 1)};
	if (r.mem > ddr_.size())
		return kErrMemory;
	const Counts f = free_counts(r.source_grp >= 0 ? r.source_grp : -1);
	if (want.nsp > f.nsp)
		return kErrNspAlloc;
	if (want.vc > f.vc)
		return kErrVcAlloc;
	if (want.sem > f.sem)
		return kErrSemAlloc;
	if (want.mcid > f.mcid)
		return kErrMcidAlloc;
	if (want.mem > f.mem)
		return kErrMemory;
	if (groups_.size() >= kMaxObjectsPerUser)
		return kErrIdsExhausted;
	// A sub-group's share stays accounted as used in its source.
	if (r.source_grp >= 0)
		reserve(r.source_grp, want);
	Group g{next_group_id_++, c.handle, r.source_grp >= 0 ? r.source_grp : -1, false, want, {}};
	id = g.id;
	groups_[g.id] = g;
	return kOk;
}

int32_t Qsm::release_group(uint32_t handle, int32_t id)
{
	auto it = groups_.find(id);
	if (it == groups_.end() || it->second.owner != handle || it->second.orphaned)
		return kErrNotFound;
	const Counts &u = it->second.used;
	if (u.nsp || u.vc || u.sem || u.mcid || u.mem)
		return kErrNotPermitted;
	const Group g = it->second;
	groups_.erase(it);
	if (g.source >= 0)
		unreserve(g.source, g.cap);
	return kOk;
}

void Qsm::terminate(uint32_t handle)
{
	held_.erase(handle);
	Ctx c{handle, -1, {}, nullptr, nullptr, {}, nullptr, nullptr, nullptr};
	// Activations first (their DBCs stop touching host memory), then images.
	std::vector<std::pair<uint32_t, uint32_t>> acts;
	for (const auto &[id, a] : acts_)
		if (a.owner == handle)
			acts.emplace_back(id, 0);
	for (auto &[id, unused] : acts) {
		DeactivateReq r{kDeactivate, id, 1, 0};
		unsigned dbc;
		deactivate(c, std::span(reinterpret_cast<const uint8_t *>(&r), sizeof(r)), dbc);
	}
	std::vector<std::pair<uint32_t, bool>> objs;
	for (const auto &[id, o] : objects_)
		if (o.owner == handle)
			objs.emplace_back(id, o.elf);
	for (auto &[id, elf] : objs)
		unload(c, elf ? kUnloadElf : kUnloadConstants, id);
	for (auto &[id, g] : groups_) {
		if (g.owner == handle)
			g.orphaned = true;
	}
	std::vector<int32_t> gids;
	for (const auto &[id, g] : groups_)
		gids.push_back(id);
	for (int32_t id : gids)
		maybe_retire_group(id);
}

void Qsm::release_all()
{
	drop_job();
	ssr_.reset();
	recovering_.clear();
	for (auto &[id, a] : acts_) {
		stop_activation(a);
		ddr_.release(a.window);
	}
	for (const auto &[id, o] : objects_)
		ddr_.release(o.addr);
	acts_.clear();
	objects_.clear();
	groups_.clear();
	held_.clear();
	vc_busy_ = nsp_busy_ = 0;
	device_used_ = Counts{};
}

} // namespace aic100
