// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/dma_bridge.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>

#include "aic100/aic100_core.h"
#include "fake_host.h"

namespace aic100 {
namespace {

using namespace regs;

class DmaBridgeTest : public ::testing::Test {
protected:
	static uint32_t reg(unsigned dbc, uint32_t r) { return kDbcBase + dbc * kDbcStride + r; }
	uint32_t rd(uint32_t off) { return static_cast<uint32_t>(dbr.read(off, 4)); }

	test::FakeHost host;
	Ddr ddr{64 << 20};
	DmaBridge dbr{host, ddr};
};

TEST_F(DmaBridgeTest, AllPointersStartAtZero)
{
	for (unsigned i = 0; i < kNumDbc; i++)
		for (uint32_t r : {DBC_REQHP, DBC_REQTP, DBC_RSPHP, DBC_RSPTP})
			EXPECT_EQ(rd(reg(i, r)), 0u);
}

TEST_F(DmaBridgeTest, HostOwnedPointersAreWritablePerChannel)
{
	dbr.write(reg(3, DBC_REQTP), 7, 4);
	dbr.write(reg(3, DBC_RSPHP), 5, 4);
	EXPECT_EQ(rd(reg(3, DBC_REQTP)), 7u);
	EXPECT_EQ(rd(reg(3, DBC_RSPHP)), 5u);
	EXPECT_EQ(rd(reg(2, DBC_REQTP)), 0u);
	EXPECT_EQ(rd(reg(4, DBC_RSPHP)), 0u);
	EXPECT_TRUE(host.errors.empty());
}

TEST_F(DmaBridgeTest, DeviceOwnedPointersRefuseHostWrites)
{
	dbr.write(reg(0, DBC_REQHP), 9, 4);
	dbr.write(reg(15, DBC_RSPTP), 9, 4);
	EXPECT_EQ(rd(reg(0, DBC_REQHP)), 0u);
	EXPECT_EQ(rd(reg(15, DBC_RSPTP)), 0u);
	EXPECT_EQ(host.errors.size(), 2u);
}

TEST_F(DmaBridgeTest, ReservedSpaceReadsZeroAndIgnoresWrites)
{
	for (uint32_t off : {0u, 0x1FFFCu, reg(0, 0x10), reg(15, 0xFFC), kDbcBase + kNumDbc * kDbcStride,
			     static_cast<uint32_t>(kBar2Size - 4)}) {
		dbr.write(off, 0xFFFFFFFF, 4);
		EXPECT_EQ(rd(off), 0u) << std::hex << off;
	}
	EXPECT_EQ(host.errors.size(), 6u);
}

TEST_F(DmaBridgeTest, ResetClearsEveryChannel)
{
	dbr.write(reg(9, DBC_REQTP), 1, 4);
	dbr.reset();
	EXPECT_EQ(rd(reg(9, DBC_REQTP)), 0u);
}

// ---- the request engine --------------------------------------------------

constexpr uint64_t kReq = 0x10000, kRsp = 0x20000, kHostBuf = 0x40000;
constexpr uint64_t kWinLo = 0x100000, kWinHi = 0x200000;

struct Req {
	uint16_t req_id = 0;
	uint8_t seq_id = 0;
	uint8_t cmd = 0;
	uint32_t r0 = 0;
	uint64_t src = 0, dest = 0;
	uint32_t len = 0, r1 = 0;
	uint64_t db_addr = 0;
	uint8_t db_len = 0, r2[3] = {};
	uint32_t db_data = 0;
	uint32_t sem[4] = {};
};
static_assert(sizeof(Req) == 64);

uint32_t sem(unsigned op, unsigned idx, unsigned val, bool presync)
{
	return (1u << 31) | (op << 24) | (presync ? 1u << 22 : 0) | (idx << 16) | val;
}

class DbcEngineTest : public DmaBridgeTest {
protected:
	static constexpr unsigned kDbc = 2;
	static constexpr uint32_t kN = 8;
	void SetUp() override { dbr.activate(kDbc, {kReq, kRsp, kN, kWinLo, kWinHi}); }

