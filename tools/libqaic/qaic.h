// SPDX-License-Identifier: GPL-2.0-or-later
// libqaic: what a user-space program needs to find AIC100 cards and talk to
// the qaic driver. Discovery is by sysfs; ioctls go through libdrm.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace qaic {

// One AIC100 PCI function, whether or not a driver is bound to it.
struct Card {
	std::string bdf;       // e.g. 0000:01:00.0
	std::string sysfs;     // /sys/bus/pci/devices/<bdf>
	uint16_t device_id{};  // 0xa100, 0xa080 or 0xa110 (AIC200)
	std::string driver;    // bound driver's name, empty if none
	std::optional<int> accel_minor; // N of /dev/accel/accelN, if registered

	std::string accel_node() const;
};

// Every 17cb:a100/a080 function in the system, in PCI address order.
std::vector<Card> find_cards();

// Reads a sysfs attribute, trimmed; empty if unreadable.
std::string read_attr(const std::string &path);

// An open accel node. Move-only; closes on destruction.
class Device {
public:
	// Opens /dev/accel/accel<minor>. Returns the errno on failure.
	static std::optional<Device> open(int minor, int *err = nullptr);
	// Opens a node by path, e.g. /dev/accel/accel0.
	static std::optional<Device> open(const std::string &node, int *err = nullptr);

	Device(Device &&o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
	Device &operator=(Device &&o) noexcept;
	Device(const Device &) = delete;
	Device &operator=(const Device &) = delete;
	~Device();

	int fd() const { return fd_; }
	// The DRM driver name reported by the kernel (e.g. "qaic").
	std::string driver_name() const;
	// drmIoctl(); returns 0 or -errno.
	int ioctl(unsigned long request, void *arg) const;

private:
	explicit Device(int fd) : fd_(fd) {}
	int fd_ = -1;
};

} // namespace qaic
