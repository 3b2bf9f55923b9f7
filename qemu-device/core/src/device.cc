// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/device.h"

#include <algorithm>
#include <cstdio>

namespace aic100 {

namespace {

// The device whose process() runs on this thread. A register write made on
// that thread meanwhile is the card's own DMA reaching its BARs. Kept per
// thread: vCPUs write BAR2 while the card works on another thread.
thread_local const Device *t_processing = nullptr;

} // namespace

std::string DeviceConfig::validate() const
{
	char buf[128];
	if (family == Family::Aic200 && device_id != family_config(family).device_id) {
		std::snprintf(buf, sizeof(buf), "device-id 0x%04x: an AIC200 must be 0x%04x", device_id,
			      family_config(family).device_id);
		return buf;
	}
	if (family != Family::Aic200 && !family_has_device_id(Family::Aic100, device_id)) {
		std::snprintf(buf, sizeof(buf), "device-id 0x%04x: must be 0xa100 (AIC100) or 0xa080 (AIC080)",
			      device_id);
		return buf;
	}
	if (nsp_count < 1 || nsp_count > kMaxNsps) {
		std::snprintf(buf, sizeof(buf), "nsps=%u: must be 1..%u", nsp_count, kMaxNsps);
		return buf;
	}
	if (ddr_size < kMinDdrSize || ddr_size > kMaxDdrSize || (ddr_size & ((1u << 20) - 1))) {
		std::snprintf(buf, sizeof(buf), "ddr-size=%llu: must be a multiple of 1 MiB in 64 MiB..32 GiB",
			      static_cast<unsigned long long>(ddr_size));
		return buf;
	}
	if (bar4_size < 4096 || bar4_size > (1ull << 30) || (bar4_size & (bar4_size - 1))) {
		std::snprintf(buf, sizeof(buf), "bar4-size=%llu: must be a power of two in 4 KiB..1 GiB",
			      static_cast<unsigned long long>(bar4_size));
		return buf;
	}
	if (serial_number == 0xFFFFFFFF)
		return "serial=0xffffffff reads as a dead link to the host";
	for (int64_t t : {soc_temp_mc, board_temp_mc, ddr_temp_mc}) {
		if (t < -40000 || t > 200000) {
			std::snprintf(buf, sizeof(buf), "temperature %lld m°C: must be -40000..200000 (0: modelled)",
				      static_cast<long long>(t));
			return buf;
		}
	}
	if (board_power_uw < 0 || board_power_uw > 500'000'000)
		return "board-power: must be 0..500000000 uW (0: modelled)";
	return {};
}

MhiConfig Device::mhi_config(const DeviceConfig &cfg)
{
	MhiConfig m;
	m.serial_number = cfg.serial_number;
	m.reset_ee = cfg.boot_amss ? regs::ExecEnv::Amss : regs::ExecEnv::Pbl;
	const FamilyConfig &family = family_config(cfg.family);
	m.channels = family.channels;
	m.bhie = family.sbl_load == SblLoad::Bhie;
	// A stable, card-specific OEM public-key hash: the serial number spread
	// over the 16 words, so two cards never show the same hash.
	for (unsigned i = 0; i < m.oem_pk_hash.size(); i++)
		m.oem_pk_hash[i] = (cfg.serial_number * 0x9E3779B1u) ^ (0x01000193u * (i + 1));
	return m;
}

QsmConfig Device::qsm_config(const DeviceConfig &cfg)
{
	QsmConfig q;
	q.nsp_count = cfg.nsp_count;
	q.ddr_size = cfg.ddr_size;
	q.serial_number = cfg.serial_number;
	q.crc = cfg.nnc_crc;
	const FamilyConfig &family = family_config(cfg.family);
	q.board = family.name;
	q.qsm_image_id = family.qsm_image_id;
	q.nsp_image_id = family.nsp_image_id;
	return q;
}

Device::Device(HostInterface &host, const DeviceConfig &cfg)
	: host_(host), cfg_(cfg), mhi_(host, mhi_config(cfg)), ddr_(cfg.ddr_size), dbr_(host, ddr_),
	  boot_(host, mhi_, dbr_, ddr_, qsm_config(cfg), cfg.family)
{
	boot_.reset();
	using telemetry::Sensor;
	const std::pair<Sensor, int64_t> pins[] = {{Sensor::SocTemp, cfg.soc_temp_mc},
						    {Sensor::BoardTemp, cfg.board_temp_mc},
						    {Sensor::DdrTemp, cfg.ddr_temp_mc},
						    {Sensor::BoardPower, cfg.board_power_uw}};
	for (const auto &[sensor, value] : pins)
		if (value)
			boot_.qsm().telemetry().set_sensor(sensor, value);
}

void Device::reset()
{
	if (t_processing == this) {
		reset_pending_ = true;
		return;
	}
	reset_now();
}

void Device::reset_now()
{
	host_.trace("card reset (PCI)");
	mhi_.reset();
	boot_.reset();
	dbr_.reset();
	host_.arm_timer(HostInterface::kNoDeadline);
}

// Everything that can raise SYS_ERR (process(), inject()) ends here, under
// the same lock as the host's register reads: the host never sees SYS_ERR
// while a DBC can still write to memory it is about to free.
void Device::halt_on_sys_err()
{
	if (mhi_.take_halt_request())
		boot_.halt_after_sys_err();
}

void Device::process()
{
	if (processing_)
		return;
	as_own_pass([this] { run_pass(); });
}

void Device::as_own_pass(const std::function<void()> &work)
{
	if (t_processing == this) {
		work();
		return;
	}
	{
		struct Busy {
			bool &b;
			const Device *outer;
			Busy(bool &flag, const Device *dev) : b(flag), outer(t_processing)
			{
				b = true;
				t_processing = dev;
			}
			~Busy()
			{
				b = false;
				t_processing = outer;
			}
		} busy(processing_, this);
		work();
	}
	if (reset_pending_) {
		reset_pending_ = false;
		host_.trace("card reset (PCI) asked for by the card's own DMA: done at the end of its pass");
		reset_now();
	}
}

// The blocks' work, in order; a reset asked for meanwhile ends the pass
// after the block that caused it.
void Device::run_pass()
{
	mhi_.process();
	halt_on_sys_err();
	if (reset_pending_)
		return;
	dbr_.process();
	if (reset_pending_)
		return;
	boot_.poll();
	if (!mbox_.pending.empty())
		mailbox_run();
	halt_on_sys_err();
	host_.arm_timer(std::min(mhi_.next_deadline(), boot_.next_deadline()));
}

std::string Device::describe() const
{
	static const char *const states[] = {"RESET", "READY", "M0", "M1", "M2", "M3", "M3_FAST", "BHI"};
	static const char *const ees[] = {"PBL", "SBL", "AMSS", "RDDM", "WFW", "PTHRU", "EDL", "FP"};
	const auto st = static_cast<unsigned>(mhi_.state());
	const auto ee = static_cast<unsigned>(mhi_.exec_env());
	char buf[96];
	std::snprintf(buf, sizeof(buf), "ee=%s state=%s stage=%s", ee < 8 ? ees[ee] : "?",
		      st < 8 ? states[st] : "SYS_ERR", boot_.stage());
	return buf;
}

// AIC100: MHI in BAR0. AIC200: MHI in BAR1, and BAR0 holds what the host
// never maps (the MSI-X table, which the PCI glue serves).
Device::BarBlock Device::bar_block(unsigned bar) const
{
	const FamilyConfig &family = family_config(cfg_.family);
	if (bar == family.mhi_bar)
		return BarBlock::Mhi;
	if (bar == family.dbc_bar)
		return BarBlock::DmaBridge;
	return bar == 4 ? BarBlock::Bar4 : BarBlock::None;
}

uint64_t Device::bar_read(unsigned bar, uint64_t offset, unsigned size)
{
	switch (bar_block(bar)) {
	case BarBlock::Mhi:
		return offset < regs::kBar0Size ? mhi_.read(static_cast<uint32_t>(offset), size) : 0;
	case BarBlock::DmaBridge:
		return offset < regs::kBar2Size ? dbr_.read(static_cast<uint32_t>(offset), size) : 0;
	case BarBlock::Bar4:
		// BAR4 has no function on AIC100; it reads as zero unless the
		// test mailbox is there.
		return cfg_.test_mailbox ? mailbox_read(offset, size) : 0;
	case BarBlock::None:
		break;
	}
	return 0;
}

void Device::bar_write(unsigned bar, uint64_t offset, uint64_t value, unsigned size)
{
	if (t_processing == this) {
		char m[96];
		std::snprintf(m, sizeof(m), "BAR%u: write at 0x%llx by the card's own DMA refused", bar,
			      static_cast<unsigned long long>(offset));
		host_.guest_error(m);
		return;
	}
	switch (bar_block(bar)) {
	case BarBlock::Mhi:
		if (offset < regs::kBar0Size)
			mhi_.write(static_cast<uint32_t>(offset), value, size);
		return;
	case BarBlock::DmaBridge:
		if (offset < regs::kBar2Size)
			dbr_.write(static_cast<uint32_t>(offset), value, size);
		return;
	case BarBlock::Bar4:
		if (cfg_.test_mailbox)
			mailbox_write(offset, value, size);
		return;
	case BarBlock::None:
		return;
	}
}

} // namespace aic100
