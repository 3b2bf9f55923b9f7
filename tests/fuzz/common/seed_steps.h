// SPDX-License-Identifier: GPL-2.0-or-later
// What a driver does on the card, step by step, for both seed generators
// (tests/fuzz/core and tests/fuzz/qemu): NNC requests, DMA Bridge requests,
// the SBL's images and the host's answers to Sahara and time sync, and the
// seeds both make. A step runs on a generator's Script, which records it in
// that generator's input format; a Script has
//   ready_handshake(), control_up(), start(ch), queue_dl(ch, len, n),
//   send(ch, msg, piece), pop(ch), put(addr, bytes), get(addr, n),
//   nnc(transactions), next_nnc_seq(), rings(), dbc_write(dbc, reg, value),
//   dbc_read(dbc, reg), settle() (the card runs what is queued), and the
//   host addresses kFifo (the DBC FIFOs) and kData (their data).
#pragma once

#include <algorithm>
#include <array>
#include <cstring>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "aic100/dbc.h"
#include "aic100/firmware.h"
#include "aic100/nnc.h"
#include "aic100/ras_wire.h"
#include "aic100/regs.h"
#include "aic100/sahara_wire.h"
#include "aic100/sbl.h"
#include "aic100/ssr_wire.h"
#include "aic100/telemetry_wire.h"
#include "host_rings.h"
#include "nnc_wire.h"
#include "packet_bytes.h"
#include "workloads.h"

