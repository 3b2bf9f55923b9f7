// SPDX-License-Identifier: GPL-2.0-or-later
#include "pipeline.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace qaic {

namespace wl = aic100::workloads;

DataChannel::DataChannel(const Device &dev, uint64_t window, uint32_t queue) : nnc_(dev)
{
	wl::Example e = *wl::find("copy");
	e.source = ".io_size " + std::to_string(window) + "\n.name data-channel\n HALT\n";
	std::string err;
	const auto image = wl::build(e, err);
	if (!image) {
		problem_ = "building the workload: " + err;
		return;
	}
	const LoadResult l = nnc_.load_elf(*image);
	if (!l.ok()) {
		problem_ = "LOAD_ELF: " + l.describe();
		return;
	}
	elf_ = l.id;
	act_ = nnc_.activate(elf_, 0, queue);
	if (!act_.ok())
		problem_ = "ACTIVATE: " + act_.describe();
}

DataChannel::~DataChannel()
{
	if (act_.ok())
		nnc_.deactivate(act_.activation_id, act_.dbc_id);
	if (elf_)
		nnc_.unload_elf(elf_);
}

Pipeline::Pipeline(const Device &dev, const wl::Example &e, unsigned depth)
	: dev_(dev), e_(e), depth_(depth ? depth : 1), nnc_(dev)
{
}

Pipeline::~Pipeline()
{
	// BOs first: closing them detaches their slices.
	in_.clear();
	out_.clear();
	if (active_)
		nnc_.deactivate(act_.activation_id, dbc_);
	if (elf_id_)
		nnc_.unload_elf(elf_id_);
}

std::string Pipeline::setup()
{
	std::string err;
	const auto elf = wl::build(e_, err);
	if (!elf)
		return "building " + e_.layout.name + ": " + err;
	const LoadResult l = nnc_.load_elf(*elf, e_.layout.name);
	if (!l.ok())
		return "LOAD_ELF: " + l.describe();
	elf_id_ = l.id;
	if (std::string why = activate(); !why.empty())
		return why;
	const auto &L = e_.layout;
	for (unsigned s = 0; s < depth_; s++) {
		int r = 0;
		auto in = Bo::create(dev_, L.input.size, &r);
		auto out = in ? Bo::create(dev_, L.output.size, &r) : std::nullopt;
		if (!in || !out)
			return "CREATE_BO: " + errno_name(-r);
		in_.push_back(std::move(*in));
		out_.push_back(std::move(*out));
	}
	return attach();
}

std::string Pipeline::activate()
{
	act_ = nnc_.activate(elf_id_, 0, 2 * depth_ + 2);
	if (!act_.ok())
		return "ACTIVATE: " + act_.describe();
	active_ = true;
	dbc_ = act_.dbc_id;
	return {};
}

// Every slot's BOs on the DBC, with the workload's semaphore protocol.
std::string Pipeline::attach()
{
	const auto &L = e_.layout;
	for (unsigned s = 0; s < depth_; s++) {
		// The input waits until the program took the previous one, then
		// says it is there; the output waits until the program says so.
		qaic_attach_slice_entry si{};
		si.size = L.input.size;
		si.sem0 = sem(QAIC_SEM_WAIT_EQUAL, static_cast<uint8_t>(L.sem_in), 0, true);
		si.sem1 = sem(QAIC_SEM_INC, static_cast<uint8_t>(L.sem_in), 1, false);
		si.dev_addr = act_.ddr_base + L.input.offset;
		qaic_attach_slice_entry so{};
		so.size = L.output.size;
		so.sem0 = sem(QAIC_SEM_WAIT_GT_0, static_cast<uint8_t>(L.sem_out), 0, true);
		so.sem1 = sem(QAIC_SEM_DEC, static_cast<uint8_t>(L.sem_out), 1, false);
		so.dev_addr = act_.ddr_base + L.output.offset;
		int r;
		if ((r = attach_slices(dev_, in_[s].handle(), dbc_, kToDevice, std::span(&si, 1))) ||
		    (r = attach_slices(dev_, out_[s].handle(), dbc_, kFromDevice, std::span(&so, 1))))
			return "ATTACH_SLICE_BO: " + errno_name(-r);
	}
	return {};
}

