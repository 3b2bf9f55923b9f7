// SPDX-License-Identifier: GPL-2.0-or-later
// AMSS, the card's mission-mode firmware, and in it the QSM (the management
// processor's firmware): NNC messages on QAIC_CONTROL (transport 5.0 with the
// command protocol 17.0 inside passthroughs, docs/qsm.md), the echo service
// on QAIC_LOOPBACK and the host's periodic time on QAIC_TIMESYNC_PERIODIC.
// The QSM owns the card's resources: DDR, NSPs, DBCs (virtual channels),
// semaphores and resource groups, accounted per user handle. When a workload
// crashes it stops that workload alone and recovers its DBC through SSR; it
// reports errors through RAS and answers telemetry (docs/health.md).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aic100/ddr.h"
#include "aic100/dma_bridge.h"
#include "aic100/mhi.h"
#include "aic100/nnc.h"
#include "aic100/nsp_interpreter.h"
#include "aic100/ras.h"
#include "aic100/sahara.h"
#include "aic100/ssr.h"
#include "aic100/telemetry.h"

namespace aic100 {

struct QsmConfig {
	unsigned nsp_count = 16;
	uint64_t ddr_size = 16ull << 30;
	uint32_t serial_number = 0;
	bool crc = false; // ask the host for CRC-32 on every message
	// The family's name and the Sahara images whose versions STATUS
	// reports as the QSM's and the NSPs' (aic100/family.h).
	const char *board = "AIC100";
	uint32_t qsm_image_id = 1, nsp_image_id = 2;
};

class Qsm final : public Ssr::Owner {
public:
	Qsm(HostInterface &host, Mhi &mhi, DmaBridge &dbr, Ddr &ddr, const QsmConfig &cfg);

	// AMSS starts, with the images the SBL loaded (none in direct-AMSS boot).
	void start(std::vector<LoadedImage> images);
	// AMSS stops (SYS_ERR, reset): every activation, image and group is gone.
	void stop();
	bool running() const { return running_; }

	void mhi_reset();
	void ul_message(unsigned ch, std::span<const uint8_t> data);
	void channel_stopped(unsigned ch);
	// Workloads that crashed, SSR timeouts; runs from the event loop.
	void poll();
	uint64_t next_deadline() const;

	// Fault injection: the workload on `dbc`, or the one running on
	// physical NSP `nsp`, crashes as if that NSP failed. Empty when done,
	// else why not.
	// `hold`: the recovery waits before power-up for ssr_release().
	std::string crash_dbc(unsigned dbc, const std::string &reason, bool hold = false);
	std::string crash_nsp(unsigned nsp, const std::string &reason, bool hold = false);
	std::string ssr_release() { return ssr_.release(); }

	Ssr &ssr() { return ssr_; }
	Ras &ras() { return ras_; }
	Telemetry &telemetry() { return telemetry_; }
	// NSP counters since AMSS started, for telemetry.
	Telemetry::NspStats nsp_stats() const;

	// Host time minus card time (µs), from the last periodic timesync.
	int64_t host_time_offset_us() const { return host_offset_us_; }
	uint64_t timesyncs() const { return timesyncs_; }
	uint64_t messages() const { return messages_; }

	// Resource counts, for tests and telemetry.
	struct Counts {
		unsigned nsp = 0, vc = 0, sem = 0, mcid = 0;
		uint64_t mem = 0;
	};
	Counts free_counts(int32_t group = -1) const;
	size_t objects_of(uint32_t handle) const;

	static constexpr unsigned kSemsPerVc = 32;
	static constexpr unsigned kMcids = 256;
	static constexpr size_t kMaxObjectsPerUser = 1024;
	// DMA data the QSM holds for messages still being assembled, all users
	// together: the host chooses how much each message brings.
	static constexpr uint64_t kMaxHeldDma = 1ull << 30;
	// Messages held at once (one per user handle), up to 64 KiB each.
	static constexpr size_t kMaxHeldMessages = 1024;

private:
	// ---- transport -----------------------------------------------------
	struct Trans {
		uint32_t type;
		size_t off; // in the message
		uint32_t len;
	};
	// A message whose DMA data arrives over several messages.
	struct Held {
		std::vector<uint8_t> msg;
		uint32_t chunk_id = 0;
		uint64_t bytes = 0;
		std::map<uint32_t, std::vector<uint8_t>> dma; // tag -> data
	};
	struct Reply {
		std::vector<uint8_t> body;
		uint32_t count = 0;
		void add(const void *p, size_t n);
	};

