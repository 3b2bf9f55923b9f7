// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/dma_bridge.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace aic100 {

using namespace dbc;
using namespace regs;

namespace {

Request request_of(const uint8_t (&raw)[64])
{
	Request r;
	std::memcpy(&r, raw, sizeof(r));
	return r;
}

// The direction of a request's transfer: 1 to the device, 2 from it, 0 none
// (3, illegal, moves nothing either).
unsigned direction_of(const Request &r)
{
	const unsigned t = r.cmd & kCmdTransferMask;
	return t == 3 ? 0 : t;
}

// The request's presync command: its index in sem[], -1 for none, -2 for
// more than one.
int presync_of(const Request &r)
{
	int pre = -1;
	for (int k = 0; k < 4; k++) {
		if ((r.sem[k] & kSemEnable) && (r.sem[k] & kSemPresync)) {
			if (pre >= 0)
				return -2;
			pre = k;
		}
	}
	return pre;
}

} // namespace

DmaBridge::DmaBridge(HostInterface &host, Ddr &ddr) : host_(host), ddr_(ddr)
{
	for (unsigned i = 0; i < kNumDbc; i++) {
		sems_[i] = std::make_unique<Semaphores>();
		// A semaphore the NSPs moved may release a waiting request.
		sems_[i]->set_on_change([this, i] {
			pending_.fetch_or(1u << i);
			host_.kick();
		});
	}
}

void DmaBridge::reset()
{
	const std::lock_guard<std::mutex> hold(mu_);
	dbc_.fill(DbcRegs{});
	active_.fill(false);
	queues_.fill(Queues{});
	stats_.fill(Stats{});
	window_.fill(Window{});
	doorbell_at_.fill(0);
	for (auto &g : gen_)
		g++;
	for (auto &s : sems_)
		s->reset();
	pending_ = 0;
}

void DmaBridge::activate(unsigned i, const Queues &q)
{
	const std::lock_guard<std::mutex> hold(mu_);
	dbc_.at(i) = DbcRegs{};
	queues_.at(i) = q;
	stats_.at(i) = Stats{};
	window_.at(i) = Window{};
	doorbell_at_.at(i) = 0;
	gen_.at(i)++;
	sems_.at(i)->reset();
	// The QSM refuses empty FIFOs; the engine divides by their size.
	active_.at(i) = q.n != 0;
}

void DmaBridge::deactivate(unsigned i)
{
	const std::lock_guard<std::mutex> hold(mu_);
	dbc_.at(i) = DbcRegs{};
	queues_.at(i) = Queues{};
	window_.at(i) = Window{};
	doorbell_at_.at(i) = 0;
	gen_.at(i)++;
	active_.at(i) = false;
	pending_.fetch_and(~(1u << i));
	sems_.at(i)->wake_all();
}

uint16_t DmaBridge::move(unsigned i, bool to_device, uint64_t host, uint64_t dev, uint64_t len)
{
	if (!in_window(i, dev, len))
		return kOutsideWindow;
	if (!len)
		return kOk;
	uint8_t *p = ddr_.span(dev, len);
	if (!p)
		return kOutsideWindow;
	const uint64_t t0 = host_.now_ns();
	if (to_device) {
		if (host_.dma_read(host, p, len) != DmaStatus::Ok)
			return kHostDmaFault;
		stats_[i].bytes_in += len;
		stats_[i].copy_ns_in += host_.now_ns() - t0;
	} else {
		if (host_.dma_write(host, p, len) != DmaStatus::Ok)
			return kHostDmaFault;
		stats_[i].bytes_out += len;
		stats_[i].copy_ns_out += host_.now_ns() - t0;
	}
	return kOk;
}

bool DmaBridge::in_window(unsigned i, uint64_t addr, uint64_t len) const
{
	const Queues &q = queues_[i];
	return addr >= q.lo && addr <= q.hi && len <= q.hi - addr;
}

void DmaBridge::raise(unsigned i, uint64_t &budget)
{
	// DBC i signals vector i + 1 when the host enabled enough vectors, else
	// everything shares vector 0 with MHI.
	const unsigned enabled = host_.msi_vectors_enabled();
	if (!enabled)
		return;
	host_.raise_msi(enabled > i + 1 ? i + 1 : 0);
	budget -= std::min(budget, kMsiCost);
}

