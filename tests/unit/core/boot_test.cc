// SPDX-License-Identifier: GPL-2.0-or-later
// Whole boot flows against the miniature MHI host: PBL/BHI, SBL with Sahara,
// boot log and time sync, AMSS with NNC STATUS and loopback; SYS_ERR, MHI
// RESET, SoC reset; and what the card does with broken firmware and
// malformed rings.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <thread>

#include "aic100/device.h"
#include "aic100/firmware.h"
#include "aic100/qsm.h"
#include "aic100/sahara.h"
#include "boot_images.h"
#include "fake_card.h"
#include "packet_bytes.h"

namespace aic100::test {
namespace {

using regs::ExecEnv;

constexpr uint8_t kEeSbl = 1, kEeAmss = 2, kStateM0 = 2, kStateSysErr = 0xFF;

class BootTest : public CardTest<> {
protected:
	// ---- the card's states, as the fixtures below start from them ----

	// A card in PBL, waiting for the SBL through BHI.
	void card_at_pbl() { new_card({}); }
	// A card that starts in AMSS (boot_amss), before the host's handshake.
	void card_in_amss()
	{
		DeviceConfig cfg;
		cfg.boot_amss = true;
		new_card(cfg);
	}
	// The SBL in, through BHI, and the host's handshake with it (READY to
	// M0); no channel started.
	void sbl_at_m0()
	{
		card_at_pbl();
		ASSERT_EQ(mhi->bhi_load(sbl), 2u) << "BHI status success";
		mhi->ready_handshake();
	}

	// ---- what the host saw ----

	bool entered_amss() const { return std::find(mhi->ees.begin(), mhi->ees.end(), kEeAmss) != mhi->ees.end(); }
	bool traced(const std::string &what) const { return has(host.traces, what); }
	bool has_error(const std::string &what) const { return has(host.errors, what); }

	// ---- the host's boot steps, as qaic takes them ----

	// PBL → SBL: BHI load and the SBL's channels started as qaic does.
	void boot_to_sbl(unsigned log_buffers = 16)
	{
		ASSERT_EQ(mhi->bhi_load(sbl), 2u) << "BHI status success";
		EXPECT_EQ(mhi->bhi(regs::BHI_EXECENV), kEeSbl);
		sbl_handshake(log_buffers);
	}
	// PBL → AMSS: the whole boot, every client of the SBL's answering.
	void boot(unsigned log_buffers = 16)
	{
		ASSERT_NO_FATAL_FAILURE(boot_to_sbl(log_buffers));
		run_sbl();
	}
	// The host's side once the card shows READY in the SBL.
	void sbl_handshake(unsigned log_buffers = 16)
	{
		mhi->ready_handshake();
		ASSERT_EQ(mhi->states, std::vector<uint8_t>{kStateM0});
		ASSERT_EQ(mhi->ees, std::vector<uint8_t>{kEeSbl});
		ASSERT_NO_FATAL_FAILURE(start_logging(log_buffers));
		ASSERT_NO_FATAL_FAILURE(start_timesync());
		start_sahara();
	}
	// The host's SBL-side clients, each starting its channels.
	void start_logging(unsigned buffers = 16)
	{
		ASSERT_TRUE(mhi->start(12));
		ASSERT_TRUE(mhi->start(13));
		mhi->queue_dl(13, 512, buffers);
	}
	void start_timesync()
	{
		ASSERT_TRUE(mhi->start(20));
		ASSERT_TRUE(mhi->start(21));
		mhi->queue_dl(21, 8);
	}
	void start_sahara()
	{
		ASSERT_TRUE(mhi->start(2));
		ASSERT_TRUE(mhi->start(3));
		mhi->queue_dl(3, 0xFFFF);
	}
	// The Sahara client alone answering the SBL, long enough to fetch
	// every image.
	void fetch_images()
	{
		for (int i = 0; i < 20; i++)
			serve_sahara();
	}
	// Every client of the SBL's answering until the card enters AMSS.
	void run_sbl()
	{
		for (int i = 0; i < 200 && !entered_amss(); i++) {
			serve_timesync();
			serve_sahara();
			log_lines = bootlog();
			all_log.insert(all_log.end(), log_lines.begin(), log_lines.end());
			mhi->settle();
		}
	}
	// The host resets MHI (as after SYS_ERR) and forgets the states and
	// execution environments the card reported so far.
	void host_resets_mhi()
	{
		mhi->w(regs::MHICTRL, regs::MHICTRL_RESET);
		mhi->settle();
		mhi->states.clear();
		mhi->ees.clear();
	}
	void sys_err()
	{
		ASSERT_EQ(dev->inject("syserr"), "");
		mhi->settle();
	}
	void soc_reset()
	{
		mhi->w(regs::MHI_SOC_RESET_REQ, 1);
		mhi->settle();
	}
	// AMSS up, then failing: the host resets MHI and finds the SBL READY.
	void boot_then_fail_amss()
	{
		ASSERT_NO_FATAL_FAILURE(boot());
		ASSERT_NO_FATAL_FAILURE(sys_err());
		host_resets_mhi();
		sbl_handshake();
	}
	// A SoC reset and the host's MHI reset, then the whole boot again,
	// its boot log alone in all_log.
	void reboot()
	{
		soc_reset();
		host_resets_mhi();
		all_log.clear();
		boot();
	}

	// ---- the host's Sahara client ----

	// drivers/accel/qaic/sahara.c's behaviour, answering whatever the card
	// sent on channel 3; with takes_dumps, it takes a RAM dump as upstream
	// 7.3's does (see dump_data()).
	void serve_sahara()
	{
		for (auto p = mhi->pop(3); !p.empty(); p = mhi->pop(3)) {
			if (dumping) {
				dump_data(p);
				continue;
			}
			const uint32_t cmd = word(p, 0);
			if (cmd == sahara::kHello && word(p, 20) == sahara::kModeMemoryDebug && !takes_dumps) {
				dump_hellos_ignored++; // upstream 6.12: "Unsupported hello packet - mode 2"
			} else if (cmd == sahara::kHello) {
				mhi->send(2, words({sahara::kHelloResp, 0x30, 2, 2, 0, word(p, 20)}, 0x30));
			} else if (cmd == sahara::kMemDebug64) {
				dumping = true;
				dump_entries.clear();
				dump_files.clear();
				dump_table_read = false;
				dump_read(dword(p, 8), dword(p, 16));
			} else if (cmd == sahara::kReadData) {
				read_data(word(p, 8), word(p, 12), word(p, 16));
			} else if (cmd == sahara::kEndOfImage) {
				end_status.push_back(word(p, 12));
				if (word(p, 12) == 0)
					mhi->send(2, words({sahara::kDone, 8}, 8));
			}
		}
	}
	// READ_DATA: the piece of the image asked for, in TREs of at most
	// 0xFFFF bytes, or RESET for an image or a piece the host has not.
	void read_data(uint32_t id, uint32_t off, uint32_t len)
	{
		read_requests.push_back({off, len});
		auto it = files.find(id);
		if (it == files.end() || len > sahara::kMaxReadLength || off + len > it->second.size()) {
			mhi->send(2, words({sahara::kReset, 8}, 8));
			return;
		}
		if (data_past_the_ring) {
			// As Mhi delivers each TD: the file's bytes, never copied.
			const std::span<const uint8_t> file(it->second);
			for (uint32_t o = 0; o < len; o += 0xFFFF)
				dev->boot().ul_message(2, file.subspan(off + o, std::min<uint32_t>(0xFFFF, len - o)));
			mhi->settle(); // the card's next request, for this serve_sahara()
			return;
		}
		std::vector<std::vector<uint8_t>> tres;
		for (uint32_t o = 0; o < len; o += 0xFFFF) {
			const uint32_t n = std::min<uint32_t>(0xFFFF, len - o);
			tres.emplace_back(it->second.begin() + off + o, it->second.begin() + off + o + n);
		}
		mhi->send(2, tres);
	}
	void dump_read(uint64_t addr, uint64_t len)
	{
		dump_requested = len;
		std::vector<uint8_t> r = words({sahara::kMemRead64, sahara::kMemRead64Length}, sahara::kMemRead64Length);
		std::memcpy(r.data() + 8, &addr, 8);
		std::memcpy(r.data() + 16, &len, 8);
		mhi->send(2, r);
	}
	// The next read of the current region, in upstream's reads of at most
	// 0xfff0 bytes (8 instead of 16, which would look like END_OF_IMAGE).
	void dump_next()
	{
		const auto &e = dump_entries[dump_index];
		uint64_t n = std::min<uint64_t>(e.len - dump_off, 0xFFF0);
		if (n == 16)
			n = 8;
		dump_read(e.addr + dump_off, n);
	}
	void dump_end()
	{
		dumping = false;
		mhi->send(2, words({sahara::kReset, 8}, 8));
	}
	void dump_data(const std::vector<uint8_t> &p)
	{
		if (p.size() != dump_requested) {
			if (p.size() == 16 && word(p, 0) == sahara::kEndOfImage)
				dump_refusals.push_back(word(p, 12));
			return dump_end();
		}
		if (!dump_table_read)
			return dump_table(p);
		auto &f = dump_files[dump_entries[dump_index].file];
		f.insert(f.end(), p.begin(), p.end());
		dump_off += p.size();
		if (dump_off >= dump_entries[dump_index].len) {
			dump_off = 0;
			if (++dump_index == dump_entries.size()) {
				dumps_taken++;
				return dump_end();
			}
		}
		dump_next();
	}
	void dump_table(const std::vector<uint8_t> &p)
	{
		dump_table_read = true;
		for (size_t off = 0; off + 64 <= p.size(); off += 64)
			dump_entries.push_back({dword(p, off + 8), dword(p, off + 16),
						std::string(reinterpret_cast<const char *>(p.data() + off + 24)),
						std::string(reinterpret_cast<const char *>(p.data() + off + 44))});
		dump_index = dump_off = 0;
		if (dump_entries.empty())
			return dump_end();
		dump_next();
	}
	std::string dump_file(const std::string &name)
	{
		const auto &f = dump_files[name];
		return std::string(f.begin(), f.end());
	}

	// ---- the host's time-sync and logging clients ----

	void serve_timesync()
	{
		for (auto p = mhi->pop(21); !p.empty(); p = mhi->pop(21)) {
			if (p.size() == 8 && p[5] == 0) {
				// Upstream's client posts its buffer again before it answers.
				if (ts_repost_by_hand)
					mhi->queue_dl(21, 8);
				std::vector<uint8_t> m(24, 0);
				std::memcpy(m.data(), p.data(), 8);
				m[5] = 1;
				const uint64_t sec = 1'700'000'000, usec = 42;
				std::memcpy(m.data() + 8, &sec, 8);
				std::memcpy(m.data() + 16, &usec, 8);
				mhi->send(20, m);
			} else {
				ts_other.push_back(p);
			}
		}
	}
	std::vector<std::string> bootlog()
	{
		std::vector<std::string> lines;
		for (auto p = mhi->pop(13); !p.empty(); p = mhi->pop(13)) {
			EXPECT_EQ(p.back(), 0) << "boot log lines end in NUL";
			lines.emplace_back(reinterpret_cast<const char *>(p.data()));
		}
		return lines;
	}

