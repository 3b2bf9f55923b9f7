// SPDX-License-Identifier: GPL-2.0-or-later
// The AIC200 family against the miniature MHI host, driven as upstream
// Linux 7.3's qaic drives one: MHI in BAR1, sbl.bin over BHIe (and every
// way a vector table can be wrong), the SBL's images over streaming Sahara
// from AIC200's image table, its channel table; and AIC100 as it was.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

#include "aic100/aic100_core.h"
#include "aic100/aic200.h"
#include "aic100/bhie.h"
#include "aic100/bhie_loader.h"
#include "aic100/device.h"
#include "aic100/firmware.h"
#include "aic100/nnc.h"
#include "aic100/sahara.h"
#include "boot_images.h"
#include "fake_card.h"
#include "packet_bytes.h"

namespace aic100::test {
namespace {

constexpr uint8_t kEeSbl = 1, kEeAmss = 2;
constexpr uint32_t kSeq = 0x2345;

uint32_t status_of(uint32_t txvecstatus)
{
	return txvecstatus >> bhie::kStatusShift;
}

DeviceConfig aic200_config()
{
	DeviceConfig c;
	c.family = Family::Aic200;
	c.device_id = aic200::kPciDeviceId;
	return c;
}

// An AIC200 in PBL, and the host's side of its boot: BHIe, then the SBL's
// clients as qaic starts them (no QAIC_TIMESYNC: the family has none), with
// a Sahara client that streams as upstream's does for AIC200.
class Aic200Pbl : public CardTest<> {
protected:
	void SetUp() override { new_card(aic200_config()); }

	uint32_t bhie_base() { return mhi->r(regs::BHIEOFF); }
	bool entered_amss() const { return std::find(mhi->ees.begin(), mhi->ees.end(), kEeAmss) != mhi->ees.end(); }
	bool has_error(const std::string &what) const { return has(host.errors, what); }

	// A vector table of `entries` in host memory; its bus address.
	uint64_t put_table(const std::vector<bhie::VecEntry> &entries)
	{
		const uint64_t at = mhi->alloc(std::max<size_t>(16, entries.size() * 16), 64);
		mhi->put(at, entries.data(), entries.size() * sizeof(bhie::VecEntry));
		return at;
	}
	// A load the PBL refuses: TXVECSTATUS error with the sequence number,
	// the reason in the guest error log, MSI vector 0, and still PBL.
	void expect_refused(uint32_t txvecstatus, const std::string &why)
	{
		EXPECT_EQ(status_of(txvecstatus), bhie::kStatusError) << why;
		EXPECT_EQ(txvecstatus & bhie::kSeqMask, kSeq) << why;
		EXPECT_TRUE(has_error(why)) << (host.errors.empty() ? "no guest error" : host.errors.back());
		EXPECT_TRUE(has(host.traces, why)) << "the card's trace says why too";
		ASSERT_FALSE(host.msis.empty());
		EXPECT_EQ(host.msis.back(), 0u);
		EXPECT_EQ(mhi->bhi(regs::BHI_EXECENV), 0u) << "still in PBL";
		EXPECT_EQ(mhi->r(regs::MHISTATUS) & regs::MHISTATUS_READY, 0u);
	}

	// The SBL in over BHIe and the host's handshake with it; the SBL's
	// clients started as qaic starts them.
	void load_sbl()
	{
		ASSERT_EQ(mhi->bhie_load(sbl), (bhie::kStatusComplete << bhie::kStatusShift) | kSeq);
		mhi->ready_handshake();
		ASSERT_EQ(mhi->ees, std::vector<uint8_t>{kEeSbl});
	}
	void start_sbl_clients()
	{
		ASSERT_TRUE(mhi->start(12));
		ASSERT_TRUE(mhi->start(13));
		mhi->queue_dl(13, 512, 16);
		ASSERT_TRUE(mhi->start(2));
		ASSERT_TRUE(mhi->start(3));
		mhi->queue_dl(3, 0xFFFF);
	}
	void boot()
	{
		ASSERT_NO_FATAL_FAILURE(load_sbl());
		ASSERT_NO_FATAL_FAILURE(start_sbl_clients());
		run_sbl();
	}
	void run_sbl()
	{
		for (int i = 0; i < 100 && !entered_amss(); i++) {
			serve_sahara();
			for (auto p = mhi->pop(13); !p.empty(); p = mhi->pop(13))
				log.emplace_back(reinterpret_cast<const char *>(p.data()));
			mhi->settle();
		}
	}

