// SPDX-License-Identifier: GPL-2.0-or-later
#include "nnc_client.h"

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <iterator>

#include <unistd.h>

namespace qaic {

using namespace aic100::nnc::cmd;

namespace {

// Copies the response into `out` if it is whole; otherwise says so.
template <typename T> bool read_resp(NncResult &r, T &out)
{
	if (!r.answered)
		return false;
	if (r.response.size() < sizeof(T)) {
		char b[96];
		std::snprintf(b, sizeof(b), "response of %zu bytes, want %zu", r.response.size(), sizeof(T));
		r.problem = b;
		return false;
	}
	std::memcpy(&out, r.response.data(), sizeof(T));
	return true;
}

template <size_t N> void copy_name(char (&dst)[N], const std::string &s)
{
	std::memset(dst, 0, N);
	std::memcpy(dst, s.data(), std::min(N - 1, s.size()));
}

uint32_t pid()
{
	return static_cast<uint32_t>(::getpid());
}

} // namespace

const char *nnc_status_name(int32_t status)
{
	switch (status) {
	case kOk: return "ok";
	case kErrGeneral: return "general";
	case kErrDma: return "DMA";
	case kErrUndefinedRequest: return "undefined request";
	case kErrMemory: return "memory";
	case kErrMetadata: return "metadata";
	case kErrParameter: return "parameter";
	case kErrTimeout: return "timeout";
	case kErrNotInitialized: return "not initialized";
	case kErrNotPermitted: return "not permitted";
	case kErrBufferTooSmall: return "buffer too small";
	case kErrNotFound: return "not found";
	case kErrMcidAlloc: return "MCID allocation";
	case kErrNspAlloc: return "NSP allocation";
	case kErrVcAlloc: return "VC allocation";
	case kErrSemAlloc: return "semaphore allocation";
	case kErrNspResponse: return "NSP response";
	case kErrCommandLength: return "command length";
	case kErrIdsExhausted: return "IDs exhausted";
	case kErrQueueTooSmall: return "queue too small";
	case kErrVcConfigure: return "VC configure";
	case kErrNspUnderSsr: return "NSP under SSR";
	default: return "unknown";
	}
}

std::string errno_name(int err)
{
	if (const char *n = strerrorname_np(err))
		return n;
	return "errno " + std::to_string(err);
}

const char *sku_name(uint8_t sku)
{
	// The UMD's table (getSkuTypeStr); anything past it is "Invalid".
	static const char *const names[] = {"Invalid",   "M.2",	"PCIe",		   "PCIe Pro", "PCIe Lite",
					    "PCIe Ultra", "Auto", "PCIe Ultra Plus", "PCIe 080", "PCIe Ultra 080"};
	return sku < std::size(names) ? names[sku] : "Invalid";
}

std::string NncResult::describe() const
{
	char b[160];
	if (err == -ECANCELED && reply.status())
		std::snprintf(b, sizeof(b), "error errno=ECANCELED (device status %u)", reply.status()->status);
	else if (err)
		std::snprintf(b, sizeof(b), "error errno=%s", errno_name(-err).c_str());
	else if (!problem.empty())
		std::snprintf(b, sizeof(b), "error protocol: %s", problem.c_str());
	else if (status)
		std::snprintf(b, sizeof(b), "error nnc=%d (%s)", status, nnc_status_name(status));
	else
		return "ok";
	return b;
}

std::vector<uint8_t> Nnc::payload_of(std::span<const uint8_t> request)
{
	// The UMD's hdr.len is 16 + sizeof(request): the request and 8 zero bytes.
	std::vector<uint8_t> p(request.begin(), request.end());
	p.resize(((p.size() + 8) + 7) & ~size_t{7}, 0);
	return p;
}

NncResult Nnc::transact(Manage &m, uint32_t want, size_t status_at)
{
	NncResult r;
	r.err = m.send(ioctl_);
	r.reply = m.reply();
	if (r.err && r.err != -ECANCELED)
		return r;
	char b[128];
	if (!r.reply.ok()) {
		r.problem = "malformed reply: " + r.reply.error;
		return r;
	}
	if (r.reply.transactions.empty()) {
		r.problem = "no transaction in the reply";
		return r;
	}
	const auto &first = r.reply.transactions.front();
	if (first.type != QAIC_TRANS_PASSTHROUGH_FROM_DEV) {
		std::snprintf(b, sizeof(b), "the reply starts with transaction type %u, not a passthrough", first.type);
		r.problem = b;
		return r;
	}
	const auto p = first.payload();
	r.response.assign(p.begin(), p.end());
	if (p.size() < std::max<size_t>(8, status_at + 4)) {
		std::snprintf(b, sizeof(b), "response of %zu bytes has no status at %zu", p.size(), status_at);
		r.problem = b;
		return r;
	}
	uint32_t type;
	std::memcpy(&type, p.data(), 4);
	if (type != want) {
		std::snprintf(b, sizeof(b), "response type %u, want %u", type, want);
		r.problem = b;
		return r;
	}
	std::memcpy(&r.status, p.data() + status_at, 4);
	r.answered = true;
	return r;
}

NncResult Nnc::command(std::span<const uint8_t> request, uint32_t want, size_t status_at)
{
	Manage m;
	m.passthrough(payload_of(request));
	return transact(m, want, status_at);
}

StatusResult Nnc::status()
{
	StatusResult r;
	const StatusReq req{kStatus, 0, {}};
	static_cast<NncResult &>(r) = command(bytes(req), kStatusResp);
	read_resp(r, r.resp);
	return r;
}

ResourceResult Nnc::resource_info(int32_t group)
{
	ResourceResult r;
	const ResourceInfoReq req{kResourceInfo, 0, group, 0};
	static_cast<NncResult &>(r) = command(bytes(req), kResourceInfoResp, offsetof(ResourceInfoResp, status));
	read_resp(r, r.resp);
	return r;
}

PerfResult Nnc::performance_info()
{
	PerfResult r;
	const PerformanceInfoReq req{kPerformanceInfo, 0};
	static_cast<NncResult &>(r) = command(bytes(req), kPerformanceInfoResp);
	read_resp(r, r.resp);
	return r;
}

LoadResult Nnc::load_elf(std::span<const uint8_t> image, const std::string &name)
{
	LoadElfReq req{};
	req.type = kLoadElf;
	req.tag = kTagElf;
	req.pid = pid();
	copy_name(req.network_name, name);
	req.data_length = image.size();
	Manage m;
	m.passthrough(payload_of(bytes(req))).dma_xfer(kTagElf, image.data(), image.size());
	LoadResult r;
	static_cast<NncResult &>(r) = transact(m, kLoadElfResp, offsetof(LoadElfResp, status));
	LoadElfResp resp{};
	if (read_resp(r, resp))
		r.id = resp.elf_id;
	return r;
}

LoadResult Nnc::load_constants(std::span<const uint8_t> data, const std::string &name)
{
	LoadConstantsReq req{};
	req.type = kLoadConstants;
	req.pid = pid();
	req.tag = kTagConstants;
	req.data_length = data.size();
	copy_name(req.name, name);
	Manage m;
	m.passthrough(payload_of(bytes(req))).dma_xfer(kTagConstants, data.data(), data.size());
	LoadResult r;
	static_cast<NncResult &>(r) = transact(m, kLoadConstantsResp, offsetof(LoadConstantsResp, status));
	LoadConstantsResp resp{};
	if (read_resp(r, resp))
		r.id = resp.constants_id;
	return r;
}

LoadResult Nnc::load_constants_ex(uint64_t static_size, uint64_t dynamic_size)
{
	struct __attribute__((packed)) {
		LoadConstantsExReq req;
		ConstantsDescriptor desc;
	} req{};
	req.req.type = kLoadConstantsEx;
	req.req.pid = pid();
	copy_name(req.req.name, "ConstantsDescriptor");
	req.req.descriptor_len = sizeof(req.desc);
	req.desc.static_size = static_size;
	req.desc.dynamic_size = dynamic_size;
	LoadResult r;
	static_cast<NncResult &>(r) = command(bytes(req), kLoadConstantsResp, offsetof(LoadConstantsResp, status));
	LoadConstantsResp resp{};
	if (read_resp(r, resp))
		r.id = resp.constants_id;
	return r;
}

NncResult Nnc::load_constants_payload(uint32_t constants_id, uint64_t offset, std::span<const uint8_t> data)
{
	const LoadConstantsPayloadReq req{kLoadConstantsPayload, pid(), kTagConstants, constants_id, data.size(), offset};
	Manage m;
	m.passthrough(payload_of(bytes(req))).dma_xfer(kTagConstants, data.data(), data.size());
	return transact(m, kLoadConstantsResp, offsetof(LoadConstantsResp, status));
}

ActivateResult Nnc::activate(uint32_t elf_id, uint32_t constants_id, uint32_t queue_size, int32_t resource_group)
{
	ActivateReq req{};
	req.type = kActivate;
	req.pid = pid();
	req.constants_id = constants_id;
	req.elf_id = elf_id;
	req.resource_res_id = resource_group;
	req.opt_vc_setup = 1;
	req.vc_res_id = -1;
	req.initial_state = 1; // ready, as the core API asks
	Manage m;
	m.passthrough(payload_of(bytes(req))).activate(queue_size);
	ActivateResult r;
	static_cast<NncResult &>(r) = transact(m, kActivateResp);
	if (!read_resp(r, r.resp))
		return r;
	r.activation_id = r.resp.activation_id;
	r.dbc_id = r.resp.virtual_channel_id;
	r.ddr_base = r.resp.ddr_base;
	r.from_dev = r.reply.activate();
	if (r.err || r.status)
		return r;
	// Success needs the DBC too: the passthrough, then ACTIVATE_FROM_DEV
	// naming the same DBC (the UMD uses the VC id as the DBC id).
	char b[128];
	if (r.reply.transactions.size() != 2 || r.reply.transactions[1].type != QAIC_TRANS_ACTIVATE_FROM_DEV) {
		std::snprintf(b, sizeof(b), "%zu reply transactions, want the passthrough then ACTIVATE_FROM_DEV",
			      r.reply.transactions.size());
		r.problem = b;
	} else if (r.from_dev->status || r.from_dev->dbc_id != r.dbc_id) {
		std::snprintf(b, sizeof(b), "ACTIVATE_FROM_DEV status %u dbc %u, the response says VC %u",
			      r.from_dev->status, r.from_dev->dbc_id, r.dbc_id);
		r.problem = b;
	}
	return r;
}

NncResult Nnc::deactivate(uint32_t activation_id, std::optional<uint32_t> dbc_id)
{
	const DeactivateReq req{kDeactivate, activation_id, dbc_id ? 1u : 0u, 0};
	Manage m;
	m.passthrough(payload_of(bytes(req)));
	if (dbc_id)
		m.deactivate(*dbc_id);
	return transact(m, kDeactivateResp);
}

NncResult Nnc::unload_elf(uint32_t elf_id)
{
	return command(bytes(IdReq{kUnloadElf, elf_id}), kUnloadElfResp);
}

NncResult Nnc::unload_constants(uint32_t constants_id)
{
	return command(bytes(IdReq{kUnloadConstants, constants_id}), kUnloadConstantsResp);
}

GroupResult Nnc::create_resource_group(const GroupSpec &spec)
{
	CreateResourceGroupReq req{};
	req.type = kCreateResourceGroup;
	req.pid = pid();
	req.source_grp = spec.source;
	req.nsp = spec.nsp;
	req.mcid = spec.mcid;
	req.sem = spec.sem;
	req.vc = spec.vc;
	req.mem = spec.mem;
	GroupResult r;
	static_cast<NncResult &>(r) = command(bytes(req), kCreateResourceGroupResp);
	CreateResourceGroupResp resp{};
	if (read_resp(r, resp))
		r.id = resp.res_grp_id;
	return r;
}

NncResult Nnc::release_resource_group(int32_t group)
{
	return command(bytes(IdReq{kReleaseResourceGroup, static_cast<uint32_t>(group)}), kReleaseResourceGroupResp);
}

} // namespace qaic
