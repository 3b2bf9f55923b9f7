// SPDX-License-Identifier: GPL-2.0-or-later
// The SBL's Sahara session on its own, in memory-debug mode (mode 2): the
// dump offered, the table and regions served exactly, every read or packet
// the card will not serve answered with END_OF_IMAGE and an error status,
// the host's RESET ending the dump, and the image transfer that follows
// (also when the host declines the dump or never answers the offer).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "aic100/firmware.h"
#include "aic100/ramdump.h"
#include "aic100/sahara.h"
#include "boot_images.h"
#include "packet_bytes.h"

namespace aic100::test {
namespace {

using namespace sahara;

std::vector<uint8_t> mem_read64(uint64_t addr, uint64_t len)
{
	std::vector<uint8_t> p = words({kMemRead64, kMemRead64Length}, kMemRead64Length);
	std::memcpy(p.data() + 8, &addr, 8);
	std::memcpy(p.data() + 16, &len, 8);
	return p;
}

std::vector<uint8_t> hello_resp(uint32_t mode, uint32_t status = 0)
{
	return words({kHelloResp, kHelloLength, kVersion, kVersion, status, mode}, kHelloLength);
}

class SaharaTest : public ::testing::Test, public SaharaTarget::Io {
protected:
	void SetUp() override
	{
		std::vector<uint8_t> text(300);
		for (size_t i = 0; i < text.size(); i++)
			text[i] = static_cast<uint8_t>('a' + i % 26);
		std::vector<uint8_t> big(0x12345);
		for (size_t i = 0; i < big.size(); i++)
			big[i] = static_cast<uint8_t>(i * 13 + 5);
		dump.add("crash summary", "summary.txt", text);
		dump.add("a big region", "big.bin", big);
	}
	void sahara_send(std::vector<uint8_t> packet) override { sent.push_back(std::move(packet)); }
	void sahara_log(const std::string &line) override { log.push_back(line); }
	void sahara_finished(bool ok) override { finished.push_back(ok); }
	void sahara_dump_ended(bool taken) override { ended.push_back(taken); }

	std::vector<uint8_t> take()
	{
		EXPECT_EQ(sent.size(), 1u) << "one answer per packet";
		if (sent.empty())
			return {};
		auto p = std::move(sent.front());
		sent.clear();
		return p;
	}
	// The card refused the last packet: END_OF_IMAGE with `status`.
	void expect_refused(uint32_t status, const std::string &what)
	{
		const auto p = take();
		ASSERT_EQ(p.size(), kEndOfImageLength) << what;
		EXPECT_EQ(word(p, 0), kEndOfImage) << what;
		EXPECT_EQ(word(p, 4), kEndOfImageLength) << what;
		EXPECT_EQ(word(p, 12), status) << what;
		EXPECT_TRUE(s.serving_dump()) << what << ": the dump goes on";
	}
	// HELLO in mode 2 answered; returns MEM_DEBUG64.
	std::vector<uint8_t> accept_offer()
	{
		s.start();
		auto h = take();
		EXPECT_EQ(word(h, 0), kHello);
		EXPECT_EQ(word(h, 8), kVersion);
		EXPECT_EQ(word(h, 20), kModeMemoryDebug);
		EXPECT_TRUE(s.offering_dump());
		s.receive(hello_resp(kModeMemoryDebug));
		EXPECT_TRUE(s.serving_dump());
		return take();
	}
	void expect_image_hello()
	{
		const auto h = take();
		EXPECT_EQ(word(h, 0), kHello);
		EXPECT_EQ(word(h, 20), kModeImageTxPending);
	}