	// Upstream's Sahara client for AIC200 (sahara.c, streaming).
	void serve_sahara()
	{
		for (auto p = mhi->pop(3); !p.empty(); p = mhi->pop(3)) {
			const uint32_t cmd = word(p, 0);
			if (cmd == sahara::kHello) {
				hello_versions.push_back(word(p, 8));
				// Upstream answers only version 2.
				if (word(p, 8) == 2)
					mhi->send(2, words({sahara::kHelloResp, 0x30, 2, 2, 0, word(p, 20)}, 0x30));
			} else if (cmd == sahara::kReadData) {
				stream(word(p, 8), word(p, 12), word(p, 16));
			} else if (cmd == sahara::kEndOfImage) {
				end_status.push_back(word(p, 12));
				if (word(p, 12) == 0)
					mhi->send(2, words({sahara::kDone, 8}, 8));
			}
		}
	}
	// READ_DATA of any length: one single-TRE transfer of at most 0xFFFF
	// bytes at a time, the next only once the card completed the last.
	void stream(uint32_t id, uint32_t off, uint32_t len)
	{
		read_requests.push_back({id, off, len});
		const auto it = files.find(std::string(aic200::sahara_image_file(id)));
		if (it == files.end() || off >= it->second.size() || len > it->second.size() - off) {
			mhi->send(2, words({sahara::kReset, 8}, 8));
			return;
		}
		for (uint32_t o = 0; o < len; o += 0xFFFF) {
			const uint32_t n = std::min<uint32_t>(0xFFFF, len - o);
			const unsigned done = mhi->ul_done[2];
			const auto *from = it->second.data() + off + o;
			mhi->send(2, std::vector<uint8_t>(from, from + n));
			chunk_sizes.push_back(n);
			ASSERT_EQ(mhi->ul_done[2], done + 1) << "the card completes each chunk before the next is sent";
		}
	}

	// The NNC STATUS exchange qaic starts QAIC_CONTROL with: its reply.
	std::vector<uint8_t> nnc_status(uint32_t seq)
	{
		mhi->queue_dl(11, 4096);
		nnc::Header h{0, nnc::kMagic, seq, 40, 1, 0, 0xFFFFFFFF, 0};
		std::vector<uint8_t> hdr(sizeof(h));
		std::memcpy(hdr.data(), &h, sizeof(h));
		mhi->send(10, {hdr, words({nnc::kStatusToDev, 8}, 8)});
		return mhi->pop(11);
	}