uint64_t DmaBridge::affordable(uint64_t host, uint64_t len, bool is_write, uint64_t &budget)
{
	return host_.dma_affordable(host, len, is_write, budget);
}

uint64_t DmaBridge::cost_of(uint64_t host, uint64_t len, bool is_write) const
{
	return host_.dma_cost(host, len, is_write);
}

bool DmaBridge::fifo_empty(unsigned i) const
{
	const std::lock_guard<std::mutex> hold(mu_);
	return dbc_[i].req_head == dbc_[i].req_tail;
}

bool DmaBridge::rsp_full(unsigned i) const
{
	const std::lock_guard<std::mutex> hold(mu_);
	const DbcRegs &d = dbc_[i];
	return (d.rsp_tail + 1) % queues_[i].n == d.rsp_head;
}

// The fetch answers the doorbell that rang since the last one.
void DmaBridge::take_doorbell(unsigned i)
{
	const uint64_t now = host_.now_ns();
	const std::lock_guard<std::mutex> hold(mu_);
	if (!doorbell_at_[i])
		return;
	stats_[i].doorbells++;
	stats_[i].doorbell_ns += now - std::min(doorbell_at_[i], now);
	doorbell_at_[i] = 0;
}

void DmaBridge::stop(unsigned i)
{
	const std::lock_guard<std::mutex> hold(mu_);
	active_[i] = false;
}

void DmaBridge::process()
{
	uint64_t budget = kBudget;
	uint32_t again = 0;
	const uint32_t work = pending_.exchange(0);
	for (unsigned i = 0; i < kNumDbc; i++) {
		if ((work & (1u << i)) && active_[i] && run(i, budget))
			again |= 1u << i;
	}
	if (again) {
		pending_.fetch_or(again);
		host_.kick();
	}
}

bool DmaBridge::run(unsigned i, uint64_t &budget)
{
	const uint64_t gen = gen_[i];
	const Window &w = window_[i];
	for (;;) {
		if (gone(i, gen))
			return false;
		if (budget == 0)
			return w.n || !fifo_empty(i);
		// What ended waits for nothing but a response slot; it goes first,
		// since a later request may depend on its postsync.
		bool progress = false;
		Step c = complete_done(i, progress, budget);
		if (c == Step::Gone || c == Step::Blocked)
			return false; // a full response FIFO: the host's RSPHP write re-runs the DBC
		if (issue(i, budget, progress) == Step::Gone)
			return false;

		// One turn of every started transfer, in FIFO order.
		for (unsigned k = 0; k < window_[i].n && budget; k++) {
			InFlight &f = window_[i].e[k];
			if (!f.started || f.transfer_done)
				continue;
			uint64_t quantum = std::min(kQuantum, budget);
			const uint64_t given = quantum;
			const Step st = transfer(i, f, quantum);
			if (st == Step::Gone)
				return false;
			budget -= given - quantum;
			f.transfer_done = st == Step::Done;
			progress = true;
		}

		c = complete_done(i, progress, budget);
		if (c == Step::Gone || c == Step::Blocked)
			return false;
		// Whatever is left waits for a semaphore (whose change re-runs the
		// DBC), for the host's next doorbell, or for the next pass when the
		// budget could not pay for the next access.
		if (!progress)
			return budget == 0 && (w.n || !fifo_empty(i));
	}
}

DmaBridge::Step DmaBridge::issue(unsigned i, uint64_t &budget, bool &progress)
{
	DbcRegs &d = dbc_[i];
	Window &w = window_[i];
	const uint64_t gen = gen_[i];
	for (;;) {
		const bool waiting = w.n && !w.e[w.n - 1].started;
		const unsigned started = w.n - (waiting ? 1 : 0);
		if (started >= kEngines)
			return Step::Done;
		if (!waiting) {
			const uint64_t at = queues_[i].req + uint64_t{d.req_head} * sizeof(Request);
			if (fifo_empty(i) || affordable(at, sizeof(Request), false, budget) < sizeof(Request))
				return Step::Done;
			uint8_t raw[sizeof(Request)];
			const DmaStatus st = host_.dma_read(at, raw, sizeof(raw));
			if (gone(i, gen))
				return Step::Gone;
			if (st != DmaStatus::Ok) {
				char m[80];
				std::snprintf(m, sizeof(m), "DBC%u: request FIFO unreadable; channel stopped", i);
				host_.guest_error(m);
				stop(i);
				return Step::Gone;
			}
			take_doorbell(i);
			InFlight &f = w.e[w.n++];
			f = InFlight{};
			std::memcpy(f.raw, raw, sizeof(raw));
		}
		InFlight &f = w.e[w.n - 1];
		if (!can_start(i, f))
			return Step::Blocked;
		start(i, f);
		{
			const std::lock_guard<std::mutex> hold(mu_);
			d.req_head = (d.req_head + 1) % queues_[i].n;
		}
		progress = true;
	}
}

