// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/boot.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace aic100 {

using regs::ExecEnv;

Boot::Boot(HostInterface &host, Mhi &mhi, DmaBridge &dbr, Ddr &ddr, const QsmConfig &qsm, Family family)
	: host_(host), mhi_(mhi), family_(family_config(family)), sbl_(host, mhi, *this, family),
	  qsm_(host, mhi, dbr, ddr, qsm)
{
	mhi_.set_function(this);
}

void Boot::reset()
{
	sbl_.stop();
	qsm_.stop();
	images_.clear();
	crash_.reset();
	failures_ = 0;
	if (mhi_.exec_env() == ExecEnv::Amss)
		qsm_.start({});
}

const char *Boot::stage() const
{
	switch (mhi_.exec_env()) {
	case ExecEnv::Pbl:
		return "pbl";
	case ExecEnv::Sbl:
		return sbl_.failed() ? "sbl-halted" : "sbl";
	case ExecEnv::Amss:
		return "amss";
	default:
		return "other";
	}
}

void Boot::poll()
{
	sbl_.poll();
	if (mhi_.exec_env() == ExecEnv::Amss)
		qsm_.poll();
}

uint64_t Boot::next_deadline() const
{
	return std::min(sbl_.next_deadline(), qsm_.next_deadline());
}

void Boot::inject_sys_err()
{
	host_.trace("firmware: SYS_ERR injected");
	mhi_.sys_err("SYS_ERR injected (test)");
}

void Boot::halt_after_sys_err()
{
	qsm_.stop();
	// Like real firmware, a failed AMSS leaves a RAM dump for the SBL to
	// offer. A card started straight in AMSS has no SBL: its QSM starts
	// again from images_ when the host resets MHI.
	if (mhi_.exec_env() == ExecEnv::Amss && !images_.empty())
		crash_ = record_crash(mhi_.sys_err_reason());
}

// The RAM dump of an AMSS failure (docs/health.md): what failed and when, the
// boot log of the SBL that started this AMSS, the MHI and BHI registers as the
// failure left them, and the images AMSS ran from, as they sit in DDR (the
// payloads shared, not copied).
std::shared_ptr<const RamDump> Boot::record_crash(const std::string &why)
{
	failures_++;
	auto dump = std::make_shared<RamDump>();
	char line[256];
	std::string summary = std::string(family_.name) + " RAM dump\n";
	std::snprintf(line, sizeof(line), "reason: %s\nserial: 0x%08x\nfailure: %u\ntime_ns: %llu\nexec_env: amss\n",
		      why.c_str(), mhi_.config().serial_number, failures_,
		      static_cast<unsigned long long>(host_.now_ns()));
	summary += line;
	for (const LoadedImage &im : images_) {
		std::snprintf(line, sizeof(line), "image: %s %.*s %u.%u.%u.%u %zu bytes\n",
			      image_file(family_.family, im.header.image_id).c_str(), static_cast<int>(strnlen(im.header.name, sizeof(im.header.name))), im.header.name,
			      im.header.version[0], im.header.version[1], im.header.version[2], im.header.version[3],
			      im.payload->size());
		summary += line;
	}
	dump->add("crash summary", "summary.txt", std::vector<uint8_t>(summary.begin(), summary.end()));

	std::string log;
	for (const std::string &l : sbl_.log_history())
		log += l + "\n";
	dump->add("SBL boot log", "sbl.log", std::vector<uint8_t>(log.begin(), log.end()));

	std::vector<uint8_t> regs(kDumpedRegisterBytes);
	for (uint32_t off = 0; off < kDumpedRegisterBytes; off += 4) {
		const auto v = static_cast<uint32_t>(mhi_.read(off, 4));
		std::memcpy(regs.data() + off, &v, 4);
	}
	dump->add("MHI/BHI registers", "mhi_regs.bin", std::move(regs));

	for (const LoadedImage &im : images_) {
		const std::string file = image_file(family_.family, im.header.image_id);
		dump->add_shared("AMSS image " + file, file, im.payload);
	}
	host_.trace(("firmware: AMSS failed (" + why + "); RAM dump recorded").c_str());
	return dump;
}

// ---- PBL ---------------------------------------------------------------

void Boot::bhi_fail(fw::Error e, uint32_t dbg1, uint32_t dbg2)
{
	char msg[128];
	std::snprintf(msg, sizeof(msg), "PBL: sbl.bin refused: %s (ERRDBG 0x%x 0x%x)", fw::error_name(e), dbg1, dbg2);
	host_.guest_error(msg);
	mhi_.bhi_complete(static_cast<uint32_t>(e), dbg1, dbg2);
}