	// ---- QAIC_CONTROL in AMSS ----

	// The STATUS message qaic sends when QAIC_CONTROL comes up.
	void send_status(uint32_t seq)
	{
		nnc::Header h{0, nnc::kMagic, seq, 40, 1, 0, 0xFFFFFFFF, 0};
		std::vector<uint8_t> hdr(sizeof(h));
		std::memcpy(hdr.data(), &h, sizeof(h));
		mhi->send(10, {hdr, words({nnc::kStatusToDev, 8}, 8)});
	}
	// The NNC STATUS exchange: the reply, or empty.
	std::vector<uint8_t> nnc_status(uint32_t seq)
	{
		mhi->queue_dl(11, 4096);
		send_status(seq);
		return mhi->pop(11);
	}
	void expect_status_reply(const std::vector<uint8_t> &r, uint32_t seq)
	{
		ASSERT_EQ(r.size(), 56u);
		EXPECT_EQ(word(r, 4), nnc::kMagic);
		EXPECT_EQ(word(r, 8), seq);
		EXPECT_EQ(word(r, 12), 56u);
		EXPECT_EQ(word(r, 16), 1u);
		EXPECT_EQ(word(r, 32), nnc::kStatusFromDev);
		EXPECT_EQ(word(r, 40), 5u) << "major 5, minor 0";
		EXPECT_EQ(word(r, 44), 0u) << "status 0";
	}
	// The host starts QAIC_CONTROL and the card answers its STATUS.
	void control_answers_status(uint32_t seq)
	{
		ASSERT_TRUE(mhi->start(10, 128));
		ASSERT_TRUE(mhi->start(11, 128));
		expect_status_reply(nnc_status(seq), seq);
	}
	void expect_dump_of_failure(unsigned failure);

	// `n` images as large as the format allows (64 MiB with the header),
	// fetched as the SBL's manifest lists them. The fake host's memory
	// keeps a map node per byte: their data goes to the card past the UL
	// ring (data_past_the_ring).
	void use_largest_images(unsigned n)
	{
		std::vector<uint32_t> ids;
		files.clear();
		for (uint32_t id = 1; id <= n; id++) {
			ids.push_back(id);
			files[id] = fw::build(id, "big", {1, 0, 0, static_cast<uint16_t>(id)},
					      payload(fw::kMaxRuntimeSize - fw::kHeaderSize, static_cast<uint8_t>(id)));
		}
		sbl = fw::build(0, "sbl", {1, 0, 0, 1}, manifest(ids));
		data_past_the_ring = true;
	}
	uint64_t payload_bytes() const
	{
		uint64_t n = 0;
		for (const auto &[id, f] : files)
			n += f.size() - fw::kHeaderSize;
		return n;
	}
	// What the card may hold beyond one copy of the images: its own
	// bookkeeping and a sanitizer's shadow (an eighth), far below a second
	// copy.
	static uint64_t one_copy_limit(uint64_t payload) { return payload + payload / 4; }

	std::vector<uint8_t> sbl = fw::build(0, "sbl", {1, 0, 0, 1}, manifest({1, 2}));
	std::map<uint32_t, std::vector<uint8_t>> files = {
		{1, fw::build(1, "qsm", {1, 0, 0, 2}, payload(3000, 1))},
		// One full 512 KiB read plus an 8-byte tail, which the card must
		// not ask for as an 8-byte read (it would look like RESET).
		{2, fw::build(2, "nsp", {1, 0, 0, 3}, payload(sahara::kMaxReadLength + 8, 2))},
	};
	bool data_past_the_ring = false; // see use_largest_images()
	std::vector<std::pair<uint32_t, uint32_t>> read_requests;
	std::vector<uint32_t> end_status;
	std::vector<std::vector<uint8_t>> ts_other;
	// With keep_buffers holding 21: serve_timesync() posts the buffer of a
	// time request again (upstream's work item does), not that of the ACK.
	bool ts_repost_by_hand = false;
	std::vector<std::string> log_lines, all_log;
	// The Sahara client's memory-debug side.
	struct DumpEntry {
		uint64_t addr, len;
		std::string description, file;
	};
	bool takes_dumps = true, dumping = false, dump_table_read = false;
	unsigned dump_hellos_ignored = 0, dumps_taken = 0;
	uint64_t dump_requested = 0, dump_off = 0;
	size_t dump_index = 0;
	std::vector<DumpEntry> dump_entries;
	std::map<std::string, std::vector<uint8_t>> dump_files;
	std::vector<uint32_t> dump_refusals;
};

// TEST_F for a test that starts from one of the states below. GoogleTest
// ties a suite to one fixture class, so a state's tests are registered as
// BootTest's (whose class they derive from): their names stay
// BootTest.<name>, as docs/ cite them.
#define BOOT_TEST(State, Name)                                                                                    \
	class State##_##Name##_Test : public State {                                                                  \
		void TestBody() override;                                                                             \
	};                                                                                                            \
	[[maybe_unused]] const ::testing::TestInfo *const State##_##Name##_info = ::testing::RegisterTest(          \
		"BootTest", #Name, nullptr, nullptr, __FILE__, __LINE__,                                              \
		[]() -> BootTest * { return new State##_##Name##_Test; });                                            \
	void State##_##Name##_Test::TestBody()

// A card in PBL.
class CardAtPbl : public BootTest {
protected:
	void SetUp() override { card_at_pbl(); }
};

// The SBL at M0 with no channel started yet.
class SblAtM0 : public BootTest {
protected:
	void SetUp() override { sbl_at_m0(); }
};

// The images in and the time-sync client's channels started, but the host
// never answering on them: the SBL waits for time sync.
class SblAwaitingTimesync : public BootTest {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(sbl_at_m0());
		ASSERT_NO_FATAL_FAILURE(start_logging());
		ASSERT_TRUE(mhi->start(20));
		ASSERT_TRUE(mhi->start(21)); // started, but the host never answers
		ASSERT_NO_FATAL_FAILURE(start_sahara());
		fetch_images();
	}
};

// The host's SBL-side clients start their channels one after another: the
// logging and Sahara ones are up and the images in; the time-sync one has
// not started.
class SblWithoutTimesyncClient : public BootTest {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(sbl_at_m0());
		ASSERT_NO_FATAL_FAILURE(start_logging());
		ASSERT_NO_FATAL_FAILURE(start_sahara());
		run_sbl();
	}
};

// The same with the logging client last: the Sahara and time-sync clients
// are up and the images in; the logging client has not started (upstream
// qaic registers it only after the card began to boot: docs/upstream-bugs.md).
class SblWithoutLogClient : public BootTest {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(sbl_at_m0());
		ASSERT_NO_FATAL_FAILURE(start_timesync());
		ASSERT_NO_FATAL_FAILURE(start_sahara());
		run_sbl();
	}
};

// The whole boot run through the SBL (which may have entered AMSS).
class BootedCard : public BootTest {
protected:
	void SetUp() override
	{
		card_at_pbl();
		boot();
	}
};

// The whole boot, with a logging client that gives no buffer back (it
// posted 31).
class SblKeepingLogBuffers : public BootTest {
protected:
	void SetUp() override
	{
		card_at_pbl();
		mhi->keep_buffers = {13};
		boot(31);
	}
};

// The whole boot, with a time-sync client that gives a buffer back only
// when it posts it again by hand (serve_timesync()).
class SblKeepingTimesyncBuffer : public BootTest {
protected:
	void SetUp() override
	{
		card_at_pbl();
		mhi->keep_buffers = {21};
		ts_repost_by_hand = true;
		boot();
	}
};

// AMSS up and failed, back in the SBL at M0 with its dump to offer, and a
// host that takes no dumps (upstream 6.12's Sahara client).
class AmssFailedHostIgnoresDumps : public BootTest {
protected:
	void SetUp() override
	{
		card_at_pbl();
		takes_dumps = false;
		ASSERT_NO_FATAL_FAILURE(boot_then_fail_amss());
	}
};

// A card straight in AMSS, before the host's handshake.
class AmssCard : public BootTest {
protected:
	void SetUp() override { card_in_amss(); }
};

// AMSS at M0, no channel started.
class AmssAtM0 : public BootTest {
protected:
	void SetUp() override
	{
		card_in_amss();
		mhi->ready_handshake();
	}
};

// AMSS at M0 with the loopback channels (0 and 1) started, no DL buffer
// posted.
class AmssLoopback : public BootTest {
protected:
	void SetUp() override
	{
		card_in_amss();
		online({0, 1});
	}
};

// AmssLoopback with DL buffers not given back and one DL buffer written
// into the ring without a doorbell; `older` is the write pointer that a
// doorbell for that buffer carries.
class LoopbackWithAnUnrungBuffer : public AmssLoopback {
protected:
	void SetUp() override
	{
		ASSERT_NO_FATAL_FAILURE(AmssLoopback::SetUp());
		mhi->requeue = false;
		mhi->queue_dl_unrung(1, 64, 1);
		older = mhi->ring_wp(1);
	}
	uint64_t older = 0;
};

// AMSS at M0 with QAIC_CONTROL (10 and 11, rings of 128) started, no DL
// buffer posted.
class AmssControl : public BootTest {
protected:
	void SetUp() override
	{
		card_in_amss();
		online({10, 11}, 128);
	}
};