bool DmaBridge::can_start(unsigned i, const InFlight &f) const
{
	const Request r = request_of(f.raw);
	const int pre = presync_of(r);
	// A malformed presync ends the request at once, whatever came before.
	if (pre == -2 || (pre >= 0 && sem_op(r.sem[pre]) > Semaphores::Op::WaitGt0))
		return true;

	uint32_t fences = 0;
	for (uint32_t s : r.sem)
		fences |= s & (kSemFenceToDev | kSemFenceFromDev);
	const Window &w = window_[i];
	for (unsigned k = 0; k < w.n; k++) {
		const InFlight &e = w.e[k];
		if (!e.started)
			continue;
		const Request er = request_of(e.raw);
		// Requests with a presync run one after the other: this one waits
		// until the earlier one has ended, its postsync included.
		if (pre >= 0 && presync_of(er) >= 0)
			return false;
		if (e.transfer_done)
			continue;
		const unsigned dir = direction_of(er);
		if ((dir == 1 && (fences & kSemFenceToDev)) || (dir == 2 && (fences & kSemFenceFromDev)))
			return false;
	}
	if (pre >= 0) {
		const uint32_t s = r.sem[pre];
		const auto op = sem_op(s);
		if (op >= Semaphores::Op::WaitEq && !sems_[i]->satisfied(sem_index(s), op, sem_value(s)))
			return false;
	}
	return true;
}

// The presync's own command (a wait was satisfied in can_start()).
void DmaBridge::start(unsigned i, InFlight &f)
{
	const Request r = request_of(f.raw);
	const int pre = presync_of(r);
	f.started = true;
	f.start_ns = host_.now_ns();
	if (pre == -2) {
		f.status = kTwoPresyncs;
	} else if (pre >= 0) {
		const uint32_t s = r.sem[pre];
		const auto op = sem_op(s);
		if (op > Semaphores::Op::WaitGt0)
			f.status = kBadSemaphore;
		else if (op < Semaphores::Op::WaitEq)
			sems_[i]->apply(sem_index(s), op, sem_value(s));
	}
	// A request whose presync is malformed ends at once, before any
	// transfer: no postsync, no doorbell.
	if (f.status) {
		f.malformed = true;
		f.transfer_done = true;
	}
}

DmaBridge::Step DmaBridge::complete_done(unsigned i, bool &progress, uint64_t &budget)
{
	const uint64_t gen = gen_[i];
	Window &w = window_[i];
	unsigned k = 0;
	while (k < w.n) {
		InFlight &f = w.e[k];
		if (!f.started || !f.transfer_done) {
			k++;
			continue;
		}
		const Request r = request_of(f.raw);
		// A full response FIFO holds everything back until the host reads.
		if ((r.cmd & kCmdResponse) && rsp_full(i))
			return Step::Blocked;
		InFlight done = f;
		std::move(w.e.begin() + k + 1, w.e.begin() + w.n, w.e.begin() + k);
		w.e[--w.n] = InFlight{};
		complete(i, done, budget);
		progress = true;
		if (gone(i, gen))
			return Step::Gone;
	}
	return Step::Done;
}

