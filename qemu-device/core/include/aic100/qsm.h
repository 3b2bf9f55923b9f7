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

#include <algorithm>
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
	// The work of NNC messages in one pass of the card (which runs under
	// QEMU's BQL): bytes moved (DMA data read, data copied into DDR) and
	// activations started or stopped. A message that asks for more goes
	// on in the next passes; QAIC_CONTROL waits meanwhile, so replies
	// keep their order.
	static constexpr uint64_t kPassBytes = 64ull << 20;
	static constexpr unsigned kPassActivations = 4;

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

	struct Job;
	void control(std::span<const uint8_t> msg);
	bool accept_message(std::span<const uint8_t> msg, nnc::Header &h, std::vector<Trans> &ts);
	enum class Continuation { No, Answered, Stage };
	Continuation continue_held(Job &j);
	bool begin_message(Job &j);
	void send_dma_cont(const nnc::Header &req, uint32_t chunk, uint64_t bytes);
	bool parse(std::span<const uint8_t> msg, std::vector<Trans> &out) const;
	bool make_room(const Job &j, Held &into, uint64_t limit) const;
	bool stage_dma(Job &j, Held &into);
	bool staged(Job &j);
	void start_run(Job &j, const nnc::Header &h);
	bool run_transactions(Job &j);
	bool run_transaction(Job &j, const Trans &t);
	void work();
	void end_pass();
	void drop_job();
	uint64_t held_by_others(uint32_t handle) const;
	uint64_t dma_needed(std::span<const uint8_t> msg, const std::vector<Trans> &ts) const;
	void send_reply(const nnc::Header &req, const Reply &r);
	void send_error(const nnc::Header &req, uint32_t code);
	void timesync(std::span<const uint8_t> msg);

	// What is left of this pass's work (kPassBytes, kPassActivations).
	struct Budget {
		uint64_t bytes = kPassBytes;
		unsigned activations = kPassActivations;
		bool spent() const { return bytes == 0 || activations == 0; }
		void take_bytes(uint64_t n) { bytes -= std::min(bytes, n); }
		void take_activation() { activations -= activations > 0; }
	};

	// ---- commands (protocol 17.0) ------------------------------------------
	struct ActivationPlan;
	struct Ctx {
		uint32_t handle;
		int32_t partition; // -1: none
		std::span<const uint8_t> msg;
		const std::vector<Trans> *trans;
		std::map<uint32_t, std::vector<uint8_t>> *dma;
		std::map<uint32_t, size_t> dma_used;
		Reply *reply;
		Budget *budget = nullptr; // null: not counted (TERMINATE's own steps)
		// An ACTIVATE whose window is being filled over several passes.
		std::shared_ptr<ActivationPlan> filling;
	};
	// False when the command goes on in a later pass.
	bool command(Ctx &c, std::span<const uint8_t> req);
	std::optional<std::vector<uint8_t>> command_resp(Ctx &c, std::span<const uint8_t> req,
							 std::vector<uint8_t> &extra);
	std::vector<uint8_t> status_resp() const;
	std::vector<uint8_t> resource_info_resp(std::span<const uint8_t> req, uint32_t handle) const;
	std::vector<uint8_t> perf_info_resp() const;
	int32_t load_image(Ctx &c, std::span<const uint8_t> req, uint32_t &id);
	std::optional<int32_t> activate(Ctx &c, std::span<const uint8_t> req, nnc::cmd::ActivateResp &resp);
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
	std::optional<nnc::ActivateToDev> activation_fifos(const Ctx &c) const;
	int32_t plan_activation(Ctx &c, ActivationPlan &p);
	int32_t room_for(const ActivationPlan &p) const;
	int32_t open_window(ActivationPlan &p);
	bool fill_window(ActivationPlan &p, Budget *b);
	uint32_t take_nsps(unsigned n);
	int32_t start_activation(Ctx &c, ActivationPlan &p, nnc::cmd::ActivateResp &resp);

	// An ACTIVATE as it is checked and carried out.
	struct ActivationPlan {
		nnc::cmd::ActivateReq req{};
		nnc::ActivateToDev fifos{}; // the host's, from the same message
		Image *elf = nullptr, *consts = nullptr;
		int32_t group = -1;
		unsigned nsps = 0;
		const nsp::Workload *work = nullptr; // null: not one of our workloads
		uint64_t window = Ddr::kNoAddress, window_size = 0;
		std::span<uint8_t> win; // the window in DDR
		// What goes into the window (it is zero already): the segments'
		// data, then the constants; and how far the copying got.
		struct Copy {
			const uint8_t *from;
			uint64_t to; // offset in the window
			uint64_t len;
		};
		std::vector<Copy> copies;
		size_t next_copy = 0;
		uint64_t copied = 0;
	};

	// The message the QSM is working on, over as many passes as it takes.
	struct Job {
		nnc::Header h;
		std::vector<uint8_t> msg;
		std::vector<Trans> ts;
		bool continuation = false; // DMA data for the message held for h.handle
		uint32_t chunk = 0;        // a new message's DMA chunk id (0: runs at once)
		// Reading the DMA_XFERs: the transaction, its pair, the bytes of
		// the pair read, and the size of the tag's data where it began.
		size_t xfer = 0;
		uint32_t pair = 0;
		uint64_t pair_done = 0;
		size_t pair_start = 0;
		Held data; // a new message's DMA data; then the message that runs
		// Running it: the header the reply answers, the transaction next.
		bool running = false;
		nnc::Header run_h{};
		std::vector<Trans> run_ts;
		size_t next = 0;
		Reply reply;
		Ctx ctx{};
	};
	std::unique_ptr<Job> job_;
	Budget budget_; // this pass's, renewed by poll()

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
