// SPDX-License-Identifier: GPL-2.0-or-later
// The C face of the device core: adapts Aic100HostOps to HostInterface and
// keeps C++ exceptions from crossing into QEMU.
#include "aic100/aic100_core.h"

#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "aic100/device.h"

namespace {

class OpsHost final : public aic100::HostInterface {
public:
	OpsHost(const Aic100HostOps &ops, void *opaque) : ops_(ops), opaque_(opaque) {}

	aic100::DmaStatus dma_read(uint64_t addr, void *buf, size_t len) override
	{
		return ops_.dma_read(opaque_, addr, buf, len) ? aic100::DmaStatus::Error : aic100::DmaStatus::Ok;
	}
	aic100::DmaStatus dma_write(uint64_t addr, const void *buf, size_t len) override
	{
		return ops_.dma_write(opaque_, addr, buf, len) ? aic100::DmaStatus::Error : aic100::DmaStatus::Ok;
	}
	void raise_msi(unsigned vector) override { ops_.raise_msi(opaque_, vector); }
	unsigned msi_vectors_enabled() const override { return ops_.msi_vectors_enabled(opaque_); }
	uint64_t now_ns() const override { return ops_.now_ns(opaque_); }
	void guest_error(const char *msg) override
	{
		uint64_t dropped = 0;
		const bool admitted = limit_.admit(now_ns(), dropped);
		report_dropped(dropped);
		if (admitted)
			ops_.guest_error(opaque_, msg);
	}
	// Reports the guest errors dropped in a window now over (at a pass's end).
	void flush_guest_errors() { report_dropped(limit_.take_dropped(now_ns())); }
	DmaExtent dma_extent(uint64_t addr, uint64_t len, bool is_write) const override
	{
		if (!ops_.dma_ram_extent)
			return {true, len};
		bool ram = true;
		const uint64_t n = ops_.dma_ram_extent(opaque_, addr, len, is_write, &ram);
		return {ram, n};
	}
	void kick() override { ops_.kick(opaque_); }
	void arm_timer(uint64_t deadline_ns) override { ops_.arm_timer(opaque_, deadline_ns); }
	void trace(const char *msg) override
	{
		if (ops_.trace)
			ops_.trace(opaque_, msg);
	}

private:
	void report_dropped(uint64_t dropped)
	{
		if (!dropped)
			return;
		char m[96];
		std::snprintf(m, sizeof(m), "%llu more guest errors not logged (at most %u a second)",
			      static_cast<unsigned long long>(dropped), aic100::GuestErrorLimit::kLines);
		ops_.guest_error(opaque_, m);
	}

	Aic100HostOps ops_;
	void *opaque_;
	aic100::GuestErrorLimit limit_;
};

} // namespace

struct Aic100Core {
	Aic100Core(const aic100::DeviceConfig &cfg, const Aic100HostOps &ops, void *opaque)
		: host(ops, opaque), dev(host, cfg)
	{
	}
	OpsHost host;
	aic100::Device dev;
};

namespace {

aic100::DeviceConfig to_cpp(const Aic100Config &c)
{
	aic100::DeviceConfig d;
	d.family = c.family == AIC100_FAMILY_AIC200 ? aic100::Family::Aic200 : aic100::Family::Aic100;
	d.device_id = c.device_id;
	d.nsp_count = c.nsp_count;
	d.ddr_size = c.ddr_size;
	d.bar4_size = c.bar4_size;
	d.serial_number = c.serial_number;
	d.boot_amss = c.boot_amss;
	d.nnc_crc = c.nnc_crc;
	d.test_mailbox = c.test_mailbox;
	d.soc_temp_mc = c.soc_temp_mc;
	d.board_temp_mc = c.board_temp_mc;
	d.ddr_temp_mc = c.ddr_temp_mc;
	d.board_power_uw = c.board_power_uw;
	return d;
}

// Runs `fn` so that no exception reaches QEMU's C code: what failed is
// reported as a guest error (it is almost always an allocation sized by the
// guest) and the access is refused. False when it was.
template <typename Fn>
bool guarded(Aic100Core *core, const char *what, Fn fn) noexcept
{
	const char *why = "unknown error";
	try {
		fn();
		return true;
	} catch (const std::exception &e) {
		why = e.what();
	} catch (...) {
	}
	char msg[160];
	std::snprintf(msg, sizeof(msg), "aic100 core: %s refused: %s", what, why);
	core->host.guest_error(msg);
	return false;
}

} // namespace

extern "C" {

void aic100_core_default_config(Aic100Config *cfg)
{
	const aic100::DeviceConfig d;
	cfg->family = AIC100_FAMILY_AIC100;
	cfg->device_id = d.device_id;
	cfg->nsp_count = d.nsp_count;
	cfg->ddr_size = d.ddr_size;
	cfg->bar4_size = d.bar4_size;
	cfg->serial_number = d.serial_number;
	cfg->boot_amss = d.boot_amss;
	cfg->nnc_crc = d.nnc_crc;
	cfg->test_mailbox = d.test_mailbox;
	cfg->soc_temp_mc = d.soc_temp_mc;
	cfg->board_temp_mc = d.board_temp_mc;
	cfg->ddr_temp_mc = d.ddr_temp_mc;
	cfg->board_power_uw = d.board_power_uw;
}

Aic100Core *aic100_core_new(const Aic100Config *cfg, const Aic100HostOps *ops, void *opaque, char *err,
			    size_t err_len)
{
	const aic100::DeviceConfig d = to_cpp(*cfg);
	const std::string why = d.validate();
	if (!why.empty()) {
		if (err && err_len)
			std::snprintf(err, err_len, "%s", why.c_str());
		return nullptr;
	}
	try {
		return new Aic100Core(d, *ops, opaque);
	} catch (const std::exception &e) {
		if (err && err_len)
			std::snprintf(err, err_len, "aic100 core: %s", e.what());
		return nullptr;
	}
}

void aic100_core_free(Aic100Core *core)
{
	delete core;
}

void aic100_core_reset(Aic100Core *core)
{
	guarded(core, "reset", [&] { core->dev.reset(); });
}

uint64_t aic100_core_bar_read(Aic100Core *core, unsigned bar, uint64_t offset, unsigned size)
{
	uint64_t value = 0;
	guarded(core, "register read", [&] { value = core->dev.bar_read(bar, offset, size); });
	return value;
}

void aic100_core_bar_write(Aic100Core *core, unsigned bar, uint64_t offset, uint64_t value, unsigned size)
{
	guarded(core, "register write", [&] { core->dev.bar_write(bar, offset, value, size); });
}

void aic100_core_process(Aic100Core *core)
{
	guarded(core, "request", [&] {
		core->dev.process();
		core->host.flush_guest_errors();
	});
}

int aic100_core_inject(Aic100Core *core, const char *fault, char *err, size_t err_len)
{
	std::string why;
	if (!guarded(core, "injection", [&] { why = core->dev.inject(fault); }))
		why = "the card could not take it (see the guest error log)";
	if (why.empty())
		return 0;
	if (err && err_len)
		std::snprintf(err, err_len, "%s", why.c_str());
	return -1;
}

void aic100_core_describe(Aic100Core *core, char *buf, size_t len)
{
	if (!buf || !len)
		return;
	buf[0] = '\0';
	guarded(core, "describe", [&] { std::snprintf(buf, len, "%s", core->dev.describe().c_str()); });
}

} // extern "C"