// The request's transfer is over: postsync semaphores and the doorbell (even
// after a failed transfer: the workload must not wait forever for an input
// that never comes), then its response and the interrupt.
void DmaBridge::complete(unsigned i, InFlight &f, uint64_t &budget)
{
	DbcRegs &d = dbc_[i];
	const uint64_t gen = gen_[i];
	const Queues q = queues_[i];
	const Request r = request_of(f.raw);
	Semaphores &sems = *sems_[i];
	uint16_t status = f.status;
	if (!f.malformed) {
		for (uint32_t s : r.sem) {
			if (!(s & kSemEnable) || (s & kSemPresync))
				continue;
			const auto op = sem_op(s);
			if (op == Semaphores::Op::Nop)
				continue;
			if (op >= Semaphores::Op::WaitEq || !sems.apply(sem_index(s), op, sem_value(s)))
				status = status ? status : uint16_t{kBadSemaphore};
		}
		if (r.db_len & kDbEnable) {
			static const unsigned sizes[4] = {4, 2, 1, 0};
			const unsigned n = sizes[r.db_len & 3];
			if (n == 0 || r.db_addr % n) {
				status = status ? status : uint16_t{kUnalignedDoorbell};
			} else if (!in_window(i, r.db_addr, n)) {
				status = status ? status : uint16_t{kOutsideWindow};
			} else {
				const uint32_t v = r.db_data;
				ddr_.write(r.db_addr, std::span(reinterpret_cast<const uint8_t *>(&v), n));
			}
		}
	}

	stats_[i].requests++;
	stats_[i].request_ns += host_.now_ns() - f.start_ns;
	if (status != kOk) {
		stats_[i].errors++;
		char m[80];
		std::snprintf(m, sizeof(m), "DBC%u: request %u failed with status %u", i, r.req_id, status);
		host_.guest_error(m);
	}
	bool msi = r.cmd & kCmdForceMsi;
	if (r.cmd & kCmdResponse) {
		const Response rsp = {r.req_id, status};
		// Written whatever the budget has left: the request has ended.
		const uint64_t at = q.rsp + uint64_t{d.rsp_tail} * sizeof(rsp);
		budget -= std::min(budget, cost_of(at, sizeof(rsp), true));
		const DmaStatus st = host_.dma_write(at, &rsp, sizeof(rsp));
		if (gone(i, gen))
			return;
		if (st == DmaStatus::Ok) {
			const std::lock_guard<std::mutex> hold(mu_);
			// Only the empty-to-non-empty edge interrupts.
			msi |= d.rsp_head == d.rsp_tail;
			d.rsp_tail = (d.rsp_tail + 1) % q.n;
			stats_[i].responses++;
		} else {
			host_.guest_error("DBC: response FIFO not writable");
		}
	}
	if (msi)
		raise(i, budget);
}

// Moves the request's data, as much as `budget` pays for per call; Yield
// when the budget ran out first.
DmaBridge::Step DmaBridge::transfer(unsigned i, InFlight &f, uint64_t &budget)
{
	const Request r = request_of(f.raw);
	const uint64_t gen = gen_[i];
	const unsigned type = r.cmd & kCmdTransferMask;
	const bool in = type == 1;
	if (type == 0)
		return Step::Done;
	if (type == 3) {
		f.status = kIllegalTransfer;
		return Step::Done;
	}
	if (!(r.cmd & kCmdBulk))
		return transfer_linked(i, f, budget);
	const uint64_t host = in ? r.src : r.dest, dev = in ? r.dest : r.src;
	if (f.done == 0 && !in_window(i, dev, r.len)) {
		f.status = kOutsideWindow;
		return Step::Done;
	}
	const uint64_t n = affordable(host + f.done, r.len - f.done, !in, budget);
	if (n == 0 && f.done < r.len)
		return Step::Yield;
	f.status = move(i, in, host + f.done, dev + f.done, n);
	if (gone(i, gen))
		return Step::Gone;
	f.done += n;
	return f.status || f.done == r.len ? Step::Done : Step::Yield;
}