std::string Pipeline::recover()
{
	if (!elf_id_)
		return "nothing loaded: setup() first";
	// The card ended the crashed activation and the driver released its
	// DBC, detaching every slice; the ELF stays loaded.
	active_ = false;
	// Until the card has freed the crashed activation's NSPs and DBC
	// (AFTER_POWER_UP), a new one may not fit.
	const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
	for (;;) {
		std::string why = activate();
		if (why.empty())
			break;
		const int32_t st = act_.status;
		const bool short_of_resources = !act_.err && act_.answered &&
						(st == cmd::kErrNspAlloc || st == cmd::kErrVcAlloc ||
						 st == cmd::kErrSemAlloc || st == cmd::kErrMcidAlloc || st == cmd::kErrMemory);
		// EPIPE: the DBC the card handed out crashed before the driver
		// bound it (docs/health.md); that activation is gone too.
		if (!(short_of_resources || act_.err == -EPIPE) || std::chrono::steady_clock::now() > end)
			return why;
		std::this_thread::sleep_for(std::chrono::milliseconds(20));
	}
	return attach();
}

RunResult Pipeline::run(uint64_t count, bool check)
{
	RunResult res;
	constexpr uint64_t kInputs = 4;
	std::vector<std::vector<uint8_t>> inputs, refs;
	for (uint64_t s = 0; s < kInputs; s++) {
		inputs.push_back(e_.make_input(s + 1));
		if (check)
			refs.push_back(e_.reference(inputs.back()));
	}
	const auto t0 = std::chrono::steady_clock::now();
	for (uint64_t i = 0; i < count + depth_; i++) {
		if (i >= depth_) {
			const uint64_t k = i - depth_;
			const Bo &out = out_[k % depth_];
			// In slices of at most 5 s, the driver's default.
			int r;
			uint32_t left = wait_ms_;
			do {
				const uint32_t ms = std::min<uint32_t>(left, 5000);
				r = wait(dev_, dbc_, out.handle(), ms);
				left -= ms;
			} while (r == -ETIMEDOUT && left);
			if (r) {
				res.problem = "WAIT_BO of inference " + std::to_string(k) + ": " + errno_name(-r);
				res.error = r;
				break;
			}
			res.inferences++;
			std::string why;
			if (check && !wl::matches(e_, out.bytes(), refs[k % kInputs], why)) {
				if (!res.mismatches++)
					res.first_mismatch = "inference " + std::to_string(k) + ": " + why;
			}
			completed_.fetch_add(1, std::memory_order_relaxed);
		}
		if (i < count) {
			const unsigned s = i % depth_;
			std::memcpy(in_[s].data(), inputs[i % kInputs].data(), inputs[i % kInputs].size());
			const int r = submit(s);
			if (r) {
				res.problem = "EXECUTE_BO of inference " + std::to_string(i) + ": " + errno_name(-r);
				res.error = r;
				break;
			}
		}
	}
	res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
	return res;
}

// EXECUTE_BO of slot `s`: 0 or -errno. A full queue drains as outputs
// complete; one that never does (a DBC the card gave up) fails like a
// WAIT_BO would.
int Pipeline::submit(unsigned s)
{
	const qaic_execute_entry ents[2] = {{in_[s].handle(), kToDevice}, {out_[s].handle(), kFromDevice}};
	if (!one_bo_per_execute_)
		return execute_when_room(dev_, dbc_, ents, wait_ms_);
	const int r = execute_when_room(dev_, dbc_, std::span(ents, 1), wait_ms_);
	return r ? r : execute_when_room(dev_, dbc_, std::span(ents + 1, 1), wait_ms_);
}

} // namespace qaic
