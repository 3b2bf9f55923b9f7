// SPDX-License-Identifier: GPL-2.0-or-later
#include "card_backend.h"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "aic100/vfio_user/dma_messages.h"

namespace aic100::vfio_user {
namespace {

uint64_t monotonic_ns()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

// The largest of 8, 4, 2, 1 bytes that `offset` is aligned to and `left`
// holds: the accesses QEMU's memory core would make of the glue's BARs.
unsigned access_size(uint64_t offset, size_t left)
{
	for (unsigned n = 8; n > 1; n /= 2)
		if (left >= n && offset % n == 0)
			return n;
	return 1;
}

}  // namespace

CardBackend::CardBackend(const DeviceConfig &cfg)
	: config_(pci_layout(cfg.family == Family::Aic200, cfg.device_id, cfg.bar4_size)),
	  kick_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)),
	  timer_(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)),
	  start_ns_(monotonic_ns()),
	  dev_(std::make_unique<Device>(*this, cfg))
{
}

CardBackend::~CardBackend()
{
	dev_.reset();  // its NSP threads may still kick
	for (auto &[address, m] : mappings_)
		munmap(m.base, m.len);
}

// Like the glue's `guarded`: an exception (an allocation the guest sized)
// becomes a guest error and the access is refused, never a dead server.
template <class Fn> void CardBackend::guarded(const char *what, Fn fn)
{
	try {
		fn();
	} catch (const std::exception &e) {
		char msg[160];
		std::snprintf(msg, sizeof(msg), "aic100 core: %s refused: %s", what, e.what());
		guest_error(msg);
	}
}

DeviceInfo CardBackend::device_info() const
{
	return {0, kDeviceReset | kDevicePci, kPciRegions, kPciIrqs};
}

RegionDesc CardBackend::region(uint32_t index) const
{
	RegionDesc d;
	if (index < pci::kBars && config_.layout().bars[index].size) {
		d.flags = kRegionRead | kRegionWrite;
		d.size = config_.layout().bars[index].size;
	} else if (index == kConfigRegion) {
		d.flags = kRegionRead | kRegionWrite;
		d.size = pci::kConfigSize;
	}
	return d;
}

// As Linux's vfio-pci reports a PCI Express function without an INTx pin:
// no INTx, MSI's 32 vectors, MSI-X's table on the AIC200, ERR and REQ.
IrqDesc CardBackend::irq(uint32_t index) const
{
	switch (index) {
	case kIntxIrq:
		return {kIrqEventfd | kIrqMaskable | kIrqAutomasked, 0};
	case kMsiIrq:
		return {kIrqEventfd | kIrqNoresize, pci::kMsiVectors};
	case kMsixIrq:
		return {kIrqEventfd | kIrqNoresize, config_.layout().aic200 ? pci::kMsixVectors : 0};
	case kErrIrq:
	case kReqIrq:
		return {kIrqEventfd, 1};
	default:
		return {};
	}
}

// The BAR's bytes in the accesses QEMU would make of the glue's
// MemoryRegionOps (1 to 8 bytes, aligned), each to the core's BAR entry
// point, which dispatches by the family's BAR layout.
int CardBackend::region_read(uint32_t index, uint64_t offset, std::span<uint8_t> out)
{
	for (size_t done = 0; done < out.size();) {
		const unsigned n = access_size(offset + done, out.size() - done);
		uint64_t v = 0;
		guarded("register read", [&] { v = dev_->bar_read(index, offset + done, n); });
		std::memcpy(out.data() + done, &v, n);
		done += n;
	}
	return 0;
}

int CardBackend::region_write(uint32_t index, uint64_t offset, std::span<const uint8_t> in)
{
	for (size_t done = 0; done < in.size();) {
		const unsigned n = access_size(offset + done, in.size() - done);
		uint64_t v = 0;
		std::memcpy(&v, in.data() + done, n);
		guarded("register write", [&] { dev_->bar_write(index, offset + done, v, n); });
		done += n;
	}
	return 0;
}

int CardBackend::config_read(uint64_t offset, std::span<uint8_t> out)
{
	config_.read(offset, out);
	return 0;
}

int CardBackend::config_write(uint64_t offset, std::span<const uint8_t> in)
{
	config_.write(offset, in);
	return 0;
}

// Mask, unmask and trigger without eventfds: nothing the card models
// (QEMU drives MSI and MSI-X through eventfds alone).
int CardBackend::irq_action(const IrqSet &, std::span<const uint8_t>)
{
	return 0;
}

// The vectors the host set up are those with an eventfd, from vector 0 on:
// QEMU sends MSI's 32 as 16 + 16, and the card folds onto what exists.
// MSI-X, once it has any, wins, as it does in the glue.
void CardBackend::irq_eventfds_changed(uint32_t)
{
	if (!link_.irqs) {
		msi_vectors_ = 0;
		return;
	}
	auto from_zero = [&](uint32_t index) {
		uint32_t n = 0;
		while (n < link_.irqs->vectors(index) && link_.irqs->fd(index, n) >= 0)
			n++;
		return n;
	};
	const uint32_t msix = from_zero(kMsixIrq);
	msix_ = msix > 0;
	msi_vectors_ = msix_ ? msix : from_zero(kMsiIrq);
}

uint32_t CardBackend::msi_index() const
{
	return msix_ ? kMsixIrq : kMsiIrq;
}

void CardBackend::raise_msi(unsigned vector)
{
	const int fd = link_.irqs ? link_.irqs->fd(msi_index(), vector) : -1;
	if (fd < 0)
		return;  // the host has not set this vector up (the glue's msi_notify would drop it too)
	const uint64_t one = 1;
	// A full counter (2^64 - 2 unread signals) is the only failure: the
	// interrupt is pending either way.
	[[maybe_unused]] const ssize_t n = write(fd, &one, sizeof(one));
}

uint64_t CardBackend::now_ns() const
{
	return monotonic_ns() - start_ns_;
}

void CardBackend::kick()
{
	const uint64_t one = 1;
	[[maybe_unused]] const ssize_t n = write(kick_.get(), &one, sizeof(one));
}

void CardBackend::arm_timer(uint64_t deadline_ns)
{
	itimerspec its{};
	if (deadline_ns != kNoDeadline) {
		// A deadline already past still fires: it_value 0 would disarm.
		const uint64_t at = std::max<uint64_t>(start_ns_ + std::min(deadline_ns, UINT64_MAX - start_ns_), 1);
		its.it_value.tv_sec = static_cast<time_t>(at / 1'000'000'000u);
		its.it_value.tv_nsec = static_cast<long>(at % 1'000'000'000u);
	}
	timerfd_settime(timer_.get(), TFD_TIMER_ABSTIME, &its, nullptr);
}

void CardBackend::guest_error(const char *msg)
{
	uint64_t dropped = 0;
	const bool admitted = error_limit_.admit(now_ns(), dropped);
	if (dropped)
		std::fprintf(stderr, "aic100-vfio-user: %llu more guest errors not logged\n",
			     static_cast<unsigned long long>(dropped));
	if (admitted)
		std::fprintf(stderr, "aic100-vfio-user: guest error: %s\n", msg);
}

void CardBackend::run_work()
{
	uint64_t count;
	[[maybe_unused]] ssize_t n = read(kick_.get(), &count, sizeof(count));
	n = read(timer_.get(), &count, sizeof(count));
	guarded("request", [&] { dev_->process(); });
}

int CardBackend::reset()
{
	config_.reset();
	guarded("reset", [&] { dev_->reset(); });
	return 0;
}

}  // namespace aic100::vfio_user