// Linked list (docs/dma-bridge.md): the host address field points at the
// first descriptor; len bounds how many are followed.
DmaBridge::Step DmaBridge::transfer_linked(unsigned i, InFlight &f, uint64_t &budget)
{
	const Request r = request_of(f.raw);
	const uint64_t gen = gen_[i];
	const bool in = (r.cmd & kCmdTransferMask) == 1;
	if (f.descs == 0 && !f.have_desc && !f.next_desc)
		f.next_desc = in ? r.src : r.dest;
	for (;;) {
		if (!f.have_desc) {
			if (!f.next_desc)
				return Step::Done;
			if (f.descs >= r.len || f.descs >= kMaxLinked) {
				f.status = kBadList;
				return Step::Done;
			}
			LinkedDescriptor d;
			if (affordable(f.next_desc, sizeof(d), false, budget) < sizeof(d))
				return Step::Yield;
			const DmaStatus st = host_.dma_read(f.next_desc, &d, sizeof(d));
			if (gone(i, gen))
				return Step::Gone;
			if (st != DmaStatus::Ok) {
				f.status = kHostDmaFault;
				return Step::Done;
			}
			f.descs++;
			f.have_desc = true;
			f.desc_host = d.host;
			f.desc_dev = d.dev;
			f.desc_len = d.len;
			f.done = 0;
			f.next_desc = d.next;
			if (!in_window(i, d.dev, d.len)) {
				f.status = kOutsideWindow;
				return Step::Done;
			}
		}
		const uint64_t n = affordable(f.desc_host + f.done, f.desc_len - f.done, !in, budget);
		if (n == 0 && f.done < f.desc_len)
			return Step::Yield;
		f.status = move(i, in, f.desc_host + f.done, f.desc_dev + f.done, n);
		if (gone(i, gen))
			return Step::Gone;
		f.done += n;
		if (f.status)
			return Step::Done;
		if (f.done == f.desc_len)
			f.have_desc = false;
	}
}

namespace {

// Locates a DBC register; false for anything outside the 16 register sets.
bool decode(uint32_t offset, unsigned &dbc, uint32_t &reg)
{
	if (offset < kDbcBase || offset >= kDbcBase + kNumDbc * kDbcStride)
		return false;
	dbc = (offset - kDbcBase) / kDbcStride;
	reg = (offset - kDbcBase) % kDbcStride;
	return reg <= DBC_RSPTP && (reg & 3u) == 0;
}

} // namespace

uint64_t DmaBridge::read(uint32_t offset, unsigned size)
{
	unsigned i;
	uint32_t reg;
	if (size != 4 || !decode(offset, i, reg))
		return 0; // reserved space reads as zero
	const std::lock_guard<std::mutex> hold(mu_);
	const DbcRegs &d = dbc_[i];
	switch (reg) {
	case DBC_REQHP:
		return d.req_head;
	case DBC_REQTP:
		return d.req_tail;
	case DBC_RSPHP:
		return d.rsp_head;
	default:
		return d.rsp_tail;
	}
}

void DmaBridge::write(uint32_t offset, uint64_t value, unsigned size)
{
	unsigned i;
	uint32_t reg;
	char msg[96];
	if (size != 4 || !decode(offset, i, reg)) {
		std::snprintf(msg, sizeof(msg), "BAR2: %u-byte write 0x%llx at reserved 0x%x ignored", size,
			      static_cast<unsigned long long>(value), offset);
		host_.guest_error(msg);
		return;
	}
	const std::lock_guard<std::mutex> hold(mu_);
	DbcRegs &d = dbc_[i];
	switch (reg) {
	case DBC_REQTP:
	case DBC_RSPHP: {
		// Writing the tail is the doorbell; the head frees response slots.
		if (active_[i] && value >= queues_[i].n) {
			std::snprintf(msg, sizeof(msg), "DBC%u: %s %llu beyond the %u-element FIFO ignored", i,
				      reg == DBC_REQTP ? "REQTP" : "RSPHP", static_cast<unsigned long long>(value),
				      queues_[i].n);
			host_.guest_error(msg);
			return;
		}
		// Freeing response slots matters to the engine only when a full
		// FIFO held it back; anything else would wake QEMU's event loop
		// for nothing once per completion.
		const bool was_full = active_[i] && (d.rsp_tail + 1) % queues_[i].n == d.rsp_head;
		(reg == DBC_REQTP ? d.req_tail : d.rsp_head) = static_cast<uint32_t>(value);
		if (active_[i] && reg == DBC_REQTP && !doorbell_at_[i])
			doorbell_at_[i] = std::max<uint64_t>(host_.now_ns(), 1);
		if (active_[i] && (reg == DBC_REQTP || was_full)) {
			pending_.fetch_or(1u << i);
			host_.kick();
		}
		return;
	}
	default:
		std::snprintf(msg, sizeof(msg), "DBC%u: host write to device-owned %s ignored", i,
			      reg == DBC_REQHP ? "REQHP" : "RSPTP");
		host_.guest_error(msg);
		return;
	}
}

} // namespace aic100