	// Queues requests at the host's tail and rings the doorbell.
	void submit(std::initializer_list<Req> reqs)
	{
		uint32_t tail = rd(reg(kDbc, DBC_REQTP));
		for (const Req &r : reqs) {
			host.poke(kReq + tail * 64, &r, 64);
			tail = (tail + 1) % kN;
		}
		dbr.write(reg(kDbc, DBC_REQTP), tail, 4);
		dbr.process();
	}
	std::vector<std::pair<uint16_t, uint16_t>> responses()
	{
		std::vector<std::pair<uint16_t, uint16_t>> out;
		uint32_t head = rd(reg(kDbc, DBC_RSPHP));
		const uint32_t tail = rd(reg(kDbc, DBC_RSPTP));
		while (head != tail) {
			uint16_t e[2];
			host.peek(kRsp + head * 4, e, 4);
			out.emplace_back(e[0], e[1]);
			head = (head + 1) % kN;
		}
		dbr.write(reg(kDbc, DBC_RSPHP), head, 4);
		return out;
	}
	static Req to_dev(uint16_t id, uint64_t src, uint64_t dest, uint32_t len)
	{
		Req r;
		r.req_id = id;
		r.cmd = 0x10 | 0x08 | 1;
		r.src = src;
		r.dest = dest;
		r.len = len;
		return r;
	}
};

TEST_F(DbcEngineTest, BulkTransfersBothWaysWithAResponse)
{
	std::vector<uint8_t> in(3000);
	for (size_t i = 0; i < in.size(); i++)
		in[i] = static_cast<uint8_t>(i * 7);
	host.dma_write(kHostBuf, in.data(), in.size());
	submit({to_dev(41, kHostBuf, kWinLo + 64, 3000)});
	std::vector<uint8_t> got(3000);
	ddr.read(kWinLo + 64, got);
	EXPECT_EQ(got, in);
	EXPECT_EQ(rd(reg(kDbc, DBC_REQHP)), 1u);
	EXPECT_EQ(responses(), (std::vector<std::pair<uint16_t, uint16_t>>{{41, 0}}));
	EXPECT_EQ(host.msis, std::vector<unsigned>{kDbc + 1}) << "DBC i on vector i+1";

	Req out;
	out.req_id = 42;
	out.cmd = 0x10 | 0x08 | 2;
	out.src = kWinLo + 64;
	out.dest = kHostBuf + 0x10000;
	out.len = 3000;
	submit({out});
	std::vector<uint8_t> back(3000);
	host.dma_read(kHostBuf + 0x10000, back.data(), back.size());
	EXPECT_EQ(back, in);
	EXPECT_EQ(responses(), (std::vector<std::pair<uint16_t, uint16_t>>{{42, 0}}));
	EXPECT_EQ(dbr.stats(kDbc).bytes_in, 3000u);
	EXPECT_EQ(dbr.stats(kDbc).bytes_out, 3000u);
}

TEST_F(DbcEngineTest, TimesItsCopiesAndEachRequestOnTheDeviceClock)
{
	// Every DMA of the card takes 1 µs of device time here: the request
	// fetch, each 64 KiB quantum of data, the response.
	host.on_dma = [this] { host.clock_ns += 1000; };
	submit({to_dev(1, kHostBuf, kWinLo, 4 * DmaBridge::kQuantum)});
	ASSERT_EQ(responses(), (std::vector<std::pair<uint16_t, uint16_t>>{{1, 0}}));
	EXPECT_EQ(dbr.stats(kDbc).copy_ns_in, 4000u) << "four quanta";
	EXPECT_EQ(dbr.stats(kDbc).copy_ns_out, 0u);
	EXPECT_EQ(dbr.stats(kDbc).request_ns, 4000u) << "from the fetch to the end, the response not included";

	Req out = to_dev(2, kWinLo, kHostBuf, 3000);
	out.cmd = 0x10 | 0x08 | 2;
	host.clock_ns += 50'000; // idle time between requests counts nowhere
	submit({out});
	ASSERT_EQ(responses(), (std::vector<std::pair<uint16_t, uint16_t>>{{2, 0}}));
	EXPECT_EQ(dbr.stats(kDbc).copy_ns_out, 1000u);
	EXPECT_EQ(dbr.stats(kDbc).request_ns, 5000u);
}

TEST_F(DbcEngineTest, TimesTheWaitFromADoorbellToTheFetch)
{
	const Req first = to_dev(1, kHostBuf, kWinLo, 16), second = to_dev(2, kHostBuf, kWinLo, 16);
	host.clock_ns = 10'000;
	host.poke(kReq, &first, 64);
	dbr.write(reg(kDbc, DBC_REQTP), 1, 4);
	host.clock_ns += 7000; // the event loop gets to it later
	host.poke(kReq + 64, &second, 64);
	dbr.write(reg(kDbc, DBC_REQTP), 2, 4); // a second doorbell before the fetch: the first one counts
	host.clock_ns += 3000;
	dbr.process();
	ASSERT_EQ(responses().size(), 2u);
	EXPECT_EQ(dbr.stats(kDbc).doorbells, 1u);
	EXPECT_EQ(dbr.stats(kDbc).doorbell_ns, 10'000u);
	dbr.write(reg(kDbc, DBC_RSPHP), rd(reg(kDbc, DBC_RSPTP)), 4); // not a doorbell
	dbr.process();
	EXPECT_EQ(dbr.stats(kDbc).doorbells, 1u);
}

TEST_F(DbcEngineTest, SingleMsiModeUsesVectorZero)
{
	host.vectors = 1;
	submit({to_dev(1, kHostBuf, kWinLo, 16)});
	EXPECT_EQ(host.msis, std::vector<unsigned>{0});
}

TEST_F(DbcEngineTest, BadRequestsGetAnErrorResponse)
{
	Req illegal = to_dev(1, kHostBuf, kWinLo, 16);
	illegal.cmd = 0x10 | 3;
	Req outside = to_dev(2, kHostBuf, kWinHi - 8, 16);
	Req host_fault = to_dev(3, host.mem_limit - 4, kWinLo, 16);
	Req unaligned = to_dev(4, kHostBuf, kWinLo, 16);
	unaligned.db_len = 0x80; // 32-bit doorbell
	unaligned.db_addr = kWinLo + 2;
	Req two_pre = to_dev(5, kHostBuf, kWinLo, 16);
	two_pre.sem[0] = sem(2, 1, 1, true);
	two_pre.sem[1] = sem(2, 2, 1, true);
	Req post_wait = to_dev(6, kHostBuf, kWinLo, 16);
	post_wait.sem[0] = sem(4, 1, 1, false);
	submit({illegal, outside, host_fault, unaligned, two_pre, post_wait});
	EXPECT_EQ(responses(), (std::vector<std::pair<uint16_t, uint16_t>>{
				       {1, DmaBridge::kIllegalTransfer},
				       {2, DmaBridge::kOutsideWindow},
				       {3, DmaBridge::kHostDmaFault},
				       {4, DmaBridge::kUnalignedDoorbell},
				       {5, DmaBridge::kTwoPresyncs},
				       {6, DmaBridge::kBadSemaphore}}));
	EXPECT_EQ(dbr.stats(kDbc).errors, 6u);
	EXPECT_EQ(host.msis.size(), 1u) << "one interrupt for the FIFO going non-empty";
}

TEST_F(DbcEngineTest, LinkedListTransfersFollowTheirDescriptors)
{
	struct Desc {
		uint64_t host, dev;
		uint32_t len, reserved;
		uint64_t next;
	};
	constexpr uint64_t kList = 0x60000;
	// Three pieces gathered from scattered host buffers into one place.
	const Desc d[3] = {{kHostBuf, kWinLo, 4, 0, kList + 32},
			   {kHostBuf + 0x100, kWinLo + 4, 4, 0, kList + 64},
			   {kHostBuf + 0x200, kWinLo + 8, 4, 0, 0}};
	host.dma_write(kList, d, sizeof(d));
	host.dma_write(kHostBuf, "abcd", 4);
	host.dma_write(kHostBuf + 0x100, "efgh", 4);
	host.dma_write(kHostBuf + 0x200, "ijkl", 4);
	Req r;
	r.req_id = 9;
	r.cmd = 0x10 | 1; // to device, bulk bit clear: linked list
	r.src = kList;
	r.len = 16;       // at most 16 descriptors
	submit({r});
	char got[13] = {};
	ddr.read(kWinLo, std::span(reinterpret_cast<uint8_t *>(got), 12));
	EXPECT_STREQ(got, "abcdefghijkl");
	EXPECT_EQ(responses(), (std::vector<std::pair<uint16_t, uint16_t>>{{9, 0}}));

	// A list that loops forever is cut off with an error; one that leaves
	// the window fails like a bulk transfer would.
	const Desc loop{kHostBuf, kWinLo, 4, 0, kList + 0x100};
	host.dma_write(kList + 0x100, &loop, sizeof(loop));
	Req lr = r;
	lr.req_id = 10;
	lr.src = kList + 0x100;
	lr.len = 1000;
	const Desc out{kHostBuf, kWinHi, 4, 0, 0};
	host.dma_write(kList + 0x200, &out, sizeof(out));
	Req orr = r;
	orr.req_id = 11;
	orr.src = kList + 0x200;
	submit({lr, orr});
	EXPECT_EQ(responses(), (std::vector<std::pair<uint16_t, uint16_t>>{{10, DmaBridge::kBadList},
									     {11, DmaBridge::kOutsideWindow}}));
}

TEST_F(DbcEngineTest, DoorbellsOfEachWidth)
{
	Req r8, r16, r32;
	for (Req *r : {&r8, &r16, &r32})
		r->cmd = 0x10 | 0x08;
	r8.db_len = 0x82;
	r8.db_addr = kWinLo + 1;
	r8.db_data = 0x1AB;
	r16.db_len = 0x81;
	r16.db_addr = kWinLo + 4;
	r16.db_data = 0x12345;
	r32.db_len = 0x80;
	r32.db_addr = kWinLo + 8;
	r32.db_data = 0xCAFEF00D;
	submit({r8, r16, r32});
	uint8_t b[12] = {};
	ddr.read(kWinLo, b);
	EXPECT_EQ(b[1], 0xAB);
	EXPECT_EQ(b[0], 0);
	EXPECT_EQ(b[2], 0) << "an 8-bit doorbell writes one byte";
	uint16_t h;
	std::memcpy(&h, b + 4, 2);
	EXPECT_EQ(h, 0x2345);
	uint32_t w;
	std::memcpy(&w, b + 8, 4);
	EXPECT_EQ(w, 0xCAFEF00Du);
	EXPECT_EQ(responses().size(), 3u);
}

TEST_F(DbcEngineTest, PresyncWaitHoldsTheQueueUntilTheSemaphoreMoves)
{
	Req r = to_dev(7, kHostBuf, kWinLo, 16);
	r.sem[0] = sem(5, 3, 2, true);  // wait until sem3 >= 2
	r.sem[1] = sem(2, 4, 1, false); // then sem4 += 1
	submit({r, to_dev(8, kHostBuf, kWinLo, 16)});
	EXPECT_EQ(rd(reg(kDbc, DBC_REQHP)), 0u) << "held by the presync";
	EXPECT_TRUE(responses().empty());
	Semaphores &s = dbr.semaphores(kDbc);
	s.apply(3, Semaphores::Op::Inc, 1);
	dbr.process();
	EXPECT_EQ(rd(reg(kDbc, DBC_REQHP)), 0u);
	const unsigned kicks = host.kicks;
	s.apply(3, Semaphores::Op::Inc, 1); // an NSP signals
	EXPECT_GT(host.kicks, kicks) << "a semaphore change schedules the DBC";
	dbr.process();
	EXPECT_EQ(rd(reg(kDbc, DBC_REQHP)), 2u);
	EXPECT_EQ(s.value(4), 1u);
	EXPECT_EQ(responses(), (std::vector<std::pair<uint16_t, uint16_t>>{{7, 0}, {8, 0}}));
}

// ---- overlapping requests and DMA fences ---------------------------------

constexpr uint32_t kFenceToDev = 1u << 30, kFenceFromDev = 1u << 29;
constexpr uint64_t kBigZeroes = 0x10000000; // host memory that reads as zeros

using Responses = std::vector<std::pair<uint16_t, uint16_t>>;

TEST_F(DbcEngineTest, WithoutAFenceAShortRequestEndsBeforeALongerOneQueuedFirst)
{
	host.zero_from = kBigZeroes;
	const uint32_t big = 4 * DmaBridge::kQuantum;
	submit({to_dev(1, kBigZeroes, kWinLo, big), to_dev(2, kHostBuf, kWinLo + big, 16)});
	EXPECT_EQ(responses(), (Responses{{2, 0}, {1, 0}})) << "the transfers overlap";
}

TEST_F(DbcEngineTest, AToDeviceFenceHoldsARequestUntilEarlierToDeviceTransfersAreComplete)
{
	host.zero_from = kBigZeroes;
	const uint32_t big = 4 * DmaBridge::kQuantum;
	Req fenced = to_dev(2, kHostBuf, kWinLo + big, 16);
	fenced.sem[0] = kFenceToDev; // no command: as qaic fences a slice's last request
	submit({to_dev(1, kBigZeroes, kWinLo, big), fenced});
	EXPECT_EQ(responses(), (Responses{{1, 0}, {2, 0}}));
}

TEST_F(DbcEngineTest, AFenceWaitsOnlyForTransfersOfItsDirection)
{
	host.zero_from = kBigZeroes;
	const uint32_t big = 4 * DmaBridge::kQuantum;
	Req out;
	out.req_id = 1;
	out.cmd = 0x10 | 0x08 | 2;
	out.src = kWinLo;
	out.dest = kBigZeroes - big; // ordinary (byte-map) host memory below the zeros
	out.len = big;
	Req to_fenced = to_dev(2, kHostBuf, kWinLo + big, 16);
	to_fenced.sem[1] = kFenceToDev;
	submit({out, to_fenced});
	EXPECT_EQ(responses(), (Responses{{2, 0}, {1, 0}})) << "no to-device transfer to wait for";
	Req from_fenced = to_dev(3, kHostBuf, kWinLo + big, 16);
	from_fenced.sem[2] = kFenceFromDev;
	out.req_id = 4;
	submit({out, from_fenced});
	EXPECT_EQ(responses(), (Responses{{4, 0}, {3, 0}})) << "held behind the from-device transfer";
}

// What a missing fence costs: a read-back queued behind the write of the
// same DDR reads what was there before.
TEST_F(DbcEngineTest, AnUnfencedReadBackSeesStaleDataAndAFencedOneTheNewData)
{
	host.zero_from = kBigZeroes;
	const uint32_t big = 4 * DmaBridge::kQuantum;
	const uint64_t tail = kWinLo + big - 16;
	std::vector<uint8_t> stale(16, 0xEE);
	for (bool fence : {false, true}) {
		ASSERT_TRUE(ddr.write(tail, stale));
		Req back;
		back.req_id = 2;
		back.cmd = 0x10 | 0x08 | 2;
		back.src = tail;
		back.dest = kHostBuf;
		back.len = 16;
		back.sem[0] = fence ? kFenceToDev : 0;
		submit({to_dev(1, kBigZeroes, kWinLo, big), back});
		std::vector<uint8_t> got(16);
		host.peek(kHostBuf, got.data(), got.size());
		EXPECT_EQ(got, fence ? std::vector<uint8_t>(16, 0) : stale) << (fence ? "fenced" : "unfenced");
		responses();
	}
}

TEST_F(DbcEngineTest, RequestsWithAPresyncTransferOneAfterTheOther)
{
	host.zero_from = kBigZeroes;
	const uint32_t big = 4 * DmaBridge::kQuantum;
	Req first = to_dev(1, kBigZeroes, kWinLo, big), second = to_dev(2, kHostBuf, kWinLo + big, 16);
	first.sem[0] = sem(5, 3, 0, true); // wait until sem3 >= 0: at once
	second.sem[0] = sem(5, 3, 0, true);
	submit({first, second});
	EXPECT_EQ(responses(), (Responses{{1, 0}, {2, 0}}));
}

// The postsync of a request that waits for a response slot still comes
// before the next presync request looks at the semaphore.
TEST_F(DbcEngineTest, APresyncSeesTheEarlierPresyncRequestsPostsyncEvenWhenItsResponseWaited)
{
	Semaphores &s = dbr.semaphores(kDbc);
	s.apply(5, Semaphores::Op::Init, 1);
	std::vector<Req> fill;
	for (uint16_t id = 0; id < kN - 1; id++)
		fill.push_back(to_dev(id, kHostBuf, kWinLo, 8));
	uint32_t tail = 0;
	for (const Req &r : fill) {
		host.poke(kReq + tail * 64, &r, 64);
		tail = (tail + 1) % kN;
	}
	dbr.write(reg(kDbc, DBC_REQTP), tail, 4);
	dbr.process();
	ASSERT_EQ(rd(reg(kDbc, DBC_RSPTP)), kN - 1) << "the response FIFO is full";

	Req a = to_dev(50, kHostBuf, kWinLo, 8), b = to_dev(51, kHostBuf, kWinLo, 8);
	a.sem[0] = b.sem[0] = sem(6, 5, 0, true); // wait until sem5 > 0
	a.sem[1] = sem(3, 5, 1, false);            // then sem5 -= 1
	submit({a, b});
	EXPECT_EQ(responses().size(), kN - 1);
	dbr.process();
	EXPECT_EQ(responses(), (Responses{{50, 0}})) << "b waits for a semaphore a took";
	EXPECT_EQ(s.value(5), 0u);
	EXPECT_EQ(rd(reg(kDbc, DBC_REQHP)), (tail + 1) % kN) << "b has not started";
}

TEST_F(DbcEngineTest, NoMoreThanTheEnginesRequestsAreStartedAtOnce)
{
	// Requests that wait on a full response FIFO keep their engines: with
	// the FIFO full, the DBC takes kEngines requests and no more.
	std::vector<Req> reqs;
	for (uint16_t id = 0; id < kN - 1; id++)
		reqs.push_back(to_dev(id, kHostBuf, kWinLo, 8));
	uint32_t tail = 0;
	for (const Req &r : reqs) {
		host.poke(kReq + tail * 64, &r, 64);
		tail = (tail + 1) % kN;
	}
	dbr.write(reg(kDbc, DBC_REQTP), tail, 4);
	dbr.process();
	ASSERT_EQ(rd(reg(kDbc, DBC_RSPTP)), kN - 1) << "the response FIFO is full";
	dbr.write(reg(kDbc, DBC_REQTP), (tail + DmaBridge::kEngines + 1) % kN, 4);
	for (unsigned k = 0; k <= DmaBridge::kEngines; k++) {
		const Req r = to_dev(uint16_t(100 + k), kHostBuf, kWinLo, 8);
		host.poke(kReq + ((tail + k) % kN) * 64, &r, 64);
	}
	dbr.process();
	EXPECT_EQ(rd(reg(kDbc, DBC_REQHP)), (tail + DmaBridge::kEngines) % kN);
	EXPECT_EQ(responses().size(), kN - 1);
	dbr.process();
	EXPECT_EQ(rd(reg(kDbc, DBC_REQHP)), (tail + DmaBridge::kEngines + 1) % kN);
	EXPECT_EQ(responses().size(), DmaBridge::kEngines + 1);
}

TEST_F(DbcEngineTest, SemaphoreCommandsSaturate)
{
	Req r;
	r.cmd = 0;
	r.sem[0] = sem(1, 0, 0xFFE, false); // INIT 4094
	r.sem[1] = sem(2, 0, 5, false);     // INC past the top
	r.sem[2] = sem(3, 1, 9, false);     // DEC below zero
	submit({r});
	EXPECT_EQ(dbr.semaphores(kDbc).value(0), 0xFFFu);
	EXPECT_EQ(dbr.semaphores(kDbc).value(1), 0u);
}

TEST_F(DbcEngineTest, InterruptOnlyOnTheEmptyToNonEmptyEdgeOrWhenForced)
{
	submit({to_dev(1, kHostBuf, kWinLo, 8), to_dev(2, kHostBuf, kWinLo, 8)});
	EXPECT_EQ(host.msis.size(), 1u);
	submit({to_dev(3, kHostBuf, kWinLo, 8)});
	EXPECT_EQ(host.msis.size(), 1u) << "the host has not drained the FIFO";
	responses();
	submit({to_dev(4, kHostBuf, kWinLo, 8)});
	EXPECT_EQ(host.msis.size(), 2u);
	Req forced;
	forced.cmd = 0x80; // no response, force MSI
	submit({forced});
	EXPECT_EQ(host.msis.size(), 3u);
}

TEST_F(DbcEngineTest, FifosWrapAndAFullResponseFifoStalls)
{
	uint16_t id = 0;
	for (int round = 0; round < 5; round++) {
		submit({to_dev(id, kHostBuf, kWinLo, 8), to_dev(uint16_t(id + 1), kHostBuf, kWinLo, 8),
			to_dev(uint16_t(id + 2), kHostBuf, kWinLo, 8)});
		const auto r = responses();
		ASSERT_EQ(r.size(), 3u) << round;
		EXPECT_EQ(r[0].first, id);
		id += 3;
	}
	// Seven responses fill the 8-slot FIFO; the eighth request waits.
	submit({to_dev(100, kHostBuf, kWinLo, 8), to_dev(101, kHostBuf, kWinLo, 8), to_dev(102, kHostBuf, kWinLo, 8),
		to_dev(103, kHostBuf, kWinLo, 8), to_dev(104, kHostBuf, kWinLo, 8), to_dev(105, kHostBuf, kWinLo, 8),
		to_dev(106, kHostBuf, kWinLo, 8)});
	submit({});
	EXPECT_EQ((rd(reg(kDbc, DBC_RSPTP)) + kN - rd(reg(kDbc, DBC_RSPHP))) % kN, 7u);
	EXPECT_EQ(responses().size(), 7u);
}

TEST_F(DbcEngineTest, FreeingResponseSlotsSchedulesTheDbcOnlyWhenAFullFifoHeldIt)
{
	submit({to_dev(1, kHostBuf, kWinLo, 8)});
	unsigned kicks = host.kicks;
	ASSERT_EQ(responses().size(), 1u);
	EXPECT_EQ(host.kicks.load(), kicks) << "nothing waited for the slot: no work for the engine";

	// Seven responses fill the 8-slot FIFO and the eighth request waits.
	std::initializer_list<Req> eight = {to_dev(10, kHostBuf, kWinLo, 8), to_dev(11, kHostBuf, kWinLo, 8),
					    to_dev(12, kHostBuf, kWinLo, 8), to_dev(13, kHostBuf, kWinLo, 8),
					    to_dev(14, kHostBuf, kWinLo, 8), to_dev(15, kHostBuf, kWinLo, 8),
					    to_dev(16, kHostBuf, kWinLo, 8)};
	submit(eight);
	submit({to_dev(17, kHostBuf, kWinLo, 8)});
	ASSERT_EQ((rd(reg(kDbc, DBC_RSPTP)) + 1) % kN, rd(reg(kDbc, DBC_RSPHP))) << "the response FIFO is full";
	kicks = host.kicks;
	EXPECT_EQ(responses().size(), 7u);
	EXPECT_GT(host.kicks.load(), kicks) << "the held request may go on";
	dbr.process();
	const auto r = responses();
	ASSERT_EQ(r.size(), 1u);
	EXPECT_EQ(r[0].first, 17);
}

TEST_F(DbcEngineTest, PointersBeyondTheFifoAreRefused)
{
	dbr.write(reg(kDbc, DBC_REQTP), kN, 4);
	EXPECT_EQ(rd(reg(kDbc, DBC_REQTP)), 0u);
	EXPECT_EQ(host.errors.size(), 1u);
}

TEST_F(DbcEngineTest, DeactivationStopsTheChannel)
{
	Req r = to_dev(1, kHostBuf, kWinLo, 8);
	r.sem[0] = sem(4, 0, 1, true); // waits forever
	submit({r});
	dbr.deactivate(kDbc);
	EXPECT_FALSE(dbr.active(kDbc));
	dbr.semaphores(kDbc).apply(0, Semaphores::Op::Init, 1);
	dbr.process();
	EXPECT_EQ(rd(reg(kDbc, DBC_REQHP)), 0u);
	EXPECT_TRUE(host.msis.empty());
}

// ---- bounded work and the card's own DMA ---------------------------------

struct LinkedDesc {
	uint64_t host, dev;
	uint32_t len, reserved;
	uint64_t next;
};
static_assert(sizeof(LinkedDesc) == 32);
constexpr uint64_t kZeroes = 0x10000000; // host memory that reads as zeros

TEST_F(DbcEngineTest, ALinkedListMovesNoMoreThanTheByteBudgetPerPass)
{
	// One 1 MiB descriptor that names itself, followed 256 times: a pass of
	// the engine must stop at the budget however few descriptors that is.
	host.zero_from = kZeroes;
	constexpr uint64_t kSelf = 0x60000;
	const LinkedDesc d{kZeroes, kWinLo, 1u << 20, 0, kSelf};
	host.dma_write(kSelf, &d, sizeof(d));
	Req r;
	r.req_id = 5;
	r.cmd = 0x10 | 1; // to device, linked list
	r.src = kSelf;
	r.len = 256;
	submit({r});
	EXPECT_LE(host.dma_read_bytes, DmaBridge::kBudget);
	EXPECT_TRUE(responses().empty()) << "the request goes on in later passes";
	EXPECT_GT(host.kicks.load(), 0u) << "and asks for them";
	std::vector<std::pair<uint16_t, uint16_t>> got;
	for (int pass = 0; pass < 16 && got.empty(); pass++) {
		dbr.process();
		got = responses();
	}
	EXPECT_EQ(host.dma_read_bytes, 256ull << 20);
	EXPECT_EQ(got, (std::vector<std::pair<uint16_t, uint16_t>>{{5, DmaBridge::kBadList}}));
}

TEST(DbcBudgetTest, ABulkTransferLargerThanTheBudgetResumesWhereItStopped)
{
	test::FakeHost host;
	host.zero_from = kZeroes;
	Ddr ddr{256ull << 20};
	DmaBridge dbr{host, ddr};
	constexpr unsigned kDbc = 0;
	dbr.activate(kDbc, {kReq, kRsp, 4, 0, 192ull << 20});
	std::vector<uint8_t> marker(16, 0xEE);
	ASSERT_TRUE(ddr.write(100ull << 20, marker));
	Req r;
	r.req_id = 1;
	r.cmd = 0x10 | 0x08 | 1; // response, bulk, to device
	r.src = kZeroes;
	r.dest = 0;
	r.len = 100u << 20;
	host.dma_write(kReq, &r, sizeof(r));
	dbr.write(kDbcBase + kDbc * kDbcStride + DBC_REQTP, 1, 4);
	dbr.process();
	EXPECT_LE(host.dma_read_bytes, DmaBridge::kBudget);
	EXPECT_EQ(dbr.dbc(kDbc).rsp_tail, 0u);
	for (int pass = 0; pass < 4 && dbr.dbc(kDbc).rsp_tail == 0; pass++)
		dbr.process();
	ASSERT_EQ(dbr.dbc(kDbc).rsp_tail, 1u);
	uint16_t rsp[2];
	host.dma_read(kRsp, rsp, sizeof(rsp));
	EXPECT_EQ(rsp[1], DmaBridge::kOk);
	EXPECT_EQ(host.dma_read_bytes, 100ull << 20);
	std::vector<uint8_t> after(16);
	ASSERT_TRUE(ddr.read(100ull << 20, after));
	EXPECT_EQ(after, marker) << "not a byte beyond the transfer";
	EXPECT_EQ(dbr.stats(kDbc).bytes_in, 100ull << 20);
}

TEST_F(DbcEngineTest, ADbcStoppedByItsOwnDmaEndsTheRequestCleanly)
{
	// The request's DMA reaches back into the card and stops the channel
	// (as a transfer aimed at the card's BARs can): nothing more may touch
	// the old FIFOs, and nothing may divide by the cleared FIFO size.
	host.on_dma = [&] {
		host.on_dma = nullptr;
		dbr.deactivate(kDbc);
	};
	submit({to_dev(1, kHostBuf, kWinLo, 8)});
	EXPECT_FALSE(dbr.active(kDbc));
	EXPECT_EQ(rd(reg(kDbc, DBC_REQHP)), 0u);
	EXPECT_EQ(rd(reg(kDbc, DBC_RSPTP)), 0u);
	EXPECT_TRUE(host.msis.empty());
}

TEST_F(DbcEngineTest, ARequestOfAChannelHandedOverMidTransferTouchesNothingOfTheNewOwner)
{
	const uint64_t kNewRsp = 0x30000;
	int dmas = 0;
	host.on_dma = [&] {
		if (++dmas == 2) { // during the transfer itself
			dbr.deactivate(kDbc);
			dbr.activate(kDbc, {kReq, kNewRsp, kN, kWinLo, kWinHi});
		}
	};
	submit({to_dev(1, kHostBuf, kWinLo, 8)});
	host.on_dma = nullptr;
	EXPECT_TRUE(dbr.active(kDbc));
	EXPECT_EQ(rd(reg(kDbc, DBC_REQHP)), 0u);
	EXPECT_EQ(rd(reg(kDbc, DBC_RSPTP)), 0u);
	uint32_t word = 0xFFFFFFFF;
	host.dma_read(kNewRsp, &word, 4);
	EXPECT_EQ(word, 0u) << "no response in the new owner's FIFO";
}

// ---- the engine's DMA and the vCPUs, DMA aimed at device registers --------

TEST_F(DbcEngineTest, ABar2AccessFromAnotherThreadIsAnsweredWhileTheEnginesDmaWaits)
{
	// A DMA target may stop the VM and wait for every vCPU (pvpanic-pci with
	// -action panic=pause): a vCPU in a BAR2 access, which takes no BQL,
	// must not wait for the engine's DMA meanwhile. Bounded, so that the
	// old deadlock fails the test instead of hanging it.
	std::mutex m;
	std::condition_variable cv;
	bool answered = false, in_time = false;
	std::thread vcpu;
	host.on_dma = [&] {
		if (vcpu.joinable())
			return; // the first DMA only
		vcpu = std::thread([&] {
			(void)dbr.read(reg(kDbc, DBC_REQHP), 4);
			dbr.write(reg(kDbc, DBC_RSPHP), 0, 4);
			const std::lock_guard<std::mutex> hold(m);
			answered = true;
			cv.notify_all();
		});
		std::unique_lock<std::mutex> wait(m);
		in_time = cv.wait_for(wait, std::chrono::seconds(5), [&] { return answered; });
	};
	submit({to_dev(1, kHostBuf, kWinLo, 8)});
	vcpu.join();
	EXPECT_TRUE(in_time) << "the vCPU's BAR2 access waited for the engine's DMA";
	EXPECT_EQ(responses(), (std::vector<std::pair<uint16_t, uint16_t>>{{1, DmaBridge::kOk}}));
}

// A host whose bus addresses from kMmio up are device registers: QEMU
// makes one register access (a dispatch) for every 4 bytes there.
constexpr uint64_t kMmio = 0xE0000000;

class MmioHost : public test::FakeHost {
public:
	DmaExtent dma_extent(uint64_t addr, uint64_t len, bool) const override
	{
		if (addr >= kMmio)
			return {false, len};
		return {true, std::min(len, kMmio - addr)};
	}
	DmaStatus dma_read(uint64_t addr, void *buf, size_t len) override
	{
		if (addr < kMmio)
			return FakeHost::dma_read(addr, buf, len);
		dispatches += (len + 3) / 4;
		std::memset(buf, 0, len);
		return DmaStatus::Ok;
	}
	DmaStatus dma_write(uint64_t addr, const void *buf, size_t len) override
	{
		if (addr < kMmio)
			return FakeHost::dma_write(addr, buf, len);
		dispatches += (len + 3) / 4;
		return DmaStatus::Ok;
	}
	uint64_t dispatches = 0;
};

// At most this many dispatches in one pass: a few milliseconds of QEMU's.
constexpr uint64_t kMaxDispatchesPerPass = 16384;

TEST(DbcMmioTest, ATransferAimedAtDeviceRegistersMakesFewDispatchesAPass)
{
	MmioHost host;
	Ddr ddr{128ull << 20};
	DmaBridge dbr{host, ddr};
	dbr.activate(0, {kReq, kRsp, 4, 0, 64ull << 20});
	Req r;
	r.req_id = 1;
	r.cmd = 0x10 | 0x08 | 2; // response, bulk, from device
	r.src = 0;
	r.dest = kMmio;
	r.len = 64u << 20;
	host.poke(kReq, &r, sizeof(r));
	dbr.write(kDbcBase + DBC_REQTP, 1, 4);
	uint64_t passes = 0, most = 0;
	while (dbr.dbc(0).rsp_tail == 0 && passes < 100000) {
		const uint64_t before = host.dispatches;
		dbr.process();
		most = std::max(most, host.dispatches - before);
		passes++;
	}
	EXPECT_LE(most, kMaxDispatchesPerPass) << "in " << passes << " passes";
	ASSERT_EQ(dbr.dbc(0).rsp_tail, 1u) << "the transfer ends, in later passes";
	EXPECT_EQ(dbr.stats(0).bytes_out, 64ull << 20);
	uint16_t rsp[2];
	host.peek(kRsp, rsp, sizeof(rsp));
	EXPECT_EQ(rsp[1], DmaBridge::kOk);
}

TEST(DbcMmioTest, RequestsReadFromDeviceRegistersAreFewAPass)
{
	// A request FIFO in device registers reads as empty requests: each one
	// ends at once, so only the budget stops the pass.
	MmioHost host;
	Ddr ddr{64ull << 20};
	DmaBridge dbr{host, ddr};
	constexpr uint32_t kN = 1u << 20;
	dbr.activate(0, {kMmio, kRsp, kN, 0, 1 << 20});
	dbr.write(kDbcBase + DBC_REQTP, kN - 1, 4);
	dbr.process();
	EXPECT_LE(host.dispatches, kMaxDispatchesPerPass);
	EXPECT_GT(dbr.dbc(0).req_head, 0u);
	EXPECT_GT(host.kicks.load(), 0u) << "the rest in later passes";
}

TEST(DbcMmioTest, TransfersInRamKeepTheWholeBudget)
{
	// What a good host sees does not change: 64 MiB of RAM a pass.
	MmioHost host;
	host.zero_from = kZeroes;
	Ddr ddr{128ull << 20};
	DmaBridge dbr{host, ddr};
	dbr.activate(0, {kReq, kRsp, 4, 0, 128ull << 20});
	Req r;
	r.req_id = 1;
	r.cmd = 0x10 | 0x08 | 1;
	r.src = kZeroes;
	r.len = 100u << 20;
	host.poke(kReq, &r, sizeof(r));
	dbr.write(kDbcBase + DBC_REQTP, 1, 4);
	dbr.process();
	EXPECT_GE(host.dma_read_bytes, DmaBridge::kBudget - (64u << 10));
	EXPECT_EQ(host.dispatches, 0u);
}

// ---- guest errors through the C API (QEMU's path) -------------------------

struct LogHost {
	uint64_t now = 0;
	std::vector<std::string> lines;
};

Aic100Core *core_logging_to(LogHost &log)
{
	Aic100HostOps ops{};
	ops.dma_read = [](void *, uint64_t, void *, size_t) { return 1; };
	ops.dma_write = [](void *, uint64_t, const void *, size_t) { return 1; };
	ops.raise_msi = [](void *, unsigned) {};
	ops.msi_vectors_enabled = [](void *) { return 1u; };
	ops.now_ns = [](void *o) { return static_cast<LogHost *>(o)->now; };
	ops.guest_error = [](void *o, const char *m) { static_cast<LogHost *>(o)->lines.emplace_back(m); };
	ops.kick = [](void *) {};
	ops.arm_timer = [](void *, uint64_t) {};
	Aic100Config cfg;
	aic100_core_default_config(&cfg);
	cfg.ddr_size = 64ull << 20;
	return aic100_core_new(&cfg, &ops, &log, nullptr, 0);
}

TEST(GuestErrorLogTest, AFloodOfGuestErrorsLogsAFewLinesAndCountsTheRest)
{
	LogHost log;
	Aic100Core *core = core_logging_to(log);
	ASSERT_NE(core, nullptr);
	constexpr unsigned kFlood = 100000;
	for (unsigned n = 0; n < kFlood; n++)
		aic100_core_bar_write(core, 2, 0, n, 4); // reserved: a guest error each
	EXPECT_LE(log.lines.size(), GuestErrorLimit::kLines);
	ASSERT_FALSE(log.lines.empty());
	EXPECT_NE(log.lines[0].find("reserved"), std::string::npos) << log.lines[0];
	// Once the window is over, the next pass says how many were dropped.
	const size_t logged = log.lines.size();
	log.now += GuestErrorLimit::kWindowNs;
	aic100_core_process(core);
	ASSERT_EQ(log.lines.size(), logged + 1);
	EXPECT_NE(log.lines.back().find(std::to_string(kFlood - logged) + " more guest errors"), std::string::npos)
		<< log.lines.back();
	// And a new window logs again.
	aic100_core_bar_write(core, 2, 0, 0, 4);
	EXPECT_EQ(log.lines.size(), logged + 2);
	aic100_core_free(core);
}

} // namespace
} // namespace aic100