	RamDump dump;
	SaharaTarget s{*this, {1}, &dump};
	std::vector<std::vector<uint8_t>> sent;
	std::vector<std::string> log;
	std::vector<bool> finished, ended;
};

TEST_F(SaharaTest, DumpOfferedTableAndRegionsServedThenResetStartsTheImageTransfer)
{
	const auto md = accept_offer();
	ASSERT_EQ(md.size(), kMemDebug64Length);
	EXPECT_EQ(word(md, 0), kMemDebug64);
	EXPECT_EQ(word(md, 4), kMemDebug64Length);
	EXPECT_EQ(dword(md, 8), RamDump::kTableAddress);
	EXPECT_EQ(dword(md, 16), 128u);

	// As upstream 7.3's client reads: the table in one go, then each
	// region in reads of at most 0xfff0 bytes.
	s.receive(mem_read64(RamDump::kTableAddress, 128));
	EXPECT_EQ(take(), dump.table());
	for (const auto &r : dump.regions()) {
		std::vector<uint8_t> got;
		for (uint64_t off = 0; off < r.data.size(); off += 0xFFF0) {
			const uint64_t n = std::min<uint64_t>(0xFFF0, r.data.size() - off);
			s.receive(mem_read64(r.address + off, n));
			const auto p = take();
			ASSERT_EQ(p.size(), n);
			got.insert(got.end(), p.begin(), p.end());
		}
		EXPECT_TRUE(std::ranges::equal(got, r.data)) << r.filename;
	}
	EXPECT_TRUE(ended.empty());

	s.receive(words({kReset, 8}, 8));
	ASSERT_EQ(sent.size(), 2u);
	EXPECT_EQ(sent[0], words({kResetResp, 8}, 8));
	EXPECT_EQ(word(sent[1], 0), kHello);
	EXPECT_EQ(word(sent[1], 20), kModeImageTxPending);
	sent.clear();
	EXPECT_EQ(ended, std::vector<bool>{true});
	EXPECT_FALSE(s.serving_dump());

	// The image transfer as in any boot.
	s.receive(hello_resp(kModeImageTxPending));
	const auto rd = take();
	EXPECT_EQ(word(rd, 0), kReadData);
	EXPECT_EQ(word(rd, 8), 1u);
}

TEST_F(SaharaTest, ReadsOutsideTheDumpAreRefusedWithEndOfImageAndTheDumpGoesOn)
{
	accept_offer();
	const uint64_t big = dump.regions()[1].address;
	s.receive(mem_read64(RamDump::kTableAddress + 64, 65));
	expect_refused(kInvalidMemoryRead, "past the table");
	s.receive(mem_read64(big + 0x12345 - 8, 9));
	expect_refused(kInvalidMemoryRead, "past a region");
	s.receive(mem_read64(big - RamDump::kRegionStride + 300 - 1, 2));
	expect_refused(kInvalidMemoryRead, "past the first region");
	s.receive(mem_read64(0, 1));
	expect_refused(kInvalidMemoryRead, "address 0");
	s.receive(mem_read64(~uint64_t{0}, 2));
	expect_refused(kInvalidMemoryRead, "wrapping");
	s.receive(mem_read64(big, 0));
	expect_refused(kInvalidDataSizeRequest, "length 0");
	s.receive(mem_read64(big, 0x10000));
	expect_refused(kInvalidDataSizeRequest, "longer than a host buffer");
	s.receive(mem_read64(big, ~uint64_t{0}));
	expect_refused(kInvalidDataSizeRequest, "length ~0");
	// Still served afterwards.
	s.receive(mem_read64(big + 0x10000, 0x2345));
	const auto p = take();
	ASSERT_EQ(p.size(), 0x2345u);
	EXPECT_TRUE(std::equal(p.begin(), p.end(), dump.regions()[1].data.begin() + 0x10000));
	EXPECT_TRUE(ended.empty());
}

TEST_F(SaharaTest, MalformedPacketsDuringTheDumpAreRefused)
{
	accept_offer();
	s.receive(std::vector<uint8_t>{1, 2, 3});
	expect_refused(kInvalidPacketSize, "3 bytes");
	s.receive(std::vector<uint8_t>{});
	expect_refused(kInvalidPacketSize, "empty");
	auto p = mem_read64(RamDump::kTableAddress, 8);
	p[4] = 0x20; // length field says 0x20, 0x18 received
	s.receive(p);
	expect_refused(kInvalidPacketSize, "length field disagrees");
	p = mem_read64(RamDump::kTableAddress, 8);
	p.resize(0x20);
	p[4] = 0x20;
	s.receive(p);
	expect_refused(kInvalidPacketSize, "MEM_READ64 of 0x20 bytes");
	s.receive(words({kReset, 12}, 12));
	expect_refused(kInvalidPacketSize, "RESET of 12 bytes");
	s.receive(hello_resp(kModeMemoryDebug));
	expect_refused(kInvalidCommand, "HELLO_RESP again");
	s.receive(words({kReadData, 0x14, 1, 0, 128}, 0x14));
	expect_refused(kInvalidCommand, "READ_DATA");
	s.receive(words({0xDEAD, 8}, 8));
	expect_refused(kInvalidCommand, "unknown command");
	EXPECT_TRUE(ended.empty());
}

// Whatever the host sends, the card answers each packet once and never
// fails; a RESET among them ends the dump.
TEST_F(SaharaTest, RandomHostPacketsDuringTheDumpGetOneAnswerEach)
{
	std::mt19937_64 rng(13);
	for (int round = 0; round < 2000; round++) {
		SaharaTarget t(*this, {1}, &dump);
		t.start();
		t.receive(hello_resp(kModeMemoryDebug));
		ASSERT_TRUE(t.serving_dump());
		sent.clear();
		std::vector<uint8_t> p;
		switch (rng() % 4) {
		case 0: // a MEM_READ64 near the dump's addresses
			p = mem_read64(RamDump::kTableAddress + (rng() % 4) * RamDump::kRegionStride + rng() % 0x20000 - 0x100,
				       rng() % 0x11000);
			break;
		case 1: { // random bytes with a consistent length field
			p.resize(8 + rng() % 64);
			for (auto &b : p)
				b = static_cast<uint8_t>(rng());
			const auto len = static_cast<uint32_t>(p.size());
			std::memcpy(p.data() + 4, &len, 4);
			break;
		}
		case 2: // random bytes
			p.resize(rng() % 40);
			for (auto &b : p)
				b = static_cast<uint8_t>(rng());
			break;
		default: // a known command number with random fields
			p = words({static_cast<uint32_t>(rng() % 0x14), kMemRead64Length}, kMemRead64Length);
			for (size_t i = 8; i < p.size(); i++)
				p[i] = static_cast<uint8_t>(rng());
			break;
		}
		t.receive(p);
		const bool reset = p.size() == 8 && word(p, 0) == kReset && word(p, 4) == 8;
		ASSERT_EQ(sent.size(), reset ? 2u : 1u) << "round " << round;
		if (!reset && (word(sent[0], 0) != kEndOfImage || sent[0].size() != kEndOfImageLength)) {
			// Data: only for a good MEM_READ64, and exactly what it asked.
			ASSERT_EQ(word(p, 0), kMemRead64) << "round " << round;
			EXPECT_EQ(sent[0].size(), dword(p, 16)) << "round " << round;
		}
		EXPECT_EQ(t.serving_dump(), !reset);
	}
	EXPECT_TRUE(finished.empty());
}

TEST_F(SaharaTest, AHostThatDeclinesTheDumpGetsTheImageTransfer)
{
	s.start();
	take();
	s.receive(hello_resp(kModeImageTxPending));
	EXPECT_EQ(ended, std::vector<bool>{false});
	expect_image_hello();
	s.receive(hello_resp(kModeImageTxPending));
	EXPECT_EQ(word(take(), 0), kReadData);
}

TEST_F(SaharaTest, AHostThatRefusesTheDumpHelloGetsTheImageTransfer)
{
	s.start();
	take();
	s.receive(hello_resp(kModeMemoryDebug, 1));
	EXPECT_EQ(ended, std::vector<bool>{false});
	expect_image_hello();
}

TEST_F(SaharaTest, AWithdrawnOfferIgnoresTheHostsLateAnswer)
{
	s.start();
	take();
	s.withdraw_dump();
	EXPECT_EQ(ended, std::vector<bool>{false});
	EXPECT_FALSE(s.offering_dump());
	expect_image_hello();
	s.receive(hello_resp(kModeMemoryDebug));
	EXPECT_TRUE(sent.empty()) << "no MEM_DEBUG64 for a withdrawn dump";
	s.receive(hello_resp(kModeImageTxPending));
	EXPECT_EQ(word(take(), 0), kReadData);
	s.withdraw_dump(); // nothing left to withdraw
	EXPECT_TRUE(sent.empty());
	EXPECT_EQ(ended.size(), 1u);
}

TEST_F(SaharaTest, WithoutADumpTheSessionStartsWithTheImageTransfer)
{
	SaharaTarget plain(*this, {1});
	plain.start();
	expect_image_hello();
	EXPECT_FALSE(plain.offering_dump());
}

// A HELLO_RESP of 8..19 bytes: the refusal says how long it was and reads
// nothing after it (QEMU heap bytes would reach the boot log the guest reads).
TEST_F(SaharaTest, AShortHelloRespIsRefusedWithoutReadingPastIt)
{
	for (uint32_t len = 8; len < 20; len++) {
		SaharaTarget plain(*this, {1});
		plain.start();
		expect_image_hello();
		std::vector<uint8_t> buf = words({kHelloResp, len}, 64);
		std::memset(buf.data() + len, 0x41, buf.size() - len); // what lies beyond it
		log.clear();
		plain.receive(std::span<const uint8_t>(buf.data(), len));
		std::string all;
		for (const auto &line : log)
			all += line + "\n";
		EXPECT_NE(all.find("HELLO_RESP refused (" + std::to_string(len) + " bytes, not 48)"), std::string::npos)
			<< all;
		EXPECT_EQ(all.find(std::to_string(0x41414141u)), std::string::npos) << all;
		sent.clear();
	}
}

// AIC200's host streams an image whole: one READ_DATA for the payload,
// answered by transfers of 0xFFFF bytes. The card keeps the payload once as
// it comes in, not the whole reply beside it (issue 37, finding 5: a 64 MiB
// reply and a 64 MiB payload).
TEST_F(SaharaTest, AStreamedImageOfTheLargestSizeIsHeldOnce)
{
	if (!kResidentSizeMeansCopies)
		GTEST_SKIP() << "ThreadSanitizer's shadow hides what the card holds";
	const std::vector<uint8_t> file =
		fw::build(1, "big", {1, 0, 0, 1}, payload(fw::kMaxRuntimeSize - fw::kHeaderSize, 7));
	const uint64_t payload_size = file.size() - fw::kHeaderSize;
	SaharaTarget streaming(*this, {1}, nullptr, Family::Aic200);
	ResidentMemory rss;
	if (!rss.start())
		GTEST_SKIP() << "this kernel cannot reset the peak resident size";
	streaming.start();
	expect_image_hello();
	streaming.receive(hello_resp(kModeImageTxPending));
	auto rd = take();
	ASSERT_EQ(word(rd, 0), kReadData);
	ASSERT_EQ(word(rd, 16), fw::kHeaderSize);
	streaming.receive(std::span(file).first(fw::kHeaderSize));
	rd = take();
	ASSERT_EQ(word(rd, 0), kReadData);
	ASSERT_EQ(word(rd, 12), fw::kHeaderSize);
	ASSERT_EQ(word(rd, 16), payload_size) << "the whole payload at once";
	for (uint64_t off = fw::kHeaderSize; off < file.size(); off += 0xFFFF)
		streaming.receive(std::span(file).subspan(off, std::min<uint64_t>(0xFFFF, file.size() - off)));
	const auto eoi = take();
	ASSERT_EQ(word(eoi, 0), kEndOfImage);
	EXPECT_EQ(word(eoi, 12), kSuccess) << "the digest checks out";
	std::printf("[  memory  ] a streamed %llu MiB image: peak %llu MiB\n",
		    static_cast<unsigned long long>(payload_size / kMiB),
		    static_cast<unsigned long long>(rss.peak_growth() / kMiB));
	EXPECT_GE(rss.growth(), payload_size - payload_size / 16) << "the payload is in memory: the measure sees it";
	EXPECT_LE(rss.peak_growth(), payload_size + payload_size / 4) << "one copy, at the peak";
}

} // namespace
} // namespace aic100::test
