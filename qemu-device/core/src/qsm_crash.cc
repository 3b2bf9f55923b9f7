// SPDX-License-Identifier: GPL-2.0-or-later
// QSM: workload crashes. A crash stops that activation alone, keeps its DBC
// and NSPs out of use while SSR recovers them, and hands the host a crash
// dump (docs/health.md, "SSR").
#include <bit>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "aic100/qsm.h"
#include "aic100/wire.h"

namespace aic100 {

namespace {

// Physical NSP of core k of an activation on the NSPs of `mask`.
unsigned physical_nsp(uint32_t mask, unsigned k)
{
	for (unsigned n = 0; n < 32; n++) {
		if (!(mask & (1u << n)))
			continue;
		if (k-- == 0)
			return n;
	}
	return 0;
}

} // namespace

void Qsm::retire_counters(const Activation &a)
{
	if (!a.counters)
		return;
	retired_busy_ns_ += a.counters->busy_ns.load();
	retired_iterations_ += a.counters->iterations.load();
}

Telemetry::NspStats Qsm::nsp_stats() const
{
	Telemetry::NspStats s{retired_busy_ns_, retired_iterations_, faults_, 0};
	for (const auto &[id, a] : acts_) {
		if (a.counters) {
			s.busy_ns += a.counters->busy_ns.load();
			s.inferences += a.counters->iterations.load();
		}
		if (!a.dead)
			s.active += static_cast<unsigned>(std::popcount(a.nsp_mask));
	}
	return s;
}

void Qsm::poll()
{
	if (!running_)
		return;
	std::vector<uint32_t> crashed;
	for (const auto &[id, a] : acts_)
		if (!a.dead && a.workers && !a.workers->running() && a.workers->faulted())
			crashed.push_back(id);
	for (uint32_t id : crashed)
		crash(id);
	ssr_.poll();
	end_pass();
}

uint64_t Qsm::next_deadline() const
{
	return running_ ? ssr_.next_deadline() : HostInterface::kNoDeadline;
}

std::string Qsm::crash_dbc(unsigned dbc, const std::string &reason, bool hold)
{
	if (!running_)
		return "the QSM is not running";
	if (dbc >= regs::kNumDbc)
		return "no DBC " + std::to_string(dbc) + " (0..15)";
	for (const auto &[id, a] : acts_)
		if (a.dbc == dbc)
			return inject_crash(id, 0, reason, hold);
	if (ssr_.recovering(dbc))
		return "DBC " + std::to_string(dbc) + " is recovering already";
	return "no workload on DBC " + std::to_string(dbc);
}

std::string Qsm::crash_nsp(unsigned nsp, const std::string &reason, bool hold)
{
	if (!running_)
		return "the QSM is not running";
	if (nsp >= cfg_.nsp_count)
		return "no NSP " + std::to_string(nsp) + " (0.." + std::to_string(cfg_.nsp_count - 1) + ")";
	for (const auto &[id, a] : acts_)
		if (a.nsp_mask & (1u << nsp))
			return inject_crash(id, static_cast<unsigned>(std::popcount(a.nsp_mask & ((1u << nsp) - 1))),
					    reason, hold);
	return "no workload on NSP " + std::to_string(nsp);
}

std::string Qsm::inject_crash(uint32_t id, unsigned core, const std::string &reason, bool hold)
{
	Activation &a = acts_.at(id);
	if (a.dead)
		return "the workload on DBC " + std::to_string(a.dbc) + " crashed already; it waits for its owner to deactivate it";
	if (a.injected || (a.workers && a.workers->faulted()))
		return "the workload on DBC " + std::to_string(a.dbc) + " is crashing already";
	a.injected = true;
	a.hold_recovery = hold;
	// A running program fails between two instructions; poll() sees it end.
	if (a.workers && a.workers->inject_fault(core, reason))
		return {};
	if (a.workers && a.workers->faulted()) {
		a.injected = false; // it failed by itself meanwhile: poll() takes it
		return {};
	}
	crash(id, "nsp " + std::to_string(core) + ": injected fault: " + reason + " (the program was not running)");
	return {};
}

void Qsm::crash(uint32_t id, const std::string &injected_fault)
{
	auto it = acts_.find(id);
	if (!ssr_.host_listens()) {
		// No SSR client (upstream 6.12 binds none): the host still counts
		// the DBC as its user's, so handing it to someone else would
		// leave two owners. The workload stops and its requests are
		// dropped; the activation stays, dead, until its owner
		// deactivates it (answered as usual) or goes away.
		Activation &a = it->second;
		stop_activation(a);
		char msg[200];
		std::snprintf(msg, sizeof(msg), "QSM: workload on DBC %u crashed (%s); no SSR client: held until deactivated",
			      a.dbc, (injected_fault.empty() && a.workers ? a.workers->fault() : injected_fault).c_str());
		host_.trace(msg);
		a.dead = true;
		faults_++;
		return;
	}
	Activation a = std::move(it->second);
	acts_.erase(it);
	std::vector<nsp::CoreState> cores;
	std::string fault = injected_fault;
	if (a.workers) {
		a.workers->stop();
		cores = a.workers->states();
		if (fault.empty())
			fault = a.workers->fault();
	}
	faults_++;
	{
		char msg[160];
		std::snprintf(msg, sizeof(msg), "QSM: workload on DBC %u crashed: %s", a.dbc, fault.c_str());
		host_.trace(msg);
	}
	std::vector<Ssr::Region> dump = crash_dump(a, fault, cores);
	// Its requests, queued or under way, are lost with it.
	stop_activation(a);
	retire_counters(a);
	ddr_.release(a.window);
	if (auto e = objects_.find(a.elf_id); e != objects_.end())
		e->second.users--;
	if (auto k = objects_.find(a.const_id); a.const_id && k != objects_.end())
		k->second.users--;
	recovering_[a.dbc] = Recovering{a.nsp_mask, a.group, a.window_size};
	ssr_.crash(a.dbc, std::move(dump), a.hold_recovery);
}

void Qsm::ssr_done(unsigned dbc)
{
	auto it = recovering_.find(dbc);
	if (it == recovering_.end())
		return;
	const Recovering r = it->second;
	recovering_.erase(it);
	vc_busy_ &= ~(1u << dbc);
	nsp_busy_ &= ~r.nsp_mask;
	unreserve(r.group, Counts{static_cast<unsigned>(std::popcount(r.nsp_mask)), 1, kSemsPerVc, 1, r.window_size});
	if (r.group >= 0)
		maybe_retire_group(r.group);
}

std::vector<Ssr::Region> Qsm::crash_dump(const Activation &a, const std::string &fault,
					 const std::vector<nsp::CoreState> &cores) const
{
	std::vector<Ssr::Region> out;
	const DmaBridge::DbcRegs &regs = dbr_.dbc(a.dbc);
	const DmaBridge::Queues &q = dbr_.queues(a.dbc);

	// summary.txt: what a developer reads first.
	const nsp::CoreState *culprit = nullptr;
	for (const auto &c : cores)
		if (c.state == nsp::CoreState::State::Fault) {
			culprit = &c;
			break;
		}
	std::string s;
	auto line = [&s](const char *key, const std::string &v) { s += std::string(key) + ": " + v + "\n"; };
	auto hex = [](uint64_t v) {
		char b[24];
		std::snprintf(b, sizeof(b), "0x%" PRIx64, v);
		return std::string(b);
	};
	line("dbc", std::to_string(a.dbc));
	line("activation", std::to_string(a.id));
	line("workload", a.name.empty() ? "(no program)" : a.name);
	line("cause", a.injected ? "injected" : "nsp fault");
	line("fault", fault);
	if (culprit) {
		line("nsp", std::to_string(physical_nsp(a.nsp_mask, culprit->index)));
		line("pc", std::to_string(culprit->pc));
		line("instruction", culprit->instr ? nsp::disassemble(*culprit->instr) : "(outside the program)");
		line("address", hex(culprit->fault_addr));
	}
	line("nsp_mask", hex(a.nsp_mask));
	line("window", hex(a.window) + " +" + hex(a.window_size));
	line("req_q", hex(q.req) + " elements " + std::to_string(q.n));
	line("rsp_q", hex(q.rsp));
	line("req_head", std::to_string(regs.req_head));
	line("req_tail", std::to_string(regs.req_tail));
	line("rsp_head", std::to_string(regs.rsp_head));
	line("rsp_tail", std::to_string(regs.rsp_tail));
	line("requests_done", std::to_string(dbr_.stats(a.dbc).requests));
	out.push_back({"crash summary", "summary.txt", std::vector<uint8_t>(s.begin(), s.end())});

	// nsp.bin: each core's registers and program state.
	if (!cores.empty()) {
		std::vector<uint8_t> b;
		for (const auto &c : cores) {
			wire::append<uint32_t>(b, physical_nsp(a.nsp_mask, c.index));
			wire::append<uint32_t>(b, static_cast<uint32_t>(c.state));
			wire::append<uint64_t>(b, c.pc);
			wire::append<uint64_t>(b, c.executed);
			wire::append<uint64_t>(b, c.fault_addr);
			uint8_t in[16] = {};
			if (c.instr)
				nsp::encode(*c.instr, in);
			b.insert(b.end(), in, in + 16);
			for (uint64_t r : c.regs)
				wire::append<uint64_t>(b, r);
		}
		out.push_back({"nsp registers", "nsp.bin", std::move(b)});
	}

	// dbc.bin: the DBC's queues as the card left them.
	std::vector<uint8_t> d;
	wire::append<uint32_t>(d, a.dbc);
	wire::append<uint32_t>(d, q.n);
	wire::append<uint64_t>(d, q.req);
	wire::append<uint64_t>(d, q.rsp);
	wire::append<uint32_t>(d, regs.req_head);
	wire::append<uint32_t>(d, regs.req_tail);
	wire::append<uint32_t>(d, regs.rsp_head);
	wire::append<uint32_t>(d, regs.rsp_tail);
	wire::append<uint64_t>(d, dbr_.stats(a.dbc).requests);
	const Semaphores &sems = dbr_.semaphores(a.dbc);
	for (unsigned i = 0; i < Semaphores::kCount; i++)
		wire::append<uint32_t>(d, sems.value(i));
	out.push_back({"dbc queues", "dbc.bin", std::move(d)});
	return out;
}

} // namespace aic100