namespace aic100::seed_steps {

using test::as;
using test::NncTrans;
using test::passthrough;
using test::raw;
using test::tiny_elf;
using test::word;
using test::words;

// ---- NNC ------------------------------------------------------------------------
// The DBC FIFOs every activation asks for: kFifoN requests of 64 bytes and
// their responses in one page-aligned buffer.
constexpr uint32_t kFifoN = 16, kFifoBuf = (68 * kFifoN + 4095) & ~4095u;

// The answer `r` as T; a failure unless the card accepted `what`.
template <typename T> T accepted(const std::vector<uint8_t> &r, const std::string &what)
{
	const T t = as<T>(r);
	if (r.size() < sizeof(T) || t.status != nnc::cmd::kOk)
		fail(what + " refused");
	return t;
}

// DMA_XFER_TO_DEV of `data`, put in the host's scratch space.
template <typename S> NncTrans dma(S &s, uint32_t tag, const std::vector<uint8_t> &data)
{
	const uint64_t at = s.rings().scratch(data.size());
	s.put(at, data);
	return test::dma_xfer(tag, at, data.size());
}

// QAIC_CONTROL started with `buffers` reply buffers, and the driver's STATUS
// exchange.
template <typename S> void control_up(S &s, unsigned buffers)
{
	s.start(chan::kControlUl);
	s.start(chan::kControlDl);
	s.queue_dl(chan::kControlDl, 4096, buffers);
	s.send(chan::kControlUl, test::nnc_message({test::status_to_dev()}, s.next_nnc_seq(), 0));
	if (s.pop(chan::kControlDl).size() != nnc::kHeaderSize + sizeof(nnc::StatusFromDev))
		fail("no STATUS answer");
}

// LOAD_ELF with the image in one DMA transfer; the card's answer.
template <typename S> std::vector<uint8_t> load_elf(S &s, const std::vector<uint8_t> &elf)
{
	nnc::cmd::LoadElfReq lr{};
	lr.type = nnc::cmd::kLoadElf;
	lr.tag = nnc::cmd::kTagElf;
	lr.data_length = elf.size();
	return s.nnc({passthrough(raw(lr)), dma(s, nnc::cmd::kTagElf, elf)});
}

// ACTIVATE with the DBC FIFOs at S::kFifo; the card's answer.
template <typename S>
std::vector<uint8_t> activate(S &s, uint32_t elf_id, uint32_t constants_id, uint32_t initial_state)
{
	nnc::cmd::ActivateReq a{};
	a.type = nnc::cmd::kActivate;
	a.constants_id = constants_id;
	a.elf_id = elf_id;
	a.resource_res_id = -1;
	a.vc_res_id = -1;
	a.initial_state = initial_state;
	return s.nnc({passthrough(raw(a)), test::activate_to_dev(S::kFifo, kFifoN, kFifoBuf)});
}

struct Activated {
	unsigned dbc;
	uint64_t ddr_base;
	uint32_t act_id;
};

// LOAD_ELF and ACTIVATE (running), both accepted.
template <typename S> Activated load_and_activate(S &s, const std::vector<uint8_t> &elf)
{
	const auto lresp = accepted<nnc::cmd::LoadElfResp>(load_elf(s, elf), "LOAD_ELF");
	const auto aresp = accepted<nnc::cmd::ActivateResp>(activate(s, lresp.elf_id, 0, 1), "ACTIVATE");
	return {aresp.virtual_channel_id, aresp.ddr_base, aresp.activation_id};
}

template <typename S> void resource_info(S &s)
{
	using namespace nnc::cmd;
	if (word(s.nnc({passthrough(raw(ResourceInfoReq{kResourceInfo, 0, -1, 0}))}), 0) != kResourceInfoResp)
		fail("RESOURCE_INFO");
}

// ---- DMA Bridge requests (docs/dma-bridge.md) ----------------------------------------
inline uint32_t sem_cmd(sem::Op op, unsigned idx, unsigned val, bool presync)
{
	return dbc::kSemEnable | (uint32_t{static_cast<uint8_t>(op)} << 24) | (presync ? dbc::kSemPresync : 0) |
	       (idx << 16) | val;
}

// Requests in the request FIFO from its first slot on.
template <typename S, size_t N> void put_requests(S &s, const std::array<dbc::Request, N> &reqs)
{
	for (size_t i = 0; i < N; i++)
		s.put(S::kFifo + i * sizeof(dbc::Request), &reqs[i], sizeof(dbc::Request));
}

// 512 bytes to the card's DDR at `ddr` and back to kData + 0x1000, the
// second request waiting for the first's semaphore and ringing a doorbell.
inline std::array<dbc::Request, 2> bulk_round_trip(uint64_t data, uint64_t ddr)
{
	dbc::Request in{};
	in.req_id = 1;
	in.cmd = dbc::kCmdResponse | dbc::kCmdBulk | 1; // to the device
	in.src = data;
	in.dest = ddr;
	in.len = 512;
	in.sem[0] = sem_cmd(sem::Op::Inc, 0, 1, false);
	dbc::Request out{};
	out.req_id = 2;
	out.cmd = dbc::kCmdForceMsi | dbc::kCmdResponse | dbc::kCmdBulk | 2; // to the host
	out.src = ddr;
	out.dest = data + 0x1000;
	out.len = 512;
	out.sem[0] = sem_cmd(sem::Op::WaitGt0, 0, 0, true);
	out.sem[1] = sem_cmd(sem::Op::Dec, 0, 1, false);
	out.db_addr = ddr + 0x800;
	out.db_len = 0x80; // a doorbell of 4 bytes
	out.db_data = 0xD00DFEED;
	return {in, out};
}

// ---- the SBL's boot ----------------------------------------------------------------
// sbl.bin, whose manifest asks for fw1 and fw2.
inline std::vector<uint8_t> sbl_image()
{
	return fw::build(fw::kSblImageId, "sbl", {1, 0, 0, 1}, words({2, 1, 2}, 12));
}

// The images the SBL fetches over Sahara: fw1 (qsm) and fw2 (nsp).
inline std::map<uint32_t, std::vector<uint8_t>> sbl_images()
{
	std::map<uint32_t, std::vector<uint8_t>> files;
	for (uint32_t id : {1u, 2u}) {
		std::vector<uint8_t> p(200 + 40 * id);
		for (size_t i = 0; i < p.size(); i++)
			p[i] = static_cast<uint8_t>(i * 13 + id);
		files[id] = fw::build(id, id == 1 ? "qsm" : "nsp", {1, 0, 0, 2}, p);
	}
	return files;
}

// The SBL's channels, in the order the host starts them.
inline constexpr std::array<unsigned, 6> kSblChannels = {chan::kLoggingUl, chan::kLoggingDl, chan::kTimesyncUl,
							 chan::kTimesyncDl, chan::kSaharaUl,  chan::kSaharaDl};

// The host's answer to the SBL's time sync request `p`; empty for none.
inline std::vector<uint8_t> timesync_answer(const std::vector<uint8_t> &p)
{
	if (p.size() != 8 || p[5] != 0)
		return {};
	std::vector<uint8_t> m(24, 0);
	std::memcpy(m.data(), p.data(), 8);
	m[5] = 1;
	const uint64_t sec = 1'700'000'000;
	std::memcpy(m.data() + 8, &sec, 8);
	return m;
}

// The host's answer to the Sahara packet `p`: hello, an image's bytes,
// done; empty for none.
inline std::vector<uint8_t> sahara_answer(const std::vector<uint8_t> &p,
					  const std::map<uint32_t, std::vector<uint8_t>> &files)
{
	const uint32_t cmd = word(p, 0);
	if (cmd == sahara::kHello)
		return words({sahara::kHelloResp, 0x30, 2, 2, 0, word(p, 20)}, 0x30);
	if (cmd == sahara::kReadData) {
		const auto &f = files.at(word(p, 8));
		const uint32_t off = word(p, 12), len = word(p, 16);
		if (off + len > f.size())
			fail("Sahara read beyond an image");
		return std::vector<uint8_t>(f.begin() + off, f.begin() + off + len);
	}
	if (cmd == sahara::kEndOfImage && word(p, 12) == 0)
		return words({sahara::kDone, 8}, 8);
	return {};
}

// ---- seeds both generators make ------------------------------------------------------
template <typename S> void amss_loopback(S &s)
{
	s.ready_handshake();
	s.start(chan::kLoopbackUl);
	s.start(chan::kLoopbackDl);
	s.queue_dl(chan::kLoopbackDl, 64, 2);
	const std::string text = "hello, card: echo this";
	s.send(chan::kLoopbackUl, std::vector<uint8_t>(text.begin(), text.end()), 8);
	const auto back = s.pop(chan::kLoopbackDl);
	if (std::string(back.begin(), back.end()) != text)
		fail("loopback did not echo");
}

template <typename S> void amss_dbc_bulk(S &s)
{
	s.ready_handshake();
	s.control_up();
	const Activated a = load_and_activate(s, tiny_elf(256));
	std::vector<uint8_t> data(512);
	for (size_t i = 0; i < data.size(); i++)
		data[i] = static_cast<uint8_t>(i * 7);
	s.put(S::kData, data);
	put_requests(s, bulk_round_trip(S::kData, a.ddr_base));
	s.dbc_write(a.dbc, regs::DBC_REQTP, 2);
	s.settle();
	if (s.get(S::kData + 0x1000, 512) != data)
		fail("bulk requests did not move the data");
	s.dbc_write(a.dbc, regs::DBC_RSPHP, 2); // responses read
	s.dbc_read(a.dbc, regs::DBC_RSPTP);
}

// A linked-list request of two descriptors to the card.
template <typename S> void amss_dbc_linked(S &s)
{
	s.ready_handshake();
	s.control_up();
	const Activated a = load_and_activate(s, tiny_elf(128));
	const dbc::LinkedDescriptor d[2] = {{S::kData + 0x2000, a.ddr_base, 256, 0, S::kData + 32},
					    {S::kData + 0x3000, a.ddr_base + 4096, 128, 0, 0}};
	s.put(S::kData, d, sizeof(d));
	dbc::Request r{};
	r.req_id = 9;
	r.cmd = dbc::kCmdResponse | 1; // linked list, to the device
	r.src = S::kData;
	r.len = 2; // descriptors at most
	put_requests(s, std::array<dbc::Request, 1>{r});
	s.dbc_write(a.dbc, regs::DBC_REQTP, 1);
	s.settle();
}

// An example workload (tools/workloads; the copy one unless named)
// activated and fed one input: the NSPs run its program. Its output comes
// back after its input in kData (the copy workload's at kData + 0x2000).
template <typename S> Activated feed_workload(S &s, const char *name = "copy")
{
	s.ready_handshake();
	s.control_up();
	const auto *e = workloads::find(name);
	std::string err;
	const auto elf = e ? workloads::build(*e, err) : std::nullopt;
	if (!elf)
		fail(std::string(name) + " workload: " + err);
	const Activated a = load_and_activate(s, *elf);
	const auto &L = e->layout;
	s.put(S::kData, e->make_input(1));
	dbc::Request in{};
	in.req_id = 1;
	in.cmd = dbc::kCmdBulk | 1; // to the device
	in.src = S::kData;
	in.dest = a.ddr_base + L.input.offset;
	in.len = static_cast<uint32_t>(L.input.size);
	in.sem[0] = sem_cmd(sem::Op::WaitEq, L.sem_in, 0, true);
	in.sem[1] = sem_cmd(sem::Op::Inc, L.sem_in, 1, false);
	dbc::Request out{};
	out.req_id = 1;
	out.cmd = dbc::kCmdResponse | dbc::kCmdBulk | 2; // to the host
	out.src = a.ddr_base + L.output.offset;
	out.dest = S::kData + std::max<uint64_t>(0x2000, (L.input.size + 0xFFF) & ~uint64_t(0xFFF));
	out.len = static_cast<uint32_t>(L.output.size);
	out.sem[0] = sem_cmd(sem::Op::WaitGt0, L.sem_out, 0, true);
	out.sem[1] = sem_cmd(sem::Op::Dec, L.sem_out, 1, false);
	put_requests(s, std::array<dbc::Request, 2>{in, out});
	s.dbc_write(a.dbc, regs::DBC_REQTP, 2);
	s.settle();
	return a;
}

// SSR, RAS and telemetry started, with `n` receive buffers each.
template <typename S> void health_channels_up(S &s, unsigned ssr_n, unsigned ras_n, unsigned telemetry_n)
{
	for (unsigned ch : {ssr::kUl, ssr::kDl, ras::kUl, ras::kDl, telemetry::kUl, telemetry::kDl})
		s.start(ch);
	s.queue_dl(ssr::kDl, 4096, ssr_n);
	s.queue_dl(ras::kDl, 512, ras_n);
	s.queue_dl(telemetry::kDl, 512, telemetry_n);
}

} // namespace aic100::seed_steps
