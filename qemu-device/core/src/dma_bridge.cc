// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/dma_bridge.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace aic100 {

using namespace regs;

namespace {

// Request element fields (docs/dma-bridge.md).
constexpr uint8_t kCmdForceMsi = 1u << 7;
constexpr uint8_t kCmdResponse = 1u << 4;
constexpr uint8_t kCmdTransferMask = 3;
constexpr uint8_t kCmdBulk = 1u << 3;
constexpr uint8_t kDbEnable = 1u << 7;
constexpr uint32_t kSemEnable = 1u << 31;
constexpr uint32_t kSemPresync = 1u << 22;

struct __attribute__((packed)) Request {
	uint16_t req_id;
	uint8_t seq_id;
	uint8_t cmd;
	uint32_t reserved0;
	uint64_t src;
	uint64_t dest;
	uint32_t len;
	uint32_t reserved1;
	uint64_t db_addr;
	uint8_t db_len;
	uint8_t reserved2[3];
	uint32_t db_data;
	uint32_t sem[4];
};
static_assert(sizeof(Request) == 64);

// One element of a linked-list transfer, in host memory.
struct __attribute__((packed)) LinkedDescriptor {
	uint64_t host; // host bus address
	uint64_t dev;  // device address
	uint32_t len;
	uint32_t reserved;
	uint64_t next; // host bus address of the next descriptor, 0 at the end
};
static_assert(sizeof(LinkedDescriptor) == 32);

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
	dbc_.fill(DbcRegs{});
	active_.fill(false);
	queues_.fill(Queues{});
	stats_.fill(Stats{});
	inflight_.fill(InFlight{});
	for (auto &g : gen_)
		g++;
	for (auto &s : sems_)
		s->reset();
	pending_ = 0;
}

void DmaBridge::activate(unsigned i, const Queues &q)
{
	dbc_.at(i) = DbcRegs{};
	queues_.at(i) = q;
	stats_.at(i) = Stats{};
	inflight_.at(i) = InFlight{};
	gen_.at(i)++;
	sems_.at(i)->reset();
	// The QSM refuses empty FIFOs; the engine divides by their size.
	active_.at(i) = q.n != 0;
}

void DmaBridge::deactivate(unsigned i)
{
	dbc_.at(i) = DbcRegs{};
	queues_.at(i) = Queues{};
	inflight_.at(i) = InFlight{};
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
	if (to_device) {
		if (host_.dma_read(host, p, len) != DmaStatus::Ok)
			return kHostDmaFault;
		stats_[i].bytes_in += len;
	} else {
		if (host_.dma_write(host, p, len) != DmaStatus::Ok)
			return kHostDmaFault;
		stats_[i].bytes_out += len;
	}
	return kOk;
}

bool DmaBridge::in_window(unsigned i, uint64_t addr, uint64_t len) const
{
	const Queues &q = queues_[i];
	return addr >= q.lo && addr <= q.hi && len <= q.hi - addr;
}

void DmaBridge::raise(unsigned i)
{
	// DBC i signals vector i + 1 when the host enabled enough vectors, else
	// everything shares vector 0 with MHI.
	const unsigned enabled = host_.msi_vectors_enabled();
	if (enabled)
		host_.raise_msi(enabled > i + 1 ? i + 1 : 0);
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
	DbcRegs &d = dbc_[i];
	const uint64_t gen = gen_[i];
	InFlight &f = inflight_[i];
	while (!gone(i, gen) && (f.valid || d.req_head != d.req_tail)) {
		if (budget == 0)
			return true;
		const Queues q = queues_[i];
		// A full response FIFO holds everything back until the host reads.
		if ((d.rsp_tail + 1) % q.n == d.rsp_head)
			return false;
		if (!f.valid) {
			uint8_t raw[sizeof(Request)];
			const DmaStatus st = host_.dma_read(q.req + uint64_t{d.req_head} * sizeof(Request), raw,
							    sizeof(raw));
			if (gone(i, gen))
				return false;
			if (st != DmaStatus::Ok) {
				char m[80];
				std::snprintf(m, sizeof(m), "DBC%u: request FIFO unreadable; channel stopped", i);
				host_.guest_error(m);
				active_[i] = false;
				return false;
			}
			f = InFlight{};
			std::memcpy(f.raw, raw, sizeof(raw));
			f.valid = true;
			budget -= std::min<uint64_t>(budget, sizeof(Request));
		}
		switch (advance(i, f, budget)) {
		case Step::Blocked: // a presync wait; retried when a semaphore moves
		case Step::Gone:
			return false;
		case Step::Yield:
			return true;
		case Step::Done:
			break;
		}
		finish(i, f);
	}
	return false;
}