BOOT_TEST(AmssCard, DirectAmssComesUpReadyAndAnswersNncStatus)
{
	EXPECT_EQ(mhi->r(regs::MHISTATUS), 0x101u) << "READY, state READY";
	EXPECT_EQ(mhi->bhi(regs::BHI_EXECENV), kEeAmss);
	mhi->ready_handshake();
	EXPECT_EQ(mhi->states, std::vector<uint8_t>{kStateM0});
	EXPECT_EQ(mhi->ees, std::vector<uint8_t>{kEeAmss});
	EXPECT_EQ(mhi->r(regs::MHISTATUS) >> 8, kStateM0);
	control_answers_status(7);
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

BOOT_TEST(CardAtPbl, FullBootLoadsEveryImageAndEntersAmss)
{
	EXPECT_EQ(mhi->r(regs::MHISTATUS) & 1, 0u) << "PBL is not READY";
	EXPECT_EQ(mhi->bhi(regs::BHI_EXECENV), 0u);
	boot();
	ASSERT_TRUE(entered_amss()) << "never entered AMSS";
	EXPECT_EQ(mhi->bhi(regs::BHI_EXECENV), kEeAmss);
	EXPECT_EQ(end_status, (std::vector<uint32_t>{0, 0}));
	EXPECT_TRUE(has(all_log, "fw1.bin: qsm 1.0.0.2, 3000 bytes, SHA-256 ok"));
	EXPECT_TRUE(has(all_log, "fw2.bin: nsp 1.0.0.3"));
	EXPECT_TRUE(has(all_log, "time synchronised with the host: UTC 1700000000.000042"));
	EXPECT_TRUE(has(all_log, "starting AMSS"));
	for (const auto &[off, len] : read_requests)
		EXPECT_NE(len, 8u) << "an 8-byte READ_DATA at " << off;
	ASSERT_EQ(ts_other.size(), 1u);
	EXPECT_EQ(ts_other[0][5], 2) << "ACK_TO_HOST after the sync";

	control_answers_status(0);
	EXPECT_EQ(dev->boot().stage(), std::string("amss"));
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

BOOT_TEST(SblAtM0, AmssStartsWithoutTheHostsLoggingAndTimesyncClients)
{
	ASSERT_NO_FATAL_FAILURE(start_sahara());
	fetch_images();
	EXPECT_FALSE(entered_amss()) << "a time-sync client gets its while to start";
	mhi->fire_timer();
	EXPECT_TRUE(entered_amss());
}

BOOT_TEST(SblAwaitingTimesync, SblWaitsForTimesyncThenGivesUpAfterItsGracePeriod)
{
	EXPECT_FALSE(entered_amss());
	mhi->fire_timer();
	EXPECT_TRUE(entered_amss());
}

BOOT_TEST(CardAtPbl, TamperedRuntimeImageHaltsTheBootWithHashFailure)
{
	files[2][fw::kHeaderSize + 100] ^= 1;
	boot();
	EXPECT_FALSE(entered_amss());
	EXPECT_EQ(end_status, (std::vector<uint32_t>{0, sahara::kHashVerificationFailure}));
	EXPECT_TRUE(has(all_log, "fw2.bin: bad digest (Sahara status 0x22); boot halted"));
	EXPECT_EQ(dev->boot().stage(), std::string("sbl-halted"));
}

BOOT_TEST(CardAtPbl, RuntimeImageWithWrongIdOrBadHeaderIsRefused)
{
	files[1] = fw::build(9, "qsm", {1, 0, 0, 2}, payload(100, 1));
	boot();
	EXPECT_EQ(end_status, std::vector<uint32_t>{sahara::kUnexpectedImageId});
	EXPECT_TRUE(has(all_log, "fw1.bin: wrong image"));

	card_at_pbl();
	end_status.clear();
	all_log.clear();
	files[1] = fw::build(1, "qsm", {1, 0, 0, 2}, payload(100, 1));
	files[1][0] = 'X';
	boot();
	EXPECT_EQ(end_status, std::vector<uint32_t>{sahara::kInvalidImageType});
	EXPECT_TRUE(has(all_log, "fw1.bin: bad header"));
}

BOOT_TEST(CardAtPbl, MissingRuntimeImageHaltsTheBoot)
{
	files.erase(2);
	boot();
	EXPECT_FALSE(entered_amss());
	EXPECT_TRUE(has(all_log, "fw2.bin: the host has no such image (Sahara RESET); boot halted"));
}

TEST_F(BootTest, BhiReportsEachKindOfBadImage)
{
	struct Case {
		const char *what;
		std::vector<uint8_t> img;
		fw::Error err;
	};
	std::vector<uint8_t> bad_magic = sbl, bad_digest = sbl, truncated = sbl, trailing = sbl, not_sbl;
	bad_magic[1] ^= 0xFF;
	bad_digest.back() ^= 1;
	truncated.pop_back();
	trailing.push_back(0);
	not_sbl = fw::build(1, "qsm", {1, 0, 0, 0}, payload(64, 0));
	const std::vector<Case> cases = {
		{"bad magic", bad_magic, fw::Error::BadHeader},
		{"bad digest", bad_digest, fw::Error::BadDigest},
		{"truncated", truncated, fw::Error::Truncated},
		{"trailing bytes", trailing, fw::Error::TooLarge},
		{"runtime image", not_sbl, fw::Error::WrongImage},
		{"shorter than a header", std::vector<uint8_t>(40, 0), fw::Error::Truncated},
		{"bad manifest", fw::build(0, "sbl", {1, 0, 0, 0}, payload(3, 0)), fw::Error::BadHeader},
	};
	for (const auto &c : cases) {
		card_at_pbl();
		EXPECT_EQ(mhi->bhi_load(c.img), 3u) << c.what;
		EXPECT_EQ(mhi->bhi(regs::BHI_ERRCODE), static_cast<uint32_t>(c.err)) << c.what;
		EXPECT_EQ(mhi->bhi(regs::BHI_EXECENV), 0u) << c.what << ": still PBL";
		EXPECT_EQ(mhi->r(regs::MHISTATUS) & 1, 0u) << c.what;
	}
	// Too large is refused from IMGSIZE alone, and so is memory the card
	// cannot reach.
	card_at_pbl();
	mhi->w(regs::kBhiBase + regs::BHI_IMGSIZE, static_cast<uint32_t>(fw::kMaxSblSize + 1));
	mhi->w(regs::kBhiBase + regs::BHI_IMGTXDB, 1);
	mhi->settle();
	EXPECT_EQ(mhi->bhi(regs::BHI_STATUS) >> 30, 3u);
	EXPECT_EQ(mhi->bhi(regs::BHI_ERRCODE), static_cast<uint32_t>(fw::Error::TooLarge));
	mhi->w(regs::kBhiBase + regs::BHI_IMGADDR_HIGH, 0x7);
	mhi->w(regs::kBhiBase + regs::BHI_IMGSIZE, 4096);
	mhi->w(regs::kBhiBase + regs::BHI_IMGTXDB, 2);
	mhi->settle();
	EXPECT_EQ(mhi->bhi(regs::BHI_ERRCODE), static_cast<uint32_t>(fw::Error::DmaFault));
	// And a good image still boots afterwards.
	EXPECT_EQ(mhi->bhi_load(sbl), 2u);
	EXPECT_EQ(mhi->bhi(regs::BHI_EXECENV), kEeSbl);
}

BOOT_TEST(AmssControl, SysErrInAmssRecoversThroughMhiReset)
{
	const size_t msis = host.msis.size();
	ASSERT_NO_FATAL_FAILURE(sys_err());
	EXPECT_GT(host.msis.size(), msis);
	EXPECT_EQ(mhi->r(regs::MHISTATUS) >> 8, kStateSysErr);
	EXPECT_TRUE(mhi->r(regs::MHISTATUS) & regs::MHISTATUS_SYSERR);
	EXPECT_EQ(mhi->states.back(), kStateSysErr);
	// The card no longer answers on its channels.
	EXPECT_TRUE(nnc_status(1).empty());

	mhi->w(regs::MHICTRL, mhi->r(regs::MHICTRL) | regs::MHICTRL_RESET);
	mhi->settle();
	EXPECT_EQ(mhi->r(regs::MHICTRL) & regs::MHICTRL_RESET, 0u) << "RESET cleared by the firmware";
	EXPECT_EQ(mhi->r(regs::MHISTATUS), 0x101u);
	mhi->states.clear();
	mhi->ees.clear();
	mhi->ready_handshake();
	EXPECT_EQ(mhi->states, std::vector<uint8_t>{kStateM0});
	EXPECT_EQ(mhi->ees, std::vector<uint8_t>{kEeAmss});
	control_answers_status(2);
	EXPECT_NE(dev->inject("melt"), "");
}

// What the host took as the RAM dump of the `failure`-th SYS_ERR after a
// full boot: its table, summary, the SBL's log, MHI's registers and the
// images AMSS ran from.
void BootTest::expect_dump_of_failure(unsigned failure)
{
	ASSERT_EQ(dump_entries.size(), 5u);
	const char *const files_in_order[] = {"summary.txt", "sbl.log", "mhi_regs.bin", "fw1.bin", "fw2.bin"};
	for (size_t i = 0; i < 5; i++) {
		EXPECT_EQ(dump_entries[i].file, files_in_order[i]);
		EXPECT_EQ(dump_files[dump_entries[i].file].size(), dump_entries[i].len) << files_in_order[i];
	}
	const std::string summary = dump_file("summary.txt");
	EXPECT_EQ(summary.rfind("AIC100 RAM dump\nreason: SYS_ERR injected (test)\nserial: 0x00c0ffee\n"
				"failure: " + std::to_string(failure) + "\n", 0),
		  0u)
		<< summary;
	EXPECT_NE(summary.find("image: fw1.bin qsm 1.0.0.2 3000 bytes\n"), std::string::npos) << summary;
	EXPECT_NE(summary.find("image: fw2.bin nsp 1.0.0.3 524296 bytes\n"), std::string::npos) << summary;
	EXPECT_NE(dump_file("sbl.log").find("SBL: all images loaded; starting AMSS\n"), std::string::npos);
	const auto &r = dump_files["mhi_regs.bin"];
	ASSERT_EQ(r.size(), 0x200u);
	EXPECT_EQ(word(r, regs::MHISTATUS) >> 8, kStateSysErr) << "the registers as the failure left them";
	EXPECT_EQ(word(r, regs::kBhiBase + regs::BHI_EXECENV), kEeAmss);
	EXPECT_EQ(word(r, regs::kBhiBase + regs::BHI_SERIALNU), 0x00C0FFEEu);
	for (uint32_t id : {1u, 2u}) {
		const auto &want = files[id];
		EXPECT_TRUE(dump_files["fw" + std::to_string(id) + ".bin"] ==
			    std::vector<uint8_t>(want.begin() + fw::kHeaderSize, want.end()))
			<< "fw" << id << ".bin: the payload AMSS ran from";
	}
}

// SYS_ERR after a full boot: the host's reset brings the card back in the
// SBL, which offers the RAM dump of the failure (Sahara mode 2), then on the
// host's RESET loads the images again and starts AMSS.
BOOT_TEST(BootedCard, AmssFailureComesBackThroughTheSblWhichOffersItsRamDump)
{
	ASSERT_TRUE(entered_amss());
	EXPECT_EQ(dumps_taken, 0u) << "no dump at a fresh boot";
	for (unsigned failure = 1; failure <= 2; failure++) {
		SCOPED_TRACE(failure);
		ASSERT_NO_FATAL_FAILURE(sys_err());
		EXPECT_EQ(mhi->r(regs::MHISTATUS) >> 8, kStateSysErr);
		host_resets_mhi();
		EXPECT_EQ(mhi->r(regs::MHICTRL) & regs::MHICTRL_RESET, 0u);
		EXPECT_EQ(mhi->r(regs::MHISTATUS), 0x101u) << "READY";
		EXPECT_EQ(mhi->bhi(regs::BHI_EXECENV), kEeSbl) << "back in the SBL, not in AMSS";
		EXPECT_TRUE(dev->boot().dump_pending());
		all_log.clear();
		read_requests.clear();
		sbl_handshake();
		ASSERT_EQ(mhi->ees, std::vector<uint8_t>{kEeSbl});
		run_sbl();
		EXPECT_EQ(dumps_taken, failure);
		EXPECT_TRUE(dump_refusals.empty());
		EXPECT_FALSE(dev->boot().dump_pending());
		ASSERT_NO_FATAL_FAILURE(expect_dump_of_failure(failure));
		EXPECT_TRUE(has(all_log, "SBL: sahara: RAM dump taken"));
		EXPECT_TRUE(has(all_log, "fw2.bin: nsp 1.0.0.3, 524296 bytes, SHA-256 ok")) << "images fetched again";
		ASSERT_TRUE(entered_amss());
		control_answers_status(failure);
	}
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

// Upstream 6.12's Sahara client does not answer a HELLO in mode 2: the SBL
// withdraws the dump after its timeout and the card boots.
BOOT_TEST(AmssFailedHostIgnoresDumps, AHostThatIgnoresTheDumpOfferGetsItsImagesAfterTheTimeout)
{
	for (int i = 0; i < 10; i++) {
		serve_sahara();
		mhi->settle();
	}
	EXPECT_EQ(dump_hellos_ignored, 1u);
	EXPECT_FALSE(entered_amss());
	const uint64_t before = host.clock_ns;
	mhi->fire_timer();
	EXPECT_EQ(host.clock_ns - before, Sbl::kDumpOfferTimeoutNs);
	run_sbl();
	EXPECT_TRUE(entered_amss());
	EXPECT_TRUE(has(all_log, "RAM dump not taken: the host did not answer the memory-debug HELLO"));
	EXPECT_FALSE(dev->boot().dump_pending());
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

// The dump waits for a host that takes it: offered again after the host's
// MHI reset; a SoC reset (PBL again) drops it.
BOOT_TEST(AmssFailedHostIgnoresDumps, RamDumpIsOfferedAgainAfterAnMhiResetAndDroppedByASocReset)
{
	serve_sahara();
	EXPECT_EQ(dump_hellos_ignored, 1u);
	host_resets_mhi();
	EXPECT_EQ(mhi->bhi(regs::BHI_EXECENV), kEeSbl);
	sbl_handshake();
	serve_sahara();
	EXPECT_EQ(dump_hellos_ignored, 2u) << "offered again";
	EXPECT_TRUE(dev->boot().dump_pending());
	soc_reset();
	EXPECT_FALSE(dev->boot().dump_pending());
	host_resets_mhi();
	boot();
	EXPECT_EQ(dump_hellos_ignored, 2u) << "a fresh boot offers no dump";
	EXPECT_TRUE(entered_amss());
}

// SYS_ERR while the SBL offers the dump is the SBL failing, not AMSS: no
// new dump; the host's reset restarts the SBL, which offers the same one.
BOOT_TEST(AmssFailedHostIgnoresDumps, SysErrInTheSblKeepsTheDumpOfTheAmssFailure)
{
	serve_sahara();
	ASSERT_EQ(dump_hellos_ignored, 1u);
	ASSERT_NO_FATAL_FAILURE(sys_err());
	EXPECT_EQ(mhi->r(regs::MHISTATUS) >> 8, kStateSysErr);
	host_resets_mhi();
	EXPECT_EQ(mhi->bhi(regs::BHI_EXECENV), kEeSbl);
	takes_dumps = true;
	all_log.clear();
	sbl_handshake();
	run_sbl();
	EXPECT_EQ(dumps_taken, 1u);
	EXPECT_NE(dump_file("summary.txt").find("reason: SYS_ERR injected (test)\nserial: 0x00c0ffee\nfailure: 1\n"),
		  std::string::npos)
		<< "the AMSS failure's dump, recorded once";
	EXPECT_EQ(dump_file("sbl.log").find("restarted after a firmware failure"), std::string::npos)
		<< "the boot log of the boot that started AMSS";
	EXPECT_TRUE(entered_amss());
}

BOOT_TEST(BootedCard, SocResetRebootsIntoPblAndReportsSysErr)
{
	soc_reset();
	EXPECT_EQ(mhi->bhi(regs::BHI_EXECENV), 0u);
	EXPECT_EQ(mhi->r(regs::MHISTATUS) >> 8, kStateSysErr);
	host_resets_mhi();
	EXPECT_EQ(mhi->r(regs::MHISTATUS), 0u) << "PBL: RESET, not READY";
	end_status.clear();
	all_log.clear();
	boot();
	EXPECT_TRUE(entered_amss());
}

// "bootlog hold" (docs/health.md): the SBL keeps its boot log back and lets
// it go only when the host resets QAIC_LOGGING, as a host does when it
// removes its logging client on the card's way into AMSS.
BOOT_TEST(CardAtPbl, HeldBootLogGoesOutAtTheHostsChannelResetBeforeItsAcknowledgement)
{
	ASSERT_EQ(dev->inject("bootlog hold ack_delay_ms=200"), "");
	boot();
	// The handover did not wait for the held lines (no grace period ran).
	ASSERT_TRUE(entered_amss());
	EXPECT_EQ(host.clock_ns, 0u);
	EXPECT_TRUE(all_log.empty()) << all_log.front();
	const size_t held = dev->boot().sbl().held_lines();
	ASSERT_GE(held, 5u);
	// The boot timesync channel went with the SBL; the logging one stays.
	EXPECT_EQ(mhi->reset_channel(21), true);

	mhi->order.clear();
	const uint64_t at = mhi->issue(13, mhi::ElementType::ResetChannel);
	const auto lines = bootlog();
	ASSERT_EQ(lines.size(), held + 1);
	EXPECT_EQ(lines[0], "SBL: " + std::to_string(held) +
				    " log lines held by test injection, released at the host's channel reset");
	EXPECT_TRUE(has(lines, "SBL: all images loaded; starting AMSS"));
	EXPECT_TRUE(has(lines, "time synchronised with the host"));
	EXPECT_FALSE(dev->boot().sbl().log_held()) << "one release per arming";
	// Not acknowledged yet, and a command behind it waits its turn.
	EXPECT_EQ(mhi->cmd_done.count(at), 0u);
	const uint64_t behind = mhi->issue(12, mhi::ElementType::ResetChannel);
	EXPECT_EQ(mhi->cmd_done.count(behind), 0u);
	EXPECT_EQ(host.deadline, 200'000'000u);
	host.clock_ns = 199'999'999;
	mhi->settle();
	EXPECT_EQ(mhi->cmd_done.count(at), 0u);
	mhi->fire_timer();
	ASSERT_EQ(mhi->cmd_done.count(at), 1u);
	EXPECT_EQ(mhi->cmd_done[at], 1) << "SUCCESS";
	EXPECT_EQ(mhi->cmd_done.count(behind), 1u);
	// Every line before the completion, in event-ring order.
	std::vector<std::string> want(held + 1, "rx13");
	want.insert(want.end(), {"cmd", "cmd"});
	EXPECT_EQ(mhi->order, want);
	// The channel is gone: nothing more on it, and the card runs on.
	mhi->queue_dl(13, 512, 4);
	EXPECT_TRUE(bootlog().empty());
	control_answers_status(4);
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

BOOT_TEST(CardAtPbl, HoldReleasedAtHandoverGoesOutAsTheSblLeavesWithoutWaitingForTheHost)
{
	// The reproducer of upstream's boot-log race (docs/upstream-bugs.md):
	// the last lines arrive as the logging client is being removed.
	ASSERT_EQ(dev->inject("bootlog hold release=handover"), "");
	mhi->keep_buffers = {13}; // a host still busy with what it was sent
	boot(31);
	ASSERT_TRUE(entered_amss());
	EXPECT_EQ(host.clock_ns, 0u) << "no grace period ran";
	ASSERT_FALSE(all_log.empty());
	EXPECT_NE(all_log.front().find("log lines held by test injection, released as the SBL hands over to AMSS"),
		  std::string::npos)
		<< all_log.front();
	EXPECT_TRUE(has(all_log, "SBL: all images loaded; starting AMSS"));
	EXPECT_FALSE(dev->boot().sbl().log_held()) << "one release per arming";
	// The channel went with the SBL.
	EXPECT_FALSE(dev->mhi().channel_running(13));
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

BOOT_TEST(CardAtPbl, HeldLinesThatFindNoHostBufferAreDropped)
{
	ASSERT_EQ(dev->inject("bootlog hold"), "");
	boot(3); // the host posts 3 buffers for the log
	ASSERT_GE(dev->boot().sbl().held_lines(), 5u);
	mhi->requeue = false;
	ASSERT_TRUE(mhi->reset_channel(13)) << "ack_delay_ms defaults to 0: acknowledged at once";
	const auto lines = bootlog();
	ASSERT_EQ(lines.size(), 3u) << "one line per posted buffer";
	EXPECT_NE(lines[0].find("released at the host's channel reset"), std::string::npos);
	// The rest went with the channel.
	mhi->requeue = true;
	mhi->queue_dl(13, 512, 8);
	EXPECT_TRUE(bootlog().empty());
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

BOOT_TEST(BootedCard, HoldSurvivesASocResetAndIsUsedOnce)
{
	EXPECT_TRUE(has(all_log, "starting AMSS")) << "not held: sent as usual";
	ASSERT_EQ(dev->inject("bootlog hold ack_delay_ms=0"), "");
	reboot();
	ASSERT_TRUE(entered_amss());
	EXPECT_TRUE(all_log.empty());
	ASSERT_TRUE(mhi->reset_channel(13));
	EXPECT_TRUE(has(bootlog(), "starting AMSS"));

	// The next boot logs as usual again.
	reboot();
	EXPECT_TRUE(has(all_log, "starting AMSS"));
	EXPECT_FALSE(has(all_log, "held by test injection"));
}

BOOT_TEST(CardAtPbl, BootlogNormalSendsWhatWasHeld)
{
	ASSERT_EQ(dev->inject("bootlog hold"), "");
	boot_to_sbl();
	EXPECT_TRUE(bootlog().empty());
	const size_t held = dev->boot().sbl().held_lines();
	ASSERT_GE(held, 2u);
	ASSERT_EQ(dev->inject("bootlog normal"), "");
	mhi->settle();
	const auto lines = bootlog();
	EXPECT_EQ(lines.size(), held);
	EXPECT_TRUE(has(lines, "SBL: sbl 1.0.0.1 started"));
	EXPECT_EQ(dev->boot().sbl().held_lines(), 0u);
	run_sbl();
	EXPECT_TRUE(has(all_log, "starting AMSS"));
}

TEST_F(BootTest, ResetAwaitingItsAcknowledgementIsDroppedByMhiResetOrSysErr)
{
	for (const bool sys_err : {false, true}) {
		card_at_pbl();
		ASSERT_EQ(dev->inject("bootlog hold ack_delay_ms=1000"), "");
		boot();
		const uint64_t at = mhi->issue(13, mhi::ElementType::ResetChannel);
		EXPECT_EQ(host.deadline, host.clock_ns + 1'000'000'000u);
		if (sys_err)
			ASSERT_EQ(dev->inject("syserr"), "");
		else
			mhi->w(regs::MHICTRL, regs::MHICTRL_RESET);
		mhi->settle();
		host.clock_ns += 2'000'000'000;
		mhi->settle();
		EXPECT_EQ(mhi->cmd_done.count(at), 0u) << "no completion for a ring the host reset";
		EXPECT_EQ(host.deadline, HostInterface::kNoDeadline);
		if (!sys_err) {
			// A new session works, its commands are not held up.
			mhi->ready_handshake();
			control_answers_status(5);
		}
		EXPECT_TRUE(host.errors.empty()) << host.errors.front();
	}
}

BOOT_TEST(CardAtPbl, MhiResetInSblRestartsTheImageTransfer)
{
	boot_to_sbl();
	serve_sahara(); // HELLO answered, first READ_DATA pending
	host_resets_mhi();
	EXPECT_EQ(mhi->r(regs::MHISTATUS), 0x101u);
	EXPECT_EQ(mhi->bhi(regs::BHI_EXECENV), kEeSbl);
	mhi->ready_handshake();
	ASSERT_EQ(mhi->ees, std::vector<uint8_t>{kEeSbl});
	ASSERT_NO_FATAL_FAILURE(start_logging());
	ASSERT_NO_FATAL_FAILURE(start_timesync());
	ASSERT_NO_FATAL_FAILURE(start_sahara());
	run_sbl();
	EXPECT_TRUE(entered_amss());
}

BOOT_TEST(AmssAtM0, SecondM0IsANewHostWithNewContexts)
{
	ASSERT_TRUE(mhi->start(10, 128));
	mhi->states.clear();
	mhi->ees.clear();
	mhi->ready_handshake(); // new addresses, no reset in between
	EXPECT_EQ(mhi->states, std::vector<uint8_t>{kStateM0});
	EXPECT_EQ(mhi->ees, std::vector<uint8_t>{kEeAmss});
	control_answers_status(3);
}

// A new host can be given the very addresses of the old one's rings: it
// still starts them afresh, and the card must too.
BOOT_TEST(AmssAtM0, NewHostAtTheOldAddressesIsStillANewHost)
{
	ASSERT_TRUE(mhi->start(10, 128));
	mhi->states.clear();
	mhi->ees.clear();
	mhi->reuse_addresses = true;
	mhi->ready_handshake();
	EXPECT_EQ(mhi->states, std::vector<uint8_t>{kStateM0});
	EXPECT_EQ(mhi->ees, std::vector<uint8_t>{kEeAmss});
	control_answers_status(3);
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

// Linux's MHI core can write M0 twice for one session (its SYS_ERR
// recovery and the READY interrupt both run the READY transition), the
// second time after it has already queued a START on the first M0's rings.
BOOT_TEST(AmssAtM0, SameHostsSecondM0KeepsItsRingsAndQueuedCommands)
{
	ASSERT_TRUE(mhi->start(10, 128));
	mhi->states.clear();
	mhi->init_channel(11);
	const uint64_t at = mhi->issue(11, mhi::ElementType::StartChannel, false);
	mhi->set_state(regs::MhiState::M0);
	mhi->settle();
	EXPECT_EQ(mhi->cmd_done.count(at), 1u) << "the START queued before the second M0 is lost";
	EXPECT_EQ(mhi->states, std::vector<uint8_t>{kStateM0});
	expect_status_reply(nnc_status(3), 3); // both channels still serve
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

// Linux's MHI stack taking over a card left in AMSS and M0 (upstream qaic
// re-probed after its non-graceful remove): new context bases, the new
// event ring's doorbell, and only then M0. The card must not take that
// doorbell for one of the old ring's.
BOOT_TEST(AmssAtM0, NewHostsEventRingDoorbellBeforeItsM0IsNotAnError)
{
	ASSERT_TRUE(mhi->start(10, 128));
	host.errors.clear();
	mhi->states.clear();
	mhi->run_between_writes = true;
	mhi->ready_handshake(); // new addresses, the device running before M0
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
	EXPECT_EQ(mhi->states, std::vector<uint8_t>{kStateM0});
	control_answers_status(3);
	EXPECT_TRUE(host.errors.empty());
}

BOOT_TEST(AmssLoopback, LoopbackEchoesEverySizeAcrossHostBuffers)
{
	mhi->requeue = false;
	for (size_t n : {size_t{1}, size_t{4096}, size_t{65536}}) {
		const auto data = payload(n, static_cast<uint8_t>(n));
		mhi->queue_dl(1, 32768, static_cast<unsigned>((n + 32767) / 32768));
		std::vector<std::vector<uint8_t>> pieces;
		for (size_t o = 0; o < n; o += 32768)
			pieces.emplace_back(data.begin() + o, data.begin() + std::min(n, o + 32768));
		mhi->send(0, pieces);
		std::vector<uint8_t> echo;
		for (auto p = mhi->pop(1); !p.empty(); p = mhi->pop(1))
			echo.insert(echo.end(), p.begin(), p.end());
		EXPECT_EQ(echo, data) << n << " bytes";
	}
	EXPECT_EQ(mhi->ul_done[0], 3u) << "one completion per TD";
}

BOOT_TEST(LoopbackWithAnUnrungBuffer, AnOlderChannelDoorbellLandingLastTakesBackNoBuffer)
{
	// Linux's mhi_queue() rings outside the channel lock: of two contexts
	// queuing on one channel, the one that read the older write pointer
	// can ring it last. The buffers the newer doorbell posted stay posted.
	mhi->queue_dl_unrung(1, 64, 1);
	ASSERT_NE(older, mhi->ring_wp(1));
	mhi->ring_channel(1); // the context's wp, then the doorbell, at the newer TRE
	mhi->ring(regs::kChdbBase + 8 * 1, older);
	mhi->settle();
	mhi->send(0, std::vector<uint8_t>(8, 1));
	mhi->send(0, std::vector<uint8_t>(8, 2));
	EXPECT_EQ(mhi->pop(1), std::vector<uint8_t>(8, 1));
	EXPECT_EQ(mhi->pop(1), std::vector<uint8_t>(8, 2)) << "the second buffer was taken back";
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
	EXPECT_TRUE(traced("channel 1: doorbell at TRE 1 behind TRE 2 ignored"));
}

BOOT_TEST(LoopbackWithAnUnrungBuffer, AnOlderChannelDoorbellBehindWhatTheCardConsumedPostsNothing)
{
	// The older doorbell lands after the card has already filled the TREs
	// it names and more: by its pointer alone the host would have posted
	// the ring nearly full. The context's wp, written before every
	// doorbell, says what is posted.
	mhi->queue_dl(1, 64, 2);
	for (uint8_t i = 1; i <= 3; i++) {
		mhi->send(0, std::vector<uint8_t>(8, i));
		EXPECT_EQ(mhi->pop(1), std::vector<uint8_t>(8, i));
	}
	mhi->ring(regs::kChdbBase + 8 * 1, older);
	mhi->settle();
	mhi->send(0, std::vector<uint8_t>(8, 4));
	EXPECT_TRUE(mhi->pop(1).empty()) << "served into a TRE the host never posted";
	mhi->queue_dl(1, 64, 1);
	EXPECT_EQ(mhi->pop(1), std::vector<uint8_t>(8, 4));
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

BOOT_TEST(AmssLoopback, IeobTresGetTheirOwnCompletionBeforeTheTdsEot)
{
	mhi->queue_dl(1, 64);
	mhi->send(0, {std::vector<uint8_t>(3, 1), std::vector<uint8_t>(4, 2), std::vector<uint8_t>(5, 3)},
		  mhi::kTreIeob);
	EXPECT_EQ(mhi->ul_codes[0], (std::vector<uint8_t>{0x4, 0x4, 0x2})) << "EOB, EOB, EOT";
	EXPECT_EQ(mhi->pop(1).size(), 12u) << "still one message";
}

BOOT_TEST(AmssControl, OversizedDlMessageOverflowsInsteadOfSplitting)
{
	mhi->requeue = false;
	mhi->queue_dl(11, 16); // smaller than the 56-byte STATUS reply
	send_status(9);
	ASSERT_EQ(mhi->rx_codes[11].size(), 1u);
	EXPECT_EQ(mhi->rx_codes[11][0], 0x3) << "OVERFLOW";
}

// An NNC message of one transaction: header fields and the transaction's
// type and length as given, whatever they say.
std::vector<uint8_t> nnc_msg(uint32_t magic, uint32_t len, uint32_t count, uint32_t tlen,
			     uint32_t type = nnc::kStatusToDev)
{
	nnc::Header h{0, magic, 1, len, count, 0, 0xFFFFFFFF, 0};
	std::vector<uint8_t> m(sizeof(h));
	std::memcpy(m.data(), &h, sizeof(h));
	auto t = words({type, tlen}, 8);
	m.insert(m.end(), t.begin(), t.end());
	return m;
}

BOOT_TEST(AmssControl, MalformedNncMessagesAreDroppedOrRefused)
{
	mhi->queue_dl(11, 4096, 8);
	// No trustworthy header: dropped, with a guest error.
	mhi->send(10, nnc_msg(0x12345678, 40, 1, 8)); // bad magic
	mhi->send(10, nnc_msg(nnc::kMagic, 400, 1, 8)); // length lies
	mhi->send(10, std::vector<uint8_t>(5, 0));
	EXPECT_TRUE(mhi->pop(11).empty());
	EXPECT_EQ(host.errors.size(), 3u);
	// A good header around bad transactions: refused with a STATUS error
	// the host turns into -ECANCELED.
	auto refused = [&](const std::vector<uint8_t> &m, uint32_t code) {
		mhi->send(10, m);
		const auto r = mhi->pop(11);
		ASSERT_EQ(r.size(), 56u);
		EXPECT_EQ(word(r, 32), nnc::kStatusFromDev);
		EXPECT_EQ(word(r, 44), code);
	};
	refused(nnc_msg(nnc::kMagic, 40, 9, 8), 1);  // count runs past the end
	refused(nnc_msg(nnc::kMagic, 40, 1, 4), 1);  // transaction shorter than its header
	refused(nnc_msg(nnc::kMagic, 40, 1, 80), 1); // transaction past the end
	refused(nnc_msg(nnc::kMagic, 40, 0, 8), 1);  // bytes left over after count
	refused(nnc_msg(nnc::kMagic, 40, 1, 8, nnc::kStatusFromDev), 3); // a device-to-host type
	refused(nnc_msg(nnc::kMagic, 40, 1, 8, 99), 3);
	expect_status_reply(nnc_status(4), 4);
}

BOOT_TEST(AmssLoopback, HostileRingsAndDoorbellsGiveErrorsNotCrashes)
{
	// Doorbells outside the channel's ring, or for channels never started.
	mhi->ring(regs::kChdbBase + 0, 0xDEAD0000);
	mhi->ring(regs::kChdbBase + 8 * 40, 0x1000);
	mhi->ring(regs::kChdbBase + 8 * 127, 1); // wake doorbell: accepted
	mhi->settle();
	EXPECT_EQ(host.errors.size(), 1u);
	// A command for channel 200 and a garbage command type.
	EXPECT_NE(mhi->command(127, mhi::ElementType::StartChannel), 1);
	EXPECT_NE(mhi->command(5, static_cast<mhi::ElementType>(0x33)), 1);
	// A TRE pointing outside host memory: completed, data dropped.
	host.errors.clear();
	mhi->send(0, std::vector<uint8_t>(16, 1));
	EXPECT_EQ(mhi->ul_done[0], 1u);
	// Command-ring doorbell outside the ring.
	mhi->ring(regs::CRDB_LOWER, 0x42);
	mhi->settle();
	EXPECT_FALSE(host.errors.empty());
	// The card still works.
	control_answers_status(5);
}

BOOT_TEST(AmssCard, M0WithUnusableContextsIsSysErr)
{
	mhi->w(regs::MHICFG, 0); // NER = 0
	mhi->w(regs::MHICTRL, 2u << 8);
	mhi->settle();
	EXPECT_EQ(mhi->r(regs::MHISTATUS) >> 8, kStateSysErr);
	EXPECT_FALSE(host.errors.empty());
	mhi->w(regs::MHICTRL, regs::MHICTRL_RESET);
	mhi->settle();
	mhi->ready_handshake();
	EXPECT_EQ(mhi->states, std::vector<uint8_t>{kStateM0});
}

BOOT_TEST(AmssCard, InterruptModerationHoldsMsisUntilItsTimer)
{
	mhi->intmod_ms = 10;
	ASSERT_NO_FATAL_FAILURE(online({0, 1}));
	host.clock_ns += 1'000'000'000;
	const size_t before = host.msis.size();
	mhi->send(0, std::vector<uint8_t>(4, 1)); // first event after a quiet spell: at once
	EXPECT_EQ(host.msis.size(), before + 1);
	mhi->send(0, std::vector<uint8_t>(4, 2));
	mhi->send(0, std::vector<uint8_t>(4, 3));
	EXPECT_EQ(host.msis.size(), before + 1) << "held back";
	EXPECT_EQ(mhi->ul_done[0], 3u) << "events are written, only the MSI waits";
	mhi->fire_timer();
	EXPECT_EQ(host.msis.size(), before + 2);
}

// ---- what a hostile or confused host can make the card do ---------------

BOOT_TEST(AmssCard, RegisterWritesByTheCardsOwnDmaAreRefused)
{
	// Every DMA of the card tries to reset MHI through BAR0, as a transfer
	// aimed at the card's own registers would.
	host.on_dma = [&] { dev->bar_write(0, regs::MHICTRL, regs::MHICTRL_RESET, 4); };
	mhi->ready_handshake();
	host.on_dma = nullptr;
	EXPECT_TRUE(has_error("own DMA refused"));
	EXPECT_EQ(mhi->states, std::vector<uint8_t>{kStateM0});
	EXPECT_EQ(mhi->r(regs::MHISTATUS) >> 8, kStateM0);
	control_answers_status(1);
}

// QEMU resets the card synchronously when the card's own DMA sets
// Secondary Bus Reset in its root port (through ECAM). The pass that DMA
// belongs to is using the rings the reset frees: the reset waits for the
// end of the pass (ASan: no use after free), then the card is as after any
// reset and boots again.
TEST_F(BootTest, APciResetFromTheCardsOwnDmaWaitsForTheEndOfItsPass)
{
	for (int nth_dma : {1, 2, 3, 5, 8}) {
		card_in_amss();
		ASSERT_NO_FATAL_FAILURE(online({0, 1}));
		mhi->queue_dl(1, 4096, 2);
		int dmas = 0;
		host.on_dma = [&] {
			if (++dmas == nth_dma)
				dev->reset();
		};
		host.traces.clear();
		mhi->send(0, payload(6000, 7));
		host.on_dma = nullptr;
		ASSERT_GE(dmas, nth_dma) << "the loopback DMAs";
		EXPECT_TRUE(traced("card reset (PCI) asked for by the card's own DMA")) << "DMA " << nth_dma;
		EXPECT_NE(mhi->r(regs::MHISTATUS) >> 8 & 0xFF, kStateM0) << "reset after the pass";
		EXPECT_EQ(mhi->r(regs::kBhiBase + regs::BHI_EXECENV), kEeAmss);
		// And it comes back.
		new_host();
		mhi->ready_handshake();
		EXPECT_EQ(mhi->r(regs::MHISTATUS) >> 8 & 0xFF, kStateM0);
	}
}

BOOT_TEST(AmssAtM0, APciResetFromOutsideThePassTakesEffectAtOnce)
{
	host.traces.clear();
	dev->reset();
	EXPECT_TRUE(traced("card reset (PCI)"));
	EXPECT_FALSE(traced("asked for by the card's own DMA"));
	EXPECT_NE(mhi->r(regs::MHISTATUS) >> 8 & 0xFF, kStateM0);
}

BOOT_TEST(AmssCard, ARegisterWriteFromAnotherThreadWhileTheCardWorksIsTheHosts)
{
	// vCPUs write the DMA Bridge's registers without the BQL: while the
	// card works on one thread, a write from another is the host's, not
	// the card's own DMA.
	bool wrote = false;
	host.on_dma = [&] {
		if (wrote)
			return;
		wrote = true;
		std::thread vcpu([&] { dev->bar_write(2, regs::kDbcBase + regs::DBC_REQTP, 5, 4); });
		vcpu.join();
	};
	mhi->ready_handshake();
	host.on_dma = nullptr;
	EXPECT_TRUE(wrote);
	EXPECT_FALSE(has_error("own DMA refused"));
	EXPECT_EQ(dev->bar_read(2, regs::kDbcBase + regs::DBC_REQTP, 4), 5u);
}

// A command ring of a million elements with the doorbell at its far end:
// one pass runs at most kCommandsPerPass of them and leaves the rest to the
// next (found by QEMU's generic-fuzz: one pass held the BQL for minutes).
BOOT_TEST(AmssCard, AHugeCommandRingIsWorkedThroughAFewCommandsPerPass)
{
	constexpr unsigned kElements = 1u << 20;
	constexpr uint64_t kZeros = 0x80000000; // reads as zeros: unknown commands
	host.zero_from = kZeros;
	mhi->cmd_elements = kElements;
	mhi->cmd_base_at = kZeros;
	mhi->ready_handshake();
	const uint64_t before = host.dma_read_bytes;
	const uint64_t wp = kZeros + uint64_t{kElements - 1} * 16;
	mhi->w(regs::CRDB_HIGHER, uint32_t(wp >> 32));
	mhi->w(regs::CRDB_LOWER, uint32_t(wp));
	dev->process();
	EXPECT_EQ(host.dma_read_bytes - before, uint64_t{Mhi::kCommandsPerPass} * 16);
	const unsigned kicks = host.kicks;
	dev->process();
	EXPECT_EQ(host.dma_read_bytes - before, 2ull * Mhi::kCommandsPerPass * 16) << "the next pass goes on";
	EXPECT_GT(host.kicks.load(), kicks) << "and asks for another";
}

BOOT_TEST(AmssAtM0, AChainOfMoreTresThanAllowedStopsTheChannel)
{
	ASSERT_TRUE(mhi->start(0, 2048));
	ASSERT_TRUE(mhi->start(1));
	mhi->queue_dl(1, 4096, 4);
	std::vector<std::vector<uint8_t>> pieces(Mhi::kMaxTdTres + 1, std::vector<uint8_t>{0x42});
	mhi->send(0, pieces);
	EXPECT_TRUE(has_error("TREs; channel stopped"));
	EXPECT_TRUE(mhi->pop(1).empty()) << "nothing echoed";
	EXPECT_FALSE(dev->mhi().channel_running(0));
}

BOOT_TEST(AmssLoopback, DataQueuedForAHostThatPostsNoBuffersIsBoundedInBytes)
{
	const std::vector<uint8_t> mib(1u << 20, 0x17);
	size_t queued = 0;
	while (queued < Mhi::kMaxDlQueue && dev->mhi().send(1, mib, true))
		queued++;
	EXPECT_EQ(queued, Mhi::kMaxDlQueueBytes >> 20);
	EXPECT_EQ(dev->mhi().dl_backlog(1), queued);
	EXPECT_TRUE(has_error("host posts no buffers"));
}

BOOT_TEST(AmssAtM0, OneEventLoopPassReadsABoundedAmountOfUlData)
{
	// A ring full of the largest TDs (here 150 MiB) is read over several
	// passes, each within the UL budget, and each pass asks for the next.
	ASSERT_TRUE(mhi->start(4, 4096)); // QAIC_DIAG: AMSS reads and drops it
	host.mem_limit = 1ull << 40;
	host.zero_from = 1ull << 36;
	constexpr uint32_t kTd = 0x10000 - 64; // within a TRE's 16-bit length
	constexpr unsigned kTds = 2400;
	mhi->queue_ul(4, host.zero_from, kTd, kTds);
	const uint64_t total = uint64_t{kTd} * kTds;
	ASSERT_GT(total, 2 * Mhi::kUlBudgetBytes);
	unsigned passes = 0;
	uint64_t before = host.dma_read_bytes;
	while (host.dma_read_bytes < total && passes < 16) {
		const unsigned kicks = host.kicks;
		dev->process();
		passes++;
		const uint64_t read = host.dma_read_bytes - before;
		before = host.dma_read_bytes;
		EXPECT_LE(read, Mhi::kUlBudgetBytes) << "pass " << passes;
		if (host.dma_read_bytes < total) {
			EXPECT_GT(host.kicks.load(), kicks) << "pass " << passes << " left work without asking for more";
		}
	}
	EXPECT_EQ(host.dma_read_bytes, total);
	EXPECT_EQ(passes, unsigned((total + Mhi::kUlBudgetBytes - 1) / Mhi::kUlBudgetBytes));
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

BOOT_TEST(AmssAtM0, ARingOfAMillionEmptyTdsIsReadAFewThousandTresAPass)
{
	// Each TRE costs the card a DMA read, a TD's bookkeeping and here a
	// refusal, whatever its length: a ring of a million zero TREs (type 0,
	// each a TD of its own) is 16 MiB, well inside the UL byte budget.
	host.mem_limit = 1ull << 40;
	host.zero_from = 1ull << 36;
	mhi->chan_base_at = host.zero_from;
	constexpr unsigned kElements = 1u << 20;
	ASSERT_TRUE(mhi->start(4, kElements));
	mhi->advance(4, kElements - 1);
	const unsigned kicks = host.kicks;
	dev->process();
	const uint64_t tres = host.dma_read_bytes / sizeof(mhi::RingElement);
	EXPECT_GT(tres, 0u);
	EXPECT_LE(tres, 16384u) << "TREs read in one pass";
	EXPECT_GT(host.kicks.load(), kicks) << "the rest asks for another pass";
}

BOOT_TEST(AmssAtM0, UlDataOutsideRamWeighsAThousandfoldInAPass)
{
	// TD buffers in device registers (or unassigned space): QEMU makes one
	// access for every 1 to 8 of their bytes, as for the DMA Bridge's.
	ASSERT_TRUE(mhi->start(4, 2048));
	host.mem_limit = 1ull << 40;
	host.zero_from = host.not_ram_from = 1ull << 36;
	constexpr uint32_t kTd = 4096;
	constexpr unsigned kTds = 1000;
	mhi->queue_ul(4, host.zero_from, kTd, kTds);
	dev->process();
	EXPECT_GT(host.dma_read_bytes, 0u);
	EXPECT_LE(host.dma_read_bytes, (64u << 10) + kTd) << "64 MiB of budget at 1024 a byte, and the TD that overdrew it";
	for (unsigned passes = 0; host.dma_read_bytes < uint64_t{kTd} * kTds && passes < 2 * kTds; passes++)
		dev->process();
	EXPECT_EQ(host.dma_read_bytes, uint64_t{kTd} * kTds) << "all of it, over later passes";
}

BOOT_TEST(SblKeepingLogBuffers, SblStartsAmssOnlyOnceTheHostPostedEveryLogBufferAgain)
{
	// A logging client that gives a buffer back only after it has taken
	// the line out (upstream's does it from a work item, and oopses if the
	// channel is torn down first): until every buffer is back, the line is
	// still being read, and the SBL stays.
	EXPECT_FALSE(entered_amss()) << "still in SBL";
	ASSERT_TRUE(has(all_log, "starting AMSS")) << all_log.size() << " lines";
	const size_t filled = all_log.size();
	ASSERT_GE(filled, 5u);
	EXPECT_EQ(dev->mhi().dl_unreturned(13), filled);
	// All but one given back: still waiting.
	mhi->queue_dl(13, 512, static_cast<unsigned>(filled - 1));
	mhi->settle();
	EXPECT_FALSE(entered_amss()) << "one line still unread";
	EXPECT_EQ(dev->mhi().dl_unreturned(13), 1u);
	mhi->queue_dl(13, 512, 1);
	mhi->settle();
	EXPECT_TRUE(entered_amss());
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

BOOT_TEST(SblKeepingLogBuffers, SblStopsWaitingForItsLogBuffersAfterTheGracePeriod)
{
	// A host that never gives the buffers back does not keep the card in
	// the SBL for ever.
	ASSERT_FALSE(entered_amss());
	ASSERT_TRUE(has(all_log, "starting AMSS")) << all_log.size() << " lines";
	EXPECT_EQ(host.deadline, Sbl::kHandoverGraceNs) << "the SBL asked to be woken when its grace ends";
	mhi->fire_timer();
	mhi->settle();
	EXPECT_TRUE(entered_amss());
}

BOOT_TEST(SblAwaitingTimesync, SblHandsOverAtOnceWhenTheHostResetsTheTimesyncChannelItWaitsFor)
{
	// The host's time-sync client goes away (its channels reset) while the
	// SBL waits for its answer: nothing is owed any more, and the SBL must
	// not sit out its grace period for a client that is gone.
	ASSERT_FALSE(entered_amss()) << "waits for time sync";
	ASSERT_TRUE(mhi->reset_channel(20));
	ASSERT_TRUE(mhi->reset_channel(21));
	mhi->settle();
	EXPECT_TRUE(entered_amss()) << "still in SBL with no time-sync client left";
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

BOOT_TEST(SblKeepingLogBuffers, SblHandsOverAtOnceWhenTheHostResetsTheLoggingChannelItWaitsFor)
{
	// The same for a logging client that holds buffers and then goes away:
	// MHI's channel reset gives every buffer back to it.
	ASSERT_FALSE(entered_amss()) << "waits for its buffers";
	ASSERT_TRUE(mhi->reset_channel(12));
	ASSERT_TRUE(mhi->reset_channel(13));
	mhi->settle();
	EXPECT_TRUE(entered_amss()) << "still in SBL with no logging client left";
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

BOOT_TEST(SblAwaitingTimesync, SblSaysWhatItWaitedForWhenItsGracePeriodEnds)
{
	// A handover forced by the grace period is a host that stopped
	// answering: the card reports what was still owed.
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
	mhi->fire_timer();
	mhi->settle();
	ASSERT_TRUE(entered_amss());
	ASSERT_EQ(host.errors.size(), 1u);
	EXPECT_NE(host.errors[0].find("time sync"), std::string::npos) << host.errors[0];
	EXPECT_NE(host.errors[0].find("grace"), std::string::npos) << host.errors[0];
}

BOOT_TEST(SblAtM0, SblKeepsItsBootLogForABusyHostThatReadsLate)
{
	// The host's logging client is up but posts its buffers late (a loaded
	// machine): the SBL waits for it instead of starting AMSS without it.
	ASSERT_TRUE(mhi->start(chan::kLoggingUl));
	ASSERT_TRUE(mhi->start(chan::kLoggingDl)); // no buffers yet
	ASSERT_NO_FATAL_FAILURE(start_sahara());
	fetch_images();
	host.clock_ns += 10'000'000'000; // ten seconds later
	mhi->settle();
	EXPECT_FALSE(entered_amss()) << "still in SBL";
	mhi->queue_dl(chan::kLoggingDl, 4096, 24);
	std::string log;
	for (auto p = mhi->pop(chan::kLoggingDl); !p.empty(); p = mhi->pop(chan::kLoggingDl))
		log.append(p.begin(), p.end());
	EXPECT_NE(log.find("starting AMSS"), std::string::npos) << log;
	mhi->settle();
	EXPECT_TRUE(entered_amss());
}

BOOT_TEST(SblAtM0, SblReportsBothSidesOfTheBootLogChannelWhenItsGracePeriodEnds)
{
	// The host took the SBL's lines and then queued its buffers again
	// without a doorbell: the report at the end of the grace period shows
	// both the card's ring pointers and what lies in the host's memory.
	ASSERT_TRUE(mhi->start(chan::kLoggingUl));
	ASSERT_TRUE(mhi->start(chan::kLoggingDl));
	mhi->keep_buffers.insert(chan::kLoggingDl);
	mhi->queue_dl(chan::kLoggingDl, 4096, 4);
	ASSERT_NO_FATAL_FAILURE(start_sahara());
	fetch_images();
	while (!mhi->pop(chan::kLoggingDl).empty()) {
	}
	mhi->queue_dl_unrung(chan::kLoggingDl, 4096, 3);
	mhi->fire_timer(); // the wait for a time-sync client ends
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
	mhi->fire_timer(); // and then the grace period
	mhi->settle();
	ASSERT_EQ(host.errors.size(), 1u);
	EXPECT_NE(host.errors[0].find("boot log"), std::string::npos) << host.errors[0];
	const auto report = std::find_if(host.traces.begin(), host.traces.end(), [](const std::string &t) {
		return t.find("SBL: boot log channel 13") != std::string::npos;
	});
	ASSERT_NE(report, host.traces.end());
	EXPECT_NE(report->find("card rp 4 wp 4 of 32"), std::string::npos) << *report;
	EXPECT_NE(report->find("host context wp 4"), std::string::npos) << *report;
	EXPECT_NE(report->find("3 transfer TREs past the card's wp"), std::string::npos) << *report;
	EXPECT_NE(report->find("event ring 0: card rp"), std::string::npos) << *report;
}

// ---- what the kernel's MHI host stack may ask beyond what qaic does --------

BOOT_TEST(SblAtM0, ChannelsStartOnlyInTheExecutionEnvironmentsThatServeThem)
{
	EXPECT_FALSE(mhi->start(10)) << "QAIC_CONTROL is an AMSS channel";
	EXPECT_FALSE(mhi->start(22)) << "QAIC_TIMESYNC_PERIODIC too";
	EXPECT_EQ(host.errors.size(), 2u);
	EXPECT_TRUE(mhi->start(2));

	card_in_amss();
	mhi->ready_handshake();
	EXPECT_FALSE(mhi->start(2)) << "QAIC_SAHARA is an SBL channel";
	EXPECT_FALSE(mhi->start(12)) << "QAIC_LOGGING too";
	EXPECT_FALSE(mhi->start(24)) << "no such channel";
	EXPECT_TRUE(mhi->start(10, 128));
	EXPECT_TRUE(mhi->start(0));
}

BOOT_TEST(AmssLoopback, AStoppedChannelKeepsItsPlaceAndSaysSoInItsContext)
{
	mhi->queue_dl(1, 64, 4);
	const std::vector<uint8_t> a(5, 0xA), b(7, 0xB);
	mhi->send(0, a);
	ASSERT_EQ(mhi->pop(1), a);
	EXPECT_EQ(mhi->context(0).chcfg & 0xFF, uint32_t{static_cast<uint8_t>(mhi::ChannelState::Running)});

	ASSERT_EQ(mhi->command(0, mhi::ElementType::StopChannel), 1u);
	EXPECT_EQ(mhi->context(0).chcfg & 0xFF, uint32_t{static_cast<uint8_t>(mhi::ChannelState::Stop)});
	EXPECT_EQ(mhi->context(0).rp, mhi->ring_wp(0)) << "the card's place in the ring";
	// START again without a new ring, as after STOP: the TD already read
	// is not read again.
	ASSERT_EQ(mhi->command(0, mhi::ElementType::StartChannel), 1u);
	EXPECT_EQ(mhi->context(0).chcfg & 0xFF, uint32_t{static_cast<uint8_t>(mhi::ChannelState::Running)});
	mhi->send(0, b);
	EXPECT_EQ(mhi->pop(1), b);
	EXPECT_TRUE(mhi->pop(1).empty()) << "the first message came back twice";

	ASSERT_TRUE(mhi->reset_channel(0));
	EXPECT_EQ(mhi->context(0).chcfg & 0xFF, uint32_t{static_cast<uint8_t>(mhi::ChannelState::Disabled)});
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

BOOT_TEST(AmssLoopback, M3SuspendsTheCardUntilTheHostResumesIt)
{
	mhi->queue_dl(1, 64, 4);

	mhi->set_state(regs::MhiState::M3);
	mhi->settle();
	EXPECT_EQ(mhi->states.back(), static_cast<uint8_t>(regs::MhiState::M3));
	EXPECT_EQ(mhi->r(regs::MHISTATUS) >> 8, static_cast<uint32_t>(regs::MhiState::M3));
	EXPECT_EQ(mhi->context(0).chcfg & 0xFF, uint32_t{static_cast<uint8_t>(mhi::ChannelState::Suspended)});
	// Suspended, the card reads nothing the host queues.
	const std::vector<uint8_t> a(9, 0x3C);
	mhi->send(0, a);
	EXPECT_TRUE(mhi->pop(1).empty());
	EXPECT_EQ(mhi->ul_done[0], 0u);

	mhi->set_state(regs::MhiState::M0);
	mhi->settle();
	EXPECT_EQ(mhi->states.back(), kStateM0);
	EXPECT_EQ(mhi->r(regs::MHISTATUS) >> 8, uint32_t{kStateM0});
	EXPECT_EQ(mhi->context(0).chcfg & 0xFF, uint32_t{static_cast<uint8_t>(mhi::ChannelState::Running)});
	EXPECT_EQ(mhi->pop(1), a) << "what waited goes through after the resume";
	EXPECT_EQ(mhi->ul_done[0], 1u);
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

BOOT_TEST(AmssAtM0, AfterTheCardsM1TheHostsM2LastsUntilItRingsADoorbell)
{
	mhi->set_state(regs::MhiState::M2);
	EXPECT_EQ(host.errors.size(), 1u) << "M2 only answers the card's M1";
	ASSERT_TRUE(mhi->start(0));
	ASSERT_TRUE(mhi->start(1));
	mhi->queue_dl(1, 64, 4);

	ASSERT_TRUE(dev->mhi().enter_m1());
	mhi->settle();
	EXPECT_EQ(mhi->states.back(), static_cast<uint8_t>(regs::MhiState::M1));
	mhi->set_state(regs::MhiState::M2); // what mhi_pm_m1_transition() does
	mhi->settle();
	EXPECT_EQ(mhi->r(regs::MHISTATUS) >> 8, static_cast<uint32_t>(regs::MhiState::M2));
	EXPECT_EQ(mhi->states.back(), static_cast<uint8_t>(regs::MhiState::M1)) << "no event for M2";

	// Deasserting wake (0 on channel 127) lets it rest; asserting it (1)
	// brings it back, with an M0 event.
	mhi->ring(regs::kChdbBase + 8 * 127, 0);
	mhi->settle();
	EXPECT_EQ(mhi->r(regs::MHISTATUS) >> 8, static_cast<uint32_t>(regs::MhiState::M2));
	mhi->ring(regs::kChdbBase + 8 * 127, 1);
	mhi->settle();
	EXPECT_EQ(mhi->states.back(), kStateM0);
	EXPECT_EQ(mhi->r(regs::MHISTATUS) >> 8, uint32_t{kStateM0});
	const std::vector<uint8_t> a(3, 0x77);
	mhi->send(0, a);
	EXPECT_EQ(mhi->pop(1), a);

	// So does a channel's own doorbell, which is then served.
	ASSERT_TRUE(dev->mhi().enter_m1());
	mhi->settle();
	mhi->set_state(regs::MhiState::M2);
	mhi->send(0, a);
	EXPECT_EQ(mhi->states.back(), kStateM0);
	EXPECT_EQ(mhi->pop(1), a);
	EXPECT_EQ(host.errors.size(), 1u) << host.errors.back();
}

BOOT_TEST(SblKeepingTimesyncBuffer, SblStartsAmssOnlyOnceTheHostPostedItsTimesyncBufferAgain)
{
	// Upstream's boot time-sync client gives a buffer back from a work
	// item, after it read the message, and oopses if the channel is torn
	// down before that work item runs: the SBL's handover right after its
	// ACK must wait until the ACK's buffer is posted again.
	ASSERT_TRUE(has(all_log, "time synchronised with the host"));
	ASSERT_TRUE(has(all_log, "starting AMSS")) << all_log.size() << " lines";
	ASSERT_EQ(ts_other.size(), 1u);
	EXPECT_EQ(ts_other[0][5], 2) << "ACK_TO_HOST after the sync";
	EXPECT_FALSE(entered_amss()) << "the ACK's buffer is not back yet: still in SBL";
	EXPECT_EQ(dev->mhi().dl_unreturned(21), 1u);
	mhi->queue_dl(21, 8);
	mhi->settle();
	EXPECT_TRUE(entered_amss());
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

BOOT_TEST(SblWithoutTimesyncClient, SblWaitsForATimesyncClientThatStartsAfterTheImagesAreIn)
{
	ASSERT_TRUE(has(all_log, "all images loaded"));
	ASSERT_FALSE(entered_amss()) << "AMSS before the host's time-sync client was up";
	EXPECT_EQ(host.deadline, Sbl::kClientStartGraceNs) << "woken when the wait for the client ends";
	host.clock_ns += 3'000'000'000; // three seconds later the client starts
	ASSERT_NO_FATAL_FAILURE(start_timesync());
	run_sbl();
	EXPECT_TRUE(has(all_log, "time synchronised with the host"));
	EXPECT_TRUE(entered_amss());
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

BOOT_TEST(SblWithoutTimesyncClient, SblStartsAmssWithoutTimeSyncWhenNoClientStarts)
{
	ASSERT_FALSE(entered_amss());
	mhi->fire_timer();
	const auto last = bootlog(); // what the SBL said before it left
	all_log.insert(all_log.end(), last.begin(), last.end());
	EXPECT_TRUE(entered_amss());
	EXPECT_TRUE(has(all_log, "no time sync: the host did not start QAIC_TIMESYNC within 10 s"));
	EXPECT_FALSE(has(all_log, "time synchronised with the host"));
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

BOOT_TEST(SblWithoutLogClient, SblWaitsForALogClientThatStartsAfterTheImagesAreIn)
{
	ASSERT_TRUE(traced("all images loaded"));
	ASSERT_TRUE(has(all_log, "time synchronised with the host") || traced("time synchronised with the host"));
	ASSERT_FALSE(entered_amss()) << "AMSS before the host's logging client was up: its boot log is lost";
	EXPECT_EQ(host.deadline, Sbl::kClientStartGraceNs) << "woken when the wait for the client ends";
	host.clock_ns += 3'000'000'000; // three seconds later the client starts
	ASSERT_NO_FATAL_FAILURE(start_logging());
	mhi->settle();
	const auto sent = bootlog(); // the SBL may leave as soon as they are read
	all_log.insert(all_log.end(), sent.begin(), sent.end());
	run_sbl();
	// The whole log, from the SBL's first line: it was kept for the client.
	EXPECT_TRUE(has(all_log, "SBL: sbl 1.0.0.1 started"));
	EXPECT_TRUE(has(all_log, "all images loaded"));
	EXPECT_TRUE(entered_amss());
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

BOOT_TEST(SblWithoutLogClient, SblStartsAmssWithoutItsLogClientWhenNoneStarts)
{
	ASSERT_FALSE(entered_amss());
	mhi->fire_timer();
	mhi->settle();
	EXPECT_TRUE(entered_amss()) << "the SBL must not wait for ever for a client that never comes";
	EXPECT_TRUE(traced("the host did not start QAIC_LOGGING within 10 s"));
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

BOOT_TEST(SblKeepingTimesyncBuffer, SblStopsWaitingForItsTimesyncBufferAfterTheGracePeriod)
{
	ASSERT_EQ(ts_other.size(), 1u);
	ASSERT_FALSE(entered_amss());
	EXPECT_EQ(host.deadline, Sbl::kHandoverGraceNs) << "the SBL asked to be woken when its grace ends";
	mhi->fire_timer();
	mhi->settle();
	EXPECT_TRUE(entered_amss());
}

BOOT_TEST(CardAtPbl, TimesyncHoldSendsTheRequestAsTheSblHandsOver)
{
	// "timesync hold release=handover": no request while the SBL runs, no
	// wait for time sync, and the request lands in the host's buffer just
	// before the EE change, so the host's client is removed with it unread.
	ASSERT_EQ(dev->inject("timesync hold release=handover"), "");
	mhi->keep_buffers = {21};
	boot_to_sbl();
	for (int i = 0; i < 200 && !entered_amss(); i++) {
		EXPECT_TRUE(mhi->rx[21].empty()) << "a time request before the handover";
		serve_sahara();
		auto lines = bootlog();
		all_log.insert(all_log.end(), lines.begin(), lines.end());
		mhi->settle();
	}
	ASSERT_TRUE(entered_amss()) << "no wait for time sync";
	auto request = mhi->pop(21);
	ASSERT_EQ(request.size(), 8u);
	EXPECT_EQ(request[5], 0) << "CMD_TO_HOST";
	EXPECT_TRUE(mhi->pop(21).empty());
	EXPECT_FALSE(has(all_log, "time synchronised with the host"));
	EXPECT_TRUE(has(all_log, "time sync request held by test injection"));
	EXPECT_FALSE(dev->boot().sbl().timesync_held()) << "one release per arming";
	EXPECT_FALSE(dev->mhi().channel_running(21)) << "the channel went with the SBL";
}

// ---- what the card holds of its firmware (issue 37, finding 5) ----

// The largest firmware the format allows, 16 images of 64 MiB: the card
// holds one copy of it from the Sahara transfer into AMSS. (The SBL kept
// its images past the handover, the handover copied them and the QSM took
// a copy of its own: 3 GiB held.)
BOOT_TEST(CardAtPbl, TheLargestImagesTheFormatAllowsAreHeldOnce)
{
	if (!kResidentSizeMeansCopies)
		GTEST_SKIP() << "ThreadSanitizer's shadow hides what the card holds";
	use_largest_images(fw::kMaxManifestImages);
	const uint64_t payload = payload_bytes();
	ResidentMemory rss;
	if (!rss.start())
		GTEST_SKIP() << "this kernel cannot reset the peak resident size";
	ASSERT_NO_FATAL_FAILURE(boot());
	ASSERT_TRUE(entered_amss());
	std::printf("[  memory  ] %llu MiB of images: card at its peak %llu MiB, in AMSS %llu MiB; process peak %llu MiB\n",
		    static_cast<unsigned long long>(payload / kMiB),
		    static_cast<unsigned long long>(rss.peak_growth() / kMiB),
		    static_cast<unsigned long long>(rss.growth() / kMiB),
		    static_cast<unsigned long long>(rss.peak() / kMiB));
	EXPECT_GE(rss.growth(), payload - payload / 16) << "the images are in memory: the measure sees them";
	EXPECT_LE(rss.peak_growth(), one_copy_limit(payload)) << "at the peak, through the handover";
	EXPECT_LE(rss.growth(), one_copy_limit(payload)) << "in AMSS";
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

// After AMSS fails, its RAM dump shows the images AMSS ran from without a
// copy of its own, and the SBL's next fetch does not keep the old images
// beside the new ones. Four images of the largest size: the pages of each
// are mapped and unmapped whole, and the boot is four times shorter.
BOOT_TEST(CardAtPbl, ARamDumpAndTheNextFetchKeepNoSecondCopyOfTheImages)
{
	if (!kResidentSizeMeansCopies)
		GTEST_SKIP() << "ThreadSanitizer's shadow hides what the card holds";
	use_largest_images(4);
	takes_dumps = false; // read through the fake host's memory, 1 GiB would not fit
	const uint64_t payload = payload_bytes();
	ResidentMemory rss;
	if (!rss.start())
		GTEST_SKIP() << "this kernel cannot reset the peak resident size";
	ASSERT_NO_FATAL_FAILURE(boot());
	ASSERT_TRUE(entered_amss());
	ASSERT_NO_FATAL_FAILURE(sys_err());
	ASSERT_TRUE(dev->boot().dump_pending());
	const uint64_t with_dump = rss.growth();
	EXPECT_LE(with_dump, one_copy_limit(payload)) << "the RAM dump recorded";

	host_resets_mhi();
	ASSERT_NO_FATAL_FAILURE(sbl_handshake());
	for (int i = 0; i < 10; i++) {
		serve_sahara();
		mhi->settle();
	}
	ASSERT_EQ(dump_hellos_ignored, 1u);
	mhi->fire_timer(); // the SBL withdraws the dump
	run_sbl();
	ASSERT_TRUE(entered_amss());
	EXPECT_FALSE(dev->boot().dump_pending());
	std::printf("[  memory  ] %llu MiB of images: card with the RAM dump %llu MiB, at its peak through the "
		    "failure and the next fetch %llu MiB\n",
		    static_cast<unsigned long long>(payload / kMiB), static_cast<unsigned long long>(with_dump / kMiB),
		    static_cast<unsigned long long>(rss.peak_growth() / kMiB));
	EXPECT_GE(rss.growth(), payload - payload / 16) << "the images are in memory: the measure sees them";
	EXPECT_LE(rss.peak_growth(), one_copy_limit(payload)) << "at the peak, through the failure and the next fetch";
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

} // namespace
} // namespace aic100::test
