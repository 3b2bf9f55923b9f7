// SPDX-License-Identifier: GPL-2.0-or-later
// qaic::Nnc: a client of the NNC command protocol 17.0 (the open UMD's),
// carried in MANAGE passthroughs. Requests are sent as the UMD sends them:
// followed by 8 zero bytes, with the response read from the payload of the
// first transaction the driver returns (umd-nnc-protocol.md §1, §3).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "manage.h"

namespace qaic {

namespace cmd = aic100::nnc::cmd;

// Name of an NNC status code, e.g. "not found" for -11.
const char *nnc_status_name(int32_t status);
// Name of an errno value, e.g. "ECANCELED".
std::string errno_name(int err);
// Name of a STATUS sku_type, as the UMD prints it.
const char *sku_name(uint8_t sku);

// Every command's outcome: the ioctl's errno, then the NNC status.
struct NncResult {
	int err = 0;             // MANAGE ioctl: 0 or -errno
	bool answered = false;   // a response of the expected type came back
	int32_t status = 0;      // its NNC status, if answered
	std::string problem;     // why the reply is unusable (when err is 0)
	std::vector<uint8_t> response; // the first passthrough's payload
	ManageReply reply;       // everything the driver returned

	bool ok() const { return !err && answered && !status && problem.empty(); }
	// "ok", "error errno=ECANCELED", "error nnc=-11 (not found)" or
	// "error protocol: <problem>".
	std::string describe() const;
};

struct StatusResult : NncResult {
	cmd::StatusResp resp{};
};
struct ResourceResult : NncResult {
	cmd::ResourceInfoResp resp{};
};
struct PerfResult : NncResult {
	cmd::PerformanceInfoResp resp{};
};
struct LoadResult : NncResult {
	uint32_t id = 0; // elf_id or constants_id
};
struct ActivateResult : NncResult {
	cmd::ActivateResp resp{}; // the whole response (mcid_base, nsp_mask, ...)
	uint32_t activation_id = 0;
	uint32_t dbc_id = 0;      // virtual_channel_id, the DBC for later ioctls
	uint64_t ddr_base = 0;
	std::optional<qaic_manage_trans_activate_from_dev> from_dev;
};
struct GroupResult : NncResult {
	int32_t id = -1;
};

// What CREATE_RESOURCE_GROUP carves out of the pool (or of source).
struct GroupSpec {
	uint32_t nsp = 0;
	uint32_t vc = 0;
	uint32_t sem = 0;
	uint32_t mcid = 0;
	uint64_t mem = 0; // bytes of DDR
	int32_t source = -1;
};

class Nnc {
public:
	explicit Nnc(const Device &dev) : ioctl_(Manage::ioctl_of(dev)) {}
	explicit Nnc(Ioctl ioctl) : ioctl_(std::move(ioctl)) {}

	StatusResult status();
	ResourceResult resource_info(int32_t group = -1);
	PerfResult performance_info();
	// DMA tag 100 with the whole image.
	LoadResult load_elf(std::span<const uint8_t> image, const std::string &name = "NetworkImage");
	// Plain LOAD_CONSTANTS: DMA tag 300 with the whole image.
	LoadResult load_constants(std::span<const uint8_t> data, const std::string &name = "Constants");
	// Reserves static + dynamic bytes; PAYLOAD fills them at an offset.
	LoadResult load_constants_ex(uint64_t static_size, uint64_t dynamic_size);
	NncResult load_constants_payload(uint32_t constants_id, uint64_t offset, std::span<const uint8_t> data);
	// One message: the ACTIVATE passthrough plus ACTIVATE_FROM_USR; the reply
	// must be that passthrough, then ACTIVATE_FROM_DEV for the same DBC.
	ActivateResult activate(uint32_t elf_id, uint32_t constants_id = 0, uint32_t queue_size = 512,
				int32_t resource_group = -1);
	// DEACTIVATE plus DEACTIVATE_FROM_USR for dbc_id (the teardown the UMD
	// sends when the VC is released); no dbc_id: the passthrough alone.
	NncResult deactivate(uint32_t activation_id, std::optional<uint32_t> dbc_id);
	NncResult unload_elf(uint32_t elf_id);
	NncResult unload_constants(uint32_t constants_id);
	GroupResult create_resource_group(const GroupSpec &spec);
	NncResult release_resource_group(int32_t group);

	// Any request in a message of its own. The answer must have type
	// `want`, with its status at byte `status_at`.
	NncResult command(std::span<const uint8_t> request, uint32_t want, size_t status_at = 4);
	// Sends a message built by the caller (a passthrough first, then
	// anything else) and reads the answer from the first returned
	// transaction, as the UMD does.
	NncResult transact(Manage &m, uint32_t want, size_t status_at = 4);

	// The passthrough payload the UMD sends for a request: the request, 8
	// zero bytes, rounded up to a multiple of 8.
	static std::vector<uint8_t> payload_of(std::span<const uint8_t> request);
	template <typename T> static std::span<const uint8_t> bytes(const T &v)
	{
		return std::span<const uint8_t>(reinterpret_cast<const uint8_t *>(&v), sizeof(v));
	}

private:
	Ioctl ioctl_;
};

} // namespace qaic