// The request is complete: its response, the head pointer and the interrupt.
void DmaBridge::finish(unsigned i, InFlight &f)
{
	DbcRegs &d = dbc_[i];
	const uint64_t gen = gen_[i];
	const Queues q = queues_[i];
	Request r;
	std::memcpy(&r, f.raw, sizeof(r));
	const uint16_t status = f.status;
	f = InFlight{};
	stats_[i].requests++;
	if (status != kOk) {
		stats_[i].errors++;
		char m[80];
		std::snprintf(m, sizeof(m), "DBC%u: request %u failed with status %u", i, d.req_head, status);
		host_.guest_error(m);
	}
	bool msi = r.cmd & kCmdForceMsi;
	if (r.cmd & kCmdResponse) {
		const uint16_t rsp[2] = {r.req_id, status};
		const DmaStatus st = host_.dma_write(q.rsp + uint64_t{d.rsp_tail} * 4, rsp, sizeof(rsp));
		if (gone(i, gen))
			return;
		if (st == DmaStatus::Ok) {
			// Only the empty-to-non-empty edge interrupts.
			msi |= d.rsp_head == d.rsp_tail;
			d.rsp_tail = (d.rsp_tail + 1) % q.n;
			stats_[i].responses++;
		} else {
			host_.guest_error("DBC: response FIFO not writable");
		}
	}
	d.req_head = (d.req_head + 1) % q.n;
	if (msi)
		raise(i);
}

DmaBridge::Step DmaBridge::advance(unsigned i, InFlight &f, uint64_t &budget)
{
	Request r;
	std::memcpy(&r, f.raw, sizeof(r));
	Semaphores &sems = *sems_[i];
	auto op_of = [](uint32_t s) { return static_cast<Semaphores::Op>((s >> 24) & 7); };
	auto idx_of = [](uint32_t s) { return (s >> 16) & 0x1F; };
	auto val_of = [](uint32_t s) { return static_cast<uint16_t>(s & 0xFFF); };

	// Presync: at most one; a wait holds the request, other commands run
	// before the transfer.
	if (!f.presync_done) {
		int pre = -1;
		for (int k = 0; k < 4 && !f.status; k++) {
			if ((r.sem[k] & kSemEnable) && (r.sem[k] & kSemPresync)) {
				if (pre >= 0)
					f.status = kTwoPresyncs;
				pre = k;
			}
		}
		if (pre >= 0 && !f.status) {
			const uint32_t s = r.sem[pre];
			const auto op = op_of(s);
			if (op > Semaphores::Op::WaitGt0) {
				f.status = kBadSemaphore;
			} else if (op >= Semaphores::Op::WaitEq) {
				if (!sems.satisfied(idx_of(s), op, val_of(s)))
					return Step::Blocked;
			} else {
				sems.apply(idx_of(s), op, val_of(s));
			}
		}
		f.presync_done = true;
		// A request whose presync is malformed ends at once, before any
		// transfer: no postsync, no doorbell.
		if (f.status)
			return Step::Done;
	}

	if (!f.transfer_done) {
		const Step st = transfer(i, f, budget);
		if (st != Step::Done)
			return st;
		f.transfer_done = true;
	}

	// Postsync semaphores, then the doorbell, even after a failed transfer:
	// the workload must not wait forever for an input that never comes.
	uint16_t status = f.status;
	for (int k = 0; k < 4; k++) {
		const uint32_t s = r.sem[k];
		if (!(s & kSemEnable) || (s & kSemPresync))
			continue;
		const auto op = op_of(s);
		if (op == Semaphores::Op::Nop)
			continue;
		if (op >= Semaphores::Op::WaitEq || !sems.apply(idx_of(s), op, val_of(s)))
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
	f.status = status;
	return Step::Done;
}

// Moves the request's data, at most `budget` bytes per call; Yield when the
// budget ran out first. DMA fences (sem bits 29/30) need no waiting here:
// each transfer is complete before the next request starts.
DmaBridge::Step DmaBridge::transfer(unsigned i, InFlight &f, uint64_t &budget)
{
	Request r;
	std::memcpy(&r, f.raw, sizeof(r));
	const uint64_t gen = gen_[i];
	const unsigned type = r.cmd & kCmdTransferMask;
	const bool in = type == 1;
	if (type == 0)
		return Step::Done;
	if (type == 3) {
		f.status = kIllegalTransfer;
		return Step::Done;
	}
	if (r.cmd & kCmdBulk) {
		const uint64_t host = in ? r.src : r.dest, dev = in ? r.dest : r.src;
		if (f.done == 0 && !in_window(i, dev, r.len)) {
			f.status = kOutsideWindow;
			return Step::Done;
		}
		const uint64_t n = std::min<uint64_t>(r.len - f.done, budget);
		f.status = move(i, in, host + f.done, dev + f.done, n);
		if (gone(i, gen))
			return Step::Gone;
		f.done += n;
		budget -= n;
		return f.status || f.done == r.len ? Step::Done : Step::Yield;
	}

	// Linked list (docs/dma-bridge.md): the host address field points at the
	// first descriptor; len bounds how many are followed.
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
			if (budget == 0)
				return Step::Yield;
			LinkedDescriptor d;
			const DmaStatus st = host_.dma_read(f.next_desc, &d, sizeof(d));
			if (gone(i, gen))
				return Step::Gone;
			budget -= std::min<uint64_t>(budget, sizeof(d));
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
		if (budget == 0 && f.done < f.desc_len)
			return Step::Yield;
		const uint64_t n = std::min<uint64_t>(f.desc_len - f.done, budget);
		f.status = move(i, in, f.desc_host + f.done, f.desc_dev + f.done, n);
		if (gone(i, gen))
			return Step::Gone;
		f.done += n;
		budget -= n;
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
		(reg == DBC_REQTP ? d.req_tail : d.rsp_head) = static_cast<uint32_t>(value);
		if (active_[i]) {
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
