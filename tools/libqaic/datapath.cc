// SPDX-License-Identifier: GPL-2.0-or-later
#include "datapath.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <drm.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

namespace qaic {

namespace {

// The data-path ioctls return EAGAIN (FIFO full) and ETIMEDOUT to the caller:
// libdrm's drmIoctl() would retry EAGAIN forever, so call ioctl() directly,
// retrying only interruptions.
int raw_ioctl(const Device &dev, unsigned long request, void *arg)
{
	int r;
	do {
		r = ::ioctl(dev.fd(), request, arg);
	} while (r == -1 && errno == EINTR);
	return r ? -errno : 0;
}

} // namespace

std::optional<Bo> Bo::create(const Device &dev, uint64_t size, int *err)
{
	qaic_create_bo c{};
	c.size = size;
	int r = dev.ioctl(DRM_IOCTL_QAIC_CREATE_BO, &c);
	if (!r) {
		qaic_mmap_bo m{};
		m.handle = c.handle;
		r = dev.ioctl(DRM_IOCTL_QAIC_MMAP_BO, &m);
		if (!r) {
			void *p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, dev.fd(),
				       static_cast<off_t>(m.offset));
			if (p != MAP_FAILED)
				return Bo(dev, c.handle, size, static_cast<uint8_t *>(p));
			r = -errno;
		}
		drm_gem_close g{};
		g.handle = c.handle;
		dev.ioctl(DRM_IOCTL_GEM_CLOSE, &g);
	}
	if (err)
		*err = r;
	return std::nullopt;
}

Bo::Bo(Bo &&o) noexcept : dev_(o.dev_), handle_(o.handle_), size_(o.size_), map_(o.map_)
{
	o.dev_ = nullptr;
	o.map_ = nullptr;
}

Bo &Bo::operator=(Bo &&o) noexcept
{
	if (this != &o) {
		release();
		dev_ = o.dev_;
		handle_ = o.handle_;
		size_ = o.size_;
		map_ = o.map_;
		o.dev_ = nullptr;
		o.map_ = nullptr;
	}
	return *this;
}

Bo::~Bo()
{
	release();
}

void Bo::release()
{
	if (map_)
		munmap(map_, size_);
	map_ = nullptr;
	if (dev_) {
		drm_gem_close g{};
		g.handle = handle_;
		dev_->ioctl(DRM_IOCTL_GEM_CLOSE, &g);
	}
	dev_ = nullptr;
}

qaic_sem sem(uint8_t cmd, uint8_t index, uint16_t val, bool presync, uint8_t flags)
{
	qaic_sem s{};
	s.val = val;
	s.index = index;
	s.presync = presync ? 1 : 0;
	s.cmd = cmd;
	s.flags = flags;
	return s;
}

CopySlices copy_slices(uint64_t size, uint64_t dev_addr, uint8_t index)
{
	CopySlices c{};
	c.in.size = c.out.size = size;
	c.in.dev_addr = c.out.dev_addr = dev_addr;
	c.in.sem0 = sem(QAIC_SEM_INC, index, 1, false);
	c.out.sem0 = sem(QAIC_SEM_WAIT_GT_0, index, 0, true);
	c.out.sem1 = sem(QAIC_SEM_DEC, index, 1, false);
	return c;
}

int attach_slices(const Device &dev, uint32_t handle, uint32_t dbc, Dir dir,
		  std::span<const qaic_attach_slice_entry> slices)
{
	qaic_attach_slice a{};
	a.hdr.count = static_cast<uint32_t>(slices.size());
	a.hdr.dbc_id = dbc;
	a.hdr.handle = handle;
	a.hdr.dir = dir;
	a.data = reinterpret_cast<uintptr_t>(slices.data());
	return raw_ioctl(dev, DRM_IOCTL_QAIC_ATTACH_SLICE_BO, &a);
}

int detach_slices(const Device &dev, uint32_t handle)
{
	qaic_detach_slice d{};
	d.handle = handle;
	return raw_ioctl(dev, DRM_IOCTL_QAIC_DETACH_SLICE_BO, &d);
}

int execute(const Device &dev, uint32_t dbc, std::span<const qaic_execute_entry> bos)
{
	qaic_execute e{};
	e.hdr.count = static_cast<uint32_t>(bos.size());
	e.hdr.dbc_id = dbc;
	e.data = reinterpret_cast<uintptr_t>(bos.data());
	return raw_ioctl(dev, DRM_IOCTL_QAIC_EXECUTE_BO, &e);
}

int execute_when_room(const Device &dev, uint32_t dbc, std::span<const qaic_execute_entry> bos, unsigned wait_ms)
{
	const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
	int r;
	while ((r = execute(dev, dbc, bos)) == -EAGAIN && std::chrono::steady_clock::now() < give_up)
		std::this_thread::sleep_for(std::chrono::microseconds(100));
	return r;
}

int partial_execute(const Device &dev, uint32_t dbc, std::span<const qaic_partial_execute_entry> bos)
{
	qaic_execute e{};
	e.hdr.count = static_cast<uint32_t>(bos.size());
	e.hdr.dbc_id = dbc;
	e.data = reinterpret_cast<uintptr_t>(bos.data());
	return raw_ioctl(dev, DRM_IOCTL_QAIC_PARTIAL_EXECUTE_BO, &e);
}

int wait(const Device &dev, uint32_t dbc, uint32_t handle, uint32_t timeout_ms)
{
	qaic_wait w{};
	w.handle = handle;
	w.timeout = timeout_ms;
	w.dbc_id = dbc;
	return raw_ioctl(dev, DRM_IOCTL_QAIC_WAIT_BO, &w);
}

int perf_stats(const Device &dev, uint32_t dbc, std::span<qaic_perf_stats_entry> entries)
{
	qaic_perf_stats p{};
	p.hdr.count = static_cast<uint16_t>(entries.size());
	p.hdr.dbc_id = dbc;
	p.data = reinterpret_cast<uintptr_t>(entries.data());
	return raw_ioctl(dev, DRM_IOCTL_QAIC_PERF_STATS_BO, &p);
}

} // namespace qaic