	std::vector<uint8_t> sbl = fw::build(0, "xbl", {2, 0, 0, 1}, manifest({aic200::kHlosImageId, aic200::kNspImageId}));
	// The high-level OS image takes more than one 512 KiB non-streaming
	// read; the NSP image is small.
	std::map<std::string, std::vector<uint8_t>> files = {
		{"aic200-hlos.elf", fw::build(aic200::kHlosImageId, "hlos", {2, 0, 0, 2}, payload(0x80000 + 0x1234, 1))},
		{"aic200-nsp.bin", fw::build(aic200::kNspImageId, "nsp", {2, 0, 0, 3}, payload(3000, 2))},
	};
	struct Read {
		uint32_t id, off, len;
	};
	std::vector<Read> read_requests;
	std::vector<uint32_t> chunk_sizes, end_status, hello_versions;
	std::vector<std::string> log;
};

// An AIC200 whose SBL runs, at M0, no channel started yet.
class Aic200Sbl : public Aic200Pbl {
protected:
	void SetUp() override
	{
		Aic200Pbl::SetUp();
		ASSERT_NO_FATAL_FAILURE(load_sbl());
	}
};

// An AIC200 booted into AMSS.
class Aic200Amss : public Aic200Pbl {
protected:
	void SetUp() override
	{
		Aic200Pbl::SetUp();
		ASSERT_NO_FATAL_FAILURE(boot());
		ASSERT_TRUE(entered_amss());
	}
};

// ---- the family's description -----------------------------------------

TEST(FamilyConfigTest, Aic200HasUpstreamsBarsAndLoads)
{
	const FamilyConfig &f = family_config(Family::Aic200);
	EXPECT_STREQ(f.name, "AIC200");
	EXPECT_EQ(f.device_id, 0xA110);
	EXPECT_EQ(f.bar_mask, 0x17) << "BAR0, BAR1, BAR2, BAR4";
	EXPECT_EQ(f.mhi_bar, 1u);
	EXPECT_EQ(f.dbc_bar, 2u);
	EXPECT_EQ(f.sbl_load, SblLoad::Bhie);
	EXPECT_EQ(f.sahara_form, SaharaForm::Streaming);
	EXPECT_STREQ(f.firmware_dir, "qcom/aic200");
	EXPECT_FALSE(f.boot_timesync);
}

TEST(FamilyConfigTest, Aic100KeepsItsBarsAndLoads)
{
	const FamilyConfig &f = family_config(Family::Aic100);
	EXPECT_STREQ(f.name, "AIC100");
	EXPECT_EQ(f.bar_mask, 0x15) << "BAR0, BAR2, BAR4";
	EXPECT_EQ(f.mhi_bar, 0u);
	EXPECT_EQ(f.sbl_load, SblLoad::Bhi);
	EXPECT_EQ(f.sahara_form, SaharaForm::NonStreaming);
	EXPECT_TRUE(f.boot_timesync);
	EXPECT_TRUE(family_has_device_id(Family::Aic100, 0xA080)) << "AIC080 is an AIC100";
	EXPECT_FALSE(family_has_device_id(Family::Aic100, 0xA110));
}

TEST(FamilyConfigTest, Aic200LacksDiagQdssDebugAndBootTimesyncPairs)
{
	const ChannelTable &a100 = family_config(Family::Aic100).channels;
	const ChannelTable &a200 = family_config(Family::Aic200).channels;
	for (unsigned pair = 0; pair < kChannelPairs; pair++) {
		const bool dropped = pair == 2 || pair == 4 || pair == 9 || pair == 10; // 4/5, 8/9, 18/19, 20/21
		EXPECT_EQ(a200[pair], dropped ? 0u : a100[pair]) << "channels " << 2 * pair << "/" << 2 * pair + 1;
	}
}

TEST(FamilyConfigTest, ImageFilesAreNamedAsEachFamilysHostNamesThem)
{
	EXPECT_EQ(image_file(Family::Aic100, 2), "fw2.bin");
	EXPECT_EQ(image_file(Family::Aic200, 43), "aic200-hlos.elf");
	EXPECT_EQ(image_file(Family::Aic200, 78), "pvs.bin");
	EXPECT_EQ(image_file(Family::Aic200, 7), "image 7") << "not in upstream's table";
	EXPECT_EQ(std::size(aic200::kSaharaImages), 28u);
}

TEST(FamilyConfigTest, Aic200NeedsItsOwnDeviceId)
{
	DeviceConfig c = aic200_config();
	EXPECT_EQ(c.validate(), "");
	c.device_id = 0xA100;
	EXPECT_NE(c.validate().find("an AIC200 must be 0xa110"), std::string::npos) << c.validate();
	DeviceConfig a100;
	a100.device_id = 0xA110;
	EXPECT_NE(a100.validate(), "") << "an AIC100 is not 0xa110";
}

// ---- BARs and registers -------------------------------------------------

TEST_F(Aic200Pbl, MhiIsInBar1AndBar0IsNotTheCores)
{
	EXPECT_EQ(dev->bar_read(1, regs::MHIVER, 4), regs::kMhiVersion);
	EXPECT_EQ(dev->bar_read(0, regs::MHIVER, 4), 0u) << "BAR0 holds the MSI-X table, in the glue";
	dev->bar_write(0, regs::MHICTRL, regs::MHICTRL_RESET, 4);
	EXPECT_EQ(dev->bar_read(1, regs::MHICTRL, 4), 0u) << "a write to BAR0 is not MHI's";
}

TEST_F(Aic200Pbl, QtimerIsReadAtBar1Offset0xA28)
{
	host.clock_ns = 1'000'000'000;
	EXPECT_EQ(dev->bar_read(1, regs::QTIMER_LO, 8), regs::kQtimerHz);
}

TEST_F(Aic200Pbl, BhieBlockLiesInsideTheMhiRegisterSpace)
{
	const uint32_t base = bhie_base();
	EXPECT_NE(base, 0u) << "upstream reads BHIEOFF when seg_len is set";
	EXPECT_LT(base + bhie::kBlockSize, 0x1000u) << "the host maps 4 KiB";
	EXPECT_GE(base, regs::kBhiBase + regs::kBhiSize) << "clear of the BHI block";
	EXPECT_LE(base + bhie::kBlockSize, regs::kChdbBase) << "clear of the channel doorbells";
	EXPECT_EQ(mhi->bhie(bhie::RXVECDB), 0u) << "receive vectors read zero";
	EXPECT_EQ(mhi->bhie(bhie::RXVECSTATUS), 0u);
}

TEST_F(Aic200Pbl, TxVecDbNeverReadsBackAllOnes)
{
	mhi->w(bhie_base() + bhie::TXVECDB, 0xFFFFFFFF);
	EXPECT_EQ(mhi->bhie(bhie::TXVECDB), bhie::kSeqMask) << "the host's read-modify-write gives up on all-ones";
}

// ---- BHIe loads ----------------------------------------------------------

TEST_F(Aic200Pbl, BhieLoadsTheSblAndReportsCompletionWithItsSequence)
{
	host.msis.clear();
	const uint32_t st = mhi->bhie_load(sbl);
	EXPECT_EQ(status_of(st), bhie::kStatusComplete);
	EXPECT_EQ(st & bhie::kSeqMask, kSeq);
	EXPECT_EQ(host.msis, std::vector<unsigned>{0}) << "MSI vector 0 wakes the host's wait";
	EXPECT_EQ(mhi->bhi(regs::BHI_EXECENV), kEeSbl);
	EXPECT_EQ(mhi->r(regs::MHISTATUS) & regs::MHISTATUS_READY, regs::MHISTATUS_READY);
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

TEST_F(Aic200Pbl, BhieJoinsAnSblSplitAcrossSeparateSegments)
{
	ASSERT_GT(sbl.size(), 2 * 48u);
	EXPECT_EQ(status_of(mhi->bhie_load(sbl, 48)), bhie::kStatusComplete) << "three segments, apart in memory";
	EXPECT_EQ(mhi->bhi(regs::BHI_EXECENV), kEeSbl);
}

TEST_F(Aic200Pbl, BhieDoorbellClearsAStaleStatusUntilTheLoadIsDone)
{
	expect_refused(mhi->bhie_ring(put_table({}), 0, kSeq), "vector table size is 0");
	mhi->w(bhie_base() + bhie::TXVECSIZE, 16);
	mhi->w(bhie_base() + bhie::TXVECDB, kSeq + 1);
	EXPECT_EQ(mhi->bhie(bhie::TXVECSTATUS), 0u) << "no earlier result answers the new doorbell";
	mhi->settle();
	EXPECT_EQ(status_of(mhi->bhie(bhie::TXVECSTATUS)), bhie::kStatusError);
	EXPECT_EQ(mhi->bhie(bhie::TXVECSTATUS) & bhie::kSeqMask, kSeq + 1);
}

TEST_F(Aic200Pbl, BhieRefusesAnEmptyVectorTable)
{
	expect_refused(mhi->bhie_ring(put_table({}), 0, kSeq), "vector table size is 0");
}

TEST_F(Aic200Pbl, BhieRefusesATableOfPartEntries)
{
	expect_refused(mhi->bhie_ring(put_table({{0x100000, 16}, {0, 0}}), 24, kSeq),
		       "vector table size 24 is not a whole number of 16-byte entries");
}

TEST_F(Aic200Pbl, BhieRefusesMoreSegmentsThanThePblTakes)
{
	std::vector<bhie::VecEntry> many(kMaxBhieSegments + 1, bhie::VecEntry{0x100000, 1});
	expect_refused(mhi->bhie_ring(put_table(many), static_cast<uint32_t>(many.size() * 16), kSeq),
		       "vector table of 257 segments");
}

TEST_F(Aic200Pbl, BhieRefusesASegmentOfSizeZero)
{
	const uint64_t seg = mhi->alloc(4096, 4096);
	expect_refused(mhi->bhie_ring(put_table({{seg, 128}, {seg, 0}}), 32, kSeq), "segment 1 has size 0");
}

TEST_F(Aic200Pbl, BhieRefusesASegmentBeyondTheImageLimitWithoutAllocatingIt)
{
	expect_refused(mhi->bhie_ring(put_table({{0x100000, ~0ull}}), 16, kSeq),
		       "segments 0..0 add up to more than the 2097152-byte image limit");
}

TEST_F(Aic200Pbl, BhieRefusesSegmentsThatAddUpBeyondTheImageLimit)
{
	const uint64_t mib = 1u << 20;
	const uint64_t table = put_table({{0x100000, mib}, {0x100000, mib}, {0x100000, 1}});
	unsigned dmas = 0;
	host.on_dma = [&] { dmas++; };
	expect_refused(mhi->bhie_ring(table, 48, kSeq), "segments 0..2 add up to more than");
	EXPECT_EQ(dmas, 1u) << "the table read, and no segment before every size was checked";
}

TEST_F(Aic200Pbl, BhieRefusesAnUnreadableVectorTable)
{
	expect_refused(mhi->bhie_ring(host.mem_limit + 0x1000, 16, kSeq), "vector table at 0x");
	EXPECT_TRUE(has_error("unreadable"));
}

TEST_F(Aic200Pbl, BhieRefusesAnUnreadableSegment)
{
	const uint64_t seg = mhi->alloc(4096, 4096);
	expect_refused(mhi->bhie_ring(put_table({{seg, 64}, {host.mem_limit - 8, 64}}), 32, kSeq),
		       "segment 1 at 0x");
	EXPECT_TRUE(has_error("unreadable"));
}

TEST_F(Aic200Pbl, BhieRefusesASegmentThatWrapsTheBusAddressSpace)
{
	expect_refused(mhi->bhie_ring(put_table({{~0ull - 15, 64}}), 16, kSeq), "wraps the bus address space");
}

TEST_F(Aic200Pbl, BhieRefusesAnSblWhoseDigestIsWrong)
{
	sbl[fw::kHeaderSize + 1] ^= 1;
	expect_refused(mhi->bhie_load(sbl), "sbl.bin bad digest");
}

TEST_F(Aic200Pbl, BhieRefusesARuntimeImageInPlaceOfTheSbl)
{
	expect_refused(mhi->bhie_load(files["aic200-nsp.bin"]), "sbl.bin wrong image");
}

TEST_F(Aic200Pbl, BhieLoadCanBeRetriedAfterARefusal)
{
	expect_refused(mhi->bhie_ring(put_table({}), 0, kSeq), "vector table size is 0");
	EXPECT_EQ(status_of(mhi->bhie_load(sbl, 512 * 1024, kSeq + 7)), bhie::kStatusComplete);
	EXPECT_EQ(mhi->bhie(bhie::TXVECSTATUS) & bhie::kSeqMask, kSeq + 7);
}

TEST_F(Aic200Sbl, BhieDoorbellOutsidePblIsIgnored)
{
	const uint32_t before = mhi->bhie(bhie::TXVECSTATUS);
	mhi->w(bhie_base() + bhie::TXVECDB, 9);
	mhi->settle();
	EXPECT_TRUE(has_error("BHIe: vector doorbell outside PBL"));
	EXPECT_EQ(mhi->bhie(bhie::TXVECSTATUS), before);
}

// ---- the SBL, streaming Sahara, and the boot to AMSS ---------------------

TEST_F(Aic200Pbl, BootsToMissionModeThroughBhieAndStreamingSahara)
{
	boot();
	ASSERT_TRUE(entered_amss()) << "never entered AMSS";
	EXPECT_EQ(mhi->bhi(regs::BHI_EXECENV), kEeAmss);
	EXPECT_EQ(hello_versions, std::vector<uint32_t>{2}) << "upstream answers only HELLO version 2";
	EXPECT_EQ(end_status, (std::vector<uint32_t>{0, 0}));
	ASSERT_TRUE(mhi->start(10, 128));
	ASSERT_TRUE(mhi->start(11, 128));
	const std::vector<uint8_t> r = nnc_status(3);
	ASSERT_EQ(r.size(), 56u);
	EXPECT_EQ(word(r, 32), nnc::kStatusFromDev);
	EXPECT_EQ(word(r, 40), 5u) << "NNC 5.0, as qaic requires";
	EXPECT_EQ(dev->boot().stage(), std::string("amss"));
	EXPECT_TRUE(host.errors.empty()) << host.errors.front();
}

TEST_F(Aic200Pbl, StreamingSaharaAsksForEachPayloadInOneReadData)
{
	boot();
	const uint32_t hlos = static_cast<uint32_t>(files["aic200-hlos.elf"].size() - fw::kHeaderSize);
	ASSERT_GT(hlos, sahara::kMaxReadLength) << "more than a non-streaming host serves at once";
	ASSERT_EQ(read_requests.size(), 4u);
	EXPECT_EQ(read_requests[0].id, aic200::kHlosImageId);
	EXPECT_EQ(read_requests[0].len, fw::kHeaderSize);
	EXPECT_EQ(read_requests[1].off, fw::kHeaderSize);
	EXPECT_EQ(read_requests[1].len, hlos);
	EXPECT_EQ(read_requests[2].id, aic200::kNspImageId);
	EXPECT_EQ(read_requests[3].len, 3000u);
}

TEST_F(Aic200Pbl, StreamingHostSendsEachChunkAsATransferOfItsOwn)
{
	boot();
	const uint32_t hlos = static_cast<uint32_t>(files["aic200-hlos.elf"].size() - fw::kHeaderSize);
	const size_t hlos_chunks = (hlos + 0xFFFE) / 0xFFFF;
	ASSERT_EQ(chunk_sizes.size(), 1 + hlos_chunks + 2) << "header, payload chunks, header, payload";
	for (size_t i = 1; i < hlos_chunks; i++)
		EXPECT_EQ(chunk_sizes[i], 0xFFFFu) << "chunk " << i;
	EXPECT_EQ(mhi->ul_codes[2].size(), mhi->ul_done[2]);
	EXPECT_TRUE(std::all_of(mhi->ul_codes[2].begin(), mhi->ul_codes[2].end(),
				[](uint8_t c) { return c == static_cast<uint8_t>(mhi::Completion::Eot); }))
		<< "every chunk ends its transfer";
}

TEST_F(Aic200Pbl, AnEightByteTailThatLooksLikeResetIsImageData)
{
	// The payload's last streamed chunk is 8 bytes, and they are the bytes
	// of a RESET packet.
	std::vector<uint8_t> p = payload(0xFFFF + 8, 3);
	const std::vector<uint8_t> reset = words({sahara::kReset, 8}, 8);
	std::copy(reset.begin(), reset.end(), p.end() - 8);
	files["aic200-nsp.bin"] = fw::build(aic200::kNspImageId, "nsp", {2, 0, 0, 3}, p);
	boot();
	EXPECT_TRUE(entered_amss());
	EXPECT_EQ(chunk_sizes.back(), 8u);
	EXPECT_TRUE(has(log, "aic200-nsp.bin: nsp 2.0.0.3, 65543 bytes, SHA-256 ok"));
}

TEST_F(Aic200Pbl, BootLogNamesTheFamilyAndItsImageFiles)
{
	boot();
	EXPECT_TRUE(has(log, "started on AIC200"));
	EXPECT_TRUE(has(log, "manifest: aic200-hlos.elf aic200-nsp.bin"));
	EXPECT_TRUE(has(log, "fetching aic200-hlos.elf"));
}

TEST_F(Aic200Pbl, AnImageOutsideUpstreamsTableHaltsTheBoot)
{
	sbl = fw::build(0, "xbl", {2, 0, 0, 1}, manifest({7}));
	boot();
	EXPECT_FALSE(entered_amss());
	EXPECT_TRUE(has(log, "image 7: the host has no such image"));
	EXPECT_EQ(dev->boot().stage(), std::string("sbl-halted"));
}

TEST_F(Aic200Sbl, SblEntersAmssWithoutWaitingForBootTimesync)
{
	ASSERT_NO_FATAL_FAILURE(start_sbl_clients());
	run_sbl();
	EXPECT_TRUE(entered_amss());
	EXPECT_EQ(host.clock_ns, 0u) << "no grace period for a time-sync client the family has not";
	EXPECT_FALSE(has(log, "no time sync"));
}

// ---- the channel table -----------------------------------------------------

TEST_F(Aic200Sbl, SblServesSaharaAndLoggingButNoBootTimesync)
{
	for (unsigned ch : {2u, 3u, 12u, 13u})
		EXPECT_TRUE(mhi->start(ch)) << "channel " << ch;
	for (unsigned ch : {20u, 21u})
		EXPECT_FALSE(mhi->start(ch)) << "QAIC_TIMESYNC " << ch << " is AIC100's";
}

TEST_F(Aic200Amss, AmssServesItsTableAndRefusesDiagQdssAndDebug)
{
	for (unsigned ch : {0u, 1u, 6u, 7u, 10u, 11u, 14u, 15u, 16u, 17u, 22u, 23u})
		EXPECT_TRUE(mhi->start(ch, ch == 10 || ch == 11 ? 128 : 32)) << "channel " << ch;
	for (unsigned ch : {4u, 5u, 8u, 9u, 18u, 19u, 20u, 21u})
		EXPECT_FALSE(mhi->start(ch)) << "channel " << ch << " is AIC100's";
}

// ---- AIC100 as it was --------------------------------------------------------

class Aic100Pbl : public CardTest<> {
protected:
	void SetUp() override { new_card({}); }
};

TEST_F(Aic100Pbl, HasNoBhieBlock)
{
	EXPECT_EQ(mhi->r(regs::BHIEOFF), 0u);
	EXPECT_EQ(mhi->r(regs::kBhieBase + bhie::TXVECSTATUS), 0u);
	mhi->w(regs::kBhieBase + bhie::TXVECDB, 1);
	mhi->settle();
	EXPECT_TRUE(has(host.errors, "read-only/reserved")) << "a write there is to nothing";
}

TEST_F(Aic100Pbl, KeepsMhiInBar0)
{
	EXPECT_EQ(dev->bar_read(0, regs::MHIVER, 4), regs::kMhiVersion);
	EXPECT_EQ(dev->bar_read(1, regs::MHIVER, 4), 0u);
}

// ---- the C API the QEMU glue uses ----------------------------------------------

TEST(Aic200CoreApi, FamilyChoosesTheMhiBar)
{
	FakeHost h;
	const Aic100HostOps ops = {
		.dma_read = [](void *o, uint64_t a, void *b, size_t l) {
			return static_cast<FakeHost *>(o)->dma_read(a, b, l) == DmaStatus::Ok ? 0 : 1;
		},
		.dma_write = [](void *o, uint64_t a, const void *b, size_t l) {
			return static_cast<FakeHost *>(o)->dma_write(a, b, l) == DmaStatus::Ok ? 0 : 1;
		},
		.raise_msi = [](void *o, unsigned v) { static_cast<FakeHost *>(o)->raise_msi(v); },
		.msi_vectors_enabled = [](void *o) { return static_cast<FakeHost *>(o)->msi_vectors_enabled(); },
		.now_ns = [](void *o) { return static_cast<FakeHost *>(o)->now_ns(); },
		.guest_error = [](void *o, const char *m) { static_cast<FakeHost *>(o)->guest_error(m); },
		.kick = [](void *) {},
		.arm_timer = [](void *, uint64_t) {},
		.trace = nullptr,
		.dma_ram_extent = nullptr,
	};
	Aic100Config cfg;
	aic100_core_default_config(&cfg);
	EXPECT_EQ(cfg.family, AIC100_FAMILY_AIC100);
	cfg.family = AIC100_FAMILY_AIC200;
	char err[160] = "";
	ASSERT_EQ(aic100_core_new(&cfg, &ops, &h, err, sizeof(err)), nullptr) << "0xa100 is no AIC200";
	EXPECT_NE(std::string(err).find("AIC200"), std::string::npos) << err;
	cfg.device_id = 0xA110;
	Aic100Core *core = aic100_core_new(&cfg, &ops, &h, err, sizeof(err));
	ASSERT_NE(core, nullptr) << err;
	EXPECT_EQ(aic100_core_bar_read(core, 1, regs::BHIEOFF, 4), regs::kBhieBase);
	EXPECT_EQ(aic100_core_bar_read(core, 0, regs::BHIEOFF, 4), 0u);
	aic100_core_free(core);
}

// ---- the Sahara target on its own ---------------------------------------------

class StreamingSaharaTest : public ::testing::Test, public SaharaTarget::Io {
protected:
	void sahara_send(std::vector<uint8_t> packet) override { sent.push_back(std::move(packet)); }
	void sahara_log(const std::string &) override {}
	void sahara_finished(bool ok) override { finished.push_back(ok); }
	void sahara_dump_ended(bool) override {}

	// The READ_DATA length the target asks for after the header of an
	// image with `payload_size` bytes of payload.
	uint32_t payload_read_length(Family family, size_t payload_size)
	{
		const std::vector<uint8_t> image = fw::build(12, "nsp", {1, 0, 0, 0}, payload(payload_size, 4));
		SaharaTarget t(*this, {12}, nullptr, family);
		t.start();
		t.receive(words({sahara::kHelloResp, sahara::kHelloLength, 2, 2, 0, 0}, sahara::kHelloLength));
		t.receive(std::vector<uint8_t>(image.begin(), image.begin() + fw::kHeaderSize));
		return sent.empty() ? 0 : word(sent.back(), 16);
	}

	std::vector<std::vector<uint8_t>> sent;
	std::vector<bool> finished;
};

TEST_F(StreamingSaharaTest, Aic200AsksForTheWholePayload)
{
	EXPECT_EQ(payload_read_length(Family::Aic200, 3 * sahara::kMaxReadLength), 3 * sahara::kMaxReadLength);
}

TEST_F(StreamingSaharaTest, Aic100StillAsksForAtMost512KiB)
{
	EXPECT_EQ(payload_read_length(Family::Aic100, 3 * sahara::kMaxReadLength), sahara::kMaxReadLength);
}

} // namespace
} // namespace aic100::test