	void control(std::span<const uint8_t> msg);
	bool accept_message(std::span<const uint8_t> msg, nnc::Header &h, std::vector<Trans> &ts);
	bool continue_held(std::span<const uint8_t> msg, const nnc::Header &h, const std::vector<Trans> &ts);
	void begin_message(std::span<const uint8_t> msg, const nnc::Header &h, const std::vector<Trans> &ts);
	void send_dma_cont(const nnc::Header &req, uint32_t chunk, uint64_t bytes);
	bool parse(std::span<const uint8_t> msg, std::vector<Trans> &out) const;
	void run_message(const nnc::Header &h, std::span<const uint8_t> msg, const std::vector<Trans> &ts,
			 std::map<uint32_t, std::vector<uint8_t>> &dma);
	bool stage_dma(std::span<const uint8_t> msg, const Trans &t, std::map<uint32_t, std::vector<uint8_t>> &dma,
		       uint64_t &bytes, uint64_t limit);
	uint64_t held_by_others(uint32_t handle) const;
	uint64_t dma_needed(std::span<const uint8_t> msg, const std::vector<Trans> &ts) const;
	void send_reply(const nnc::Header &req, const Reply &r);
	void send_error(const nnc::Header &req, uint32_t code);
	void timesync(std::span<const uint8_t> msg);

	// ---- commands (protocol 17.0) ------------------------------------------
	struct Ctx {
		uint32_t handle;
		int32_t partition; // -1: none
		std::span<const uint8_t> msg;
		const std::vector<Trans> *trans;
		std::map<uint32_t, std::vector<uint8_t>> *dma;
		std::map<uint32_t, size_t> dma_used;
		Reply *reply;
	};
	void command(Ctx &c, std::span<const uint8_t> req);
	std::vector<uint8_t> command_resp(Ctx &c, std::span<const uint8_t> req, std::vector<uint8_t> &extra);
	std::vector<uint8_t> status_resp() const;
	std::vector<uint8_t> resource_info_resp(std::span<const uint8_t> req, uint32_t handle) const;
	std::vector<uint8_t> perf_info_resp() const;
	int32_t load_image(Ctx &c, std::span<const uint8_t> req, uint32_t &id);
	int32_t activate(Ctx &c, std::span<const uint8_t> req, nnc::cmd::ActivateResp &resp);
	int32_t deactivate(Ctx &c, std::span<const uint8_t> req, unsigned &dbc);
	int32_t unload(Ctx &c, uint32_t type, uint32_t id);
	int32_t create_group(Ctx &c, std::span<const uint8_t> req, int32_t &id);
	int32_t release_group(uint32_t handle, int32_t id);
	int32_t activate_state(Ctx &c, std::span<const uint8_t> req);
	std::optional<std::span<const uint8_t>> take_dma(Ctx &c, uint32_t tag, uint64_t len);
	void terminate(uint32_t handle);
	void release_all();

	// ---- resources ---------------------------------------------------------
	struct Group {
		int32_t id;
		uint32_t owner;
		int32_t source; // the group it was carved from, or -1
		bool orphaned = false;
		Counts cap, used;
	};
	struct Image {
		uint32_t id;
		uint32_t owner;
		int32_t group;
		bool elf;
		uint64_t addr;  // DDR
		uint64_t size;  // bytes reserved
		uint64_t static_size = 0, dynamic_size = 0;
		unsigned nsps = 1;
		unsigned users = 0; // activations using it
		// Our workload format (docs/nsp.md); null for an ELF made for
		// something else, which activates with no program.
		std::shared_ptr<const nsp::Workload> workload;
	};
	struct Activation {
		uint32_t id;
		uint32_t owner;
		int32_t group;
		uint32_t elf_id, const_id;
		unsigned dbc;
		uint32_t nsp_mask;
		uint32_t state;
		uint64_t window = 0, window_size = 0; // DDR of the workload
		std::unique_ptr<nsp::Counters> counters;
		std::unique_ptr<nsp::Workers> workers;
		std::string name;     // the workload's, for crash dumps
		bool injected = false; // a crash was injected into it
		bool hold_recovery = false; // ... asking for a held recovery
		// Crashed with no SSR client to recover it: stopped, its
		// requests dropped, held until its owner deactivates it.
		bool dead = false;
	};
	void stop_activation(Activation &a);
	void retire_counters(const Activation &a);