void Boot::bhi_transfer(uint64_t addr, uint32_t size)
{
	if (size > fw::kMaxSblSize) {
		bhi_fail(fw::Error::TooLarge, size, static_cast<uint32_t>(fw::kMaxSblSize));
		return;
	}
	if (size < fw::kHeaderSize) {
		bhi_fail(fw::Error::Truncated, size, static_cast<uint32_t>(fw::kHeaderSize));
		return;
	}
	std::vector<uint8_t> image(size);
	if (host_.dma_read(addr, image.data(), size) != DmaStatus::Ok) {
		bhi_fail(fw::Error::DmaFault, static_cast<uint32_t>(addr), static_cast<uint32_t>(addr >> 32));
		return;
	}
	const SblCheck sbl = check_sbl(image);
	if (sbl.error != fw::Error::None) {
		bhi_fail(sbl.error, sbl.dbg1, sbl.dbg2);
		return;
	}
	mhi_.bhi_complete(0);
	start_sbl(sbl);
}

// The same checks whichever way the image came: header, length, digest,
// image id and manifest.
Boot::SblCheck Boot::check_sbl(std::span<const uint8_t> image)
{
	SblCheck c;
	if (image.size() < fw::kHeaderSize) {
		c.error = fw::Error::Truncated;
		c.dbg1 = static_cast<uint32_t>(image.size());
		c.dbg2 = static_cast<uint32_t>(fw::kHeaderSize);
		return c;
	}
	fw::Header &h = c.header;
	std::memcpy(&h, image.data(), sizeof(h));
	if (const fw::Error err = fw::verify(image, fw::kMaxSblSize); err != fw::Error::None) {
		c.error = err;
		c.dbg1 = static_cast<uint32_t>(image.size());
		c.dbg2 = static_cast<uint32_t>(h.payload_size);
	} else if (h.image_id != fw::kSblImageId) {
		c.error = fw::Error::WrongImage;
		c.dbg1 = h.image_id;
	} else if (!fw::parse_manifest(image.subspan(fw::kHeaderSize), c.manifest)) {
		c.error = fw::Error::BadHeader;
		c.dbg1 = static_cast<uint32_t>(h.payload_size);
	}
	return c;
}

void Boot::start_sbl(const SblCheck &sbl)
{
	host_.trace("PBL: sbl.bin accepted; starting SBL");
	mhi_.become_ready(ExecEnv::Sbl);
	sbl_.boot(sbl.header, sbl.manifest);
}

void Boot::sbl_handover(std::vector<LoadedImage> images)
{
	images_ = std::move(images);
	qsm_.start(images_);
	mhi_.enter_exec_env(ExecEnv::Amss);
}

// ---- MHI events, to whichever stage runs ----------------------------------

void Boot::mhi_m0()
{
	if (mhi_.exec_env() == ExecEnv::Sbl)
		sbl_.mhi_m0();
}

void Boot::mhi_reset()
{
	switch (mhi_.exec_env()) {
	case ExecEnv::Sbl:
		sbl_.mhi_reset();
		return;
	case ExecEnv::Amss:
		qsm_.stop();
		if (crash_) {
			// After an AMSS failure: back through the SBL, which offers
			// the RAM dump, then loads the images and starts AMSS.
			// The old images go: the dump holds what it shows of them,
			// and the SBL fetches them again.
			images_.clear();
			mhi_.become_ready(ExecEnv::Sbl);
			sbl_.boot(sbl_.header(), sbl_.manifest(), std::move(crash_));
			return;
		}
		// A new host, or SYS_ERR on a card without SBL: the QSM comes
		// back up.
		qsm_.start(images_);
		return;
	default:
		// The card rebooted into PBL: nothing of the old boot survives.
		sbl_.stop();
		qsm_.stop();
		images_.clear();
		crash_.reset();
		return;
	}
}

void Boot::channel_started(unsigned ch)
{
	// AMSS's services answer whatever arrives; only the SBL starts talking.
	if (mhi_.exec_env() == ExecEnv::Sbl)
		sbl_.channel_started(ch);
}

uint64_t Boot::channel_resetting(unsigned ch)
{
	// The SBL's held boot log can outlive the SBL (Sbl::hold_log()).
	return sbl_.channel_resetting(ch);
}

void Boot::channel_stopped(unsigned ch)
{
	if (mhi_.exec_env() == ExecEnv::Sbl)
		sbl_.channel_stopped(ch);
	else if (mhi_.exec_env() == ExecEnv::Amss)
		qsm_.channel_stopped(ch);
}

void Boot::ul_message(unsigned ch, std::span<const uint8_t> data)
{
	if (mhi_.exec_env() == ExecEnv::Sbl)
		sbl_.ul_message(ch, data);
	else if (mhi_.exec_env() == ExecEnv::Amss)
		qsm_.ul_message(ch, data);
}

void Boot::dl_drained(unsigned ch)
{
	if (mhi_.exec_env() == ExecEnv::Sbl)
		sbl_.dl_drained(ch);
}

} // namespace aic100