	// LOAD_* (the image's DMA data, if it brings any) and ACTIVATE, in steps.
	using ImageData = std::optional<std::span<const uint8_t>>;
	int32_t load_constants_payload(Ctx &c, std::span<const uint8_t> req, uint32_t &id);
	int32_t read_elf(Ctx &c, std::span<const uint8_t> req, Image &img, ImageData &data, uint64_t &size);
	int32_t read_constants(Ctx &c, std::span<const uint8_t> req, ImageData &data, uint64_t &size);
	int32_t size_constants_ex(std::span<const uint8_t> req, Image &img, uint64_t &size) const;
	int32_t place_image(Ctx &c, Image &img, uint64_t size, const ImageData &data, uint32_t &id);
	struct ActivationPlan;
	std::optional<nnc::ActivateToDev> activation_fifos(const Ctx &c) const;
	int32_t plan_activation(Ctx &c, ActivationPlan &p);
	int32_t room_for(const ActivationPlan &p) const;
	int32_t fill_window(ActivationPlan &p);
	uint32_t take_nsps(unsigned n);
	int32_t start_activation(Ctx &c, ActivationPlan &p, nnc::cmd::ActivateResp &resp);

	// ---- crashes (qsm_crash.cc) ---------------------------------------------
	// What a DBC under recovery still holds until SSR is over.
	struct Recovering {
		uint32_t nsp_mask;
		int32_t group;
		uint64_t window_size;
	};
	std::string inject_crash(uint32_t act, unsigned core, const std::string &reason, bool hold);
	// Tears the activation down but for its DBC and NSPs, and starts SSR.
	void crash(uint32_t act, const std::string &injected_fault = {});
	std::vector<Ssr::Region> crash_dump(const Activation &a, const std::string &fault,
					    const std::vector<nsp::CoreState> &cores) const;
	void ssr_done(unsigned dbc) override;

public:
	// Window size of an activation whose ELF is not one of our workloads.
	static constexpr uint64_t kDefaultWindow = 16ull << 20;
	// For tests and telemetry: the activation on `dbc`, if any.
	struct ActivationInfo {
		uint32_t id;
		uint64_t window, window_size;
		uint64_t busy_ns, iterations;
		bool running, faulted;
		std::string fault;
	};
	std::optional<ActivationInfo> activation_on(unsigned dbc) const;

private:
	// Takes `want` from the group (or the device pool); false when short.
	bool reserve(int32_t group, const Counts &want);
	void unreserve(int32_t group, const Counts &give);
	Group *group_for(int32_t id, uint32_t handle);
	int32_t pick_group(const Ctx &c, int32_t explicit_group, bool &ok);
	void maybe_retire_group(int32_t id);
	Counts device_free() const;

	HostInterface &host_;
	Mhi &mhi_;
	DmaBridge &dbr_;
	QsmConfig cfg_;
	Ddr &ddr_;
	bool running_ = false;
	std::vector<LoadedImage> images_;
	int64_t host_offset_us_ = 0;
	uint64_t timesyncs_ = 0;
	uint64_t messages_ = 0;
	bool crc_active_ = false;
	// DDR traffic of the DMA Bridge, sampled for PERFORMANCE_INFO's
	// "last 100 ms" bandwidth.
	mutable uint64_t bw_bytes_ = 0, bw_time_ns_ = 0, bw_kbps_ = 0;
	uint64_t dram_bw_kbps() const;

	std::map<uint32_t, Held> held_; // by user handle
	std::map<int32_t, Group> groups_;
	std::map<uint32_t, Image> objects_;    // ELFs and constants, by id
	std::map<uint32_t, Activation> acts_; // by activation id
	uint32_t vc_busy_ = 0;                // DBC bitmap
	uint32_t nsp_busy_ = 0;               // NSP bitmap
	Counts device_used_;                  // outside any group
	uint32_t next_object_id_ = 1, next_act_id_ = 1;
	int32_t next_group_id_ = 1;

	std::map<unsigned, Recovering> recovering_; // by DBC
	// Counters of activations that are gone, and crashes, since start().
	uint64_t retired_busy_ns_ = 0, retired_iterations_ = 0, faults_ = 0;
	Ssr ssr_;
	Ras ras_;
	Telemetry telemetry_;
};

} // namespace aic100
