// SPDX-License-Identifier: GPL-2.0-or-later
#include "qaic.h"

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>

#include <fcntl.h>
#include <unistd.h>
#include <xf86drm.h>

namespace fs = std::filesystem;

namespace qaic {

std::string Card::accel_node() const
{
	return accel_minor ? "/dev/accel/accel" + std::to_string(*accel_minor) : std::string();
}

std::string read_attr(const std::string &path)
{
	std::ifstream f(path);
	std::string s;
	if (!f || !std::getline(f, s))
		return {};
	while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
		s.pop_back();
	return s;
}

std::vector<Card> find_cards()
{
	std::vector<Card> cards;
	std::error_code ec;
	for (const auto &e : fs::directory_iterator("/sys/bus/pci/devices", ec)) {
		const std::string dir = e.path().string();
		if (read_attr(dir + "/vendor") != "0x17cb")
			continue;
		const std::string dev = read_attr(dir + "/device");
		if (dev != "0xa100" && dev != "0xa080" && dev != "0xa110")
			continue;
		Card c;
		c.bdf = e.path().filename().string();
		c.sysfs = dir;
		c.device_id = static_cast<uint16_t>(std::stoul(dev, nullptr, 16));
		std::error_code lec;
		const fs::path drv = fs::read_symlink(dir + "/driver", lec);
		if (!lec)
			c.driver = drv.filename().string();
		for (const auto &a : fs::directory_iterator(dir + "/accel", lec)) {
			const std::string name = a.path().filename().string();
			if (name.rfind("accel", 0) == 0)
				c.accel_minor = std::stoi(name.substr(5));
		}
		cards.push_back(std::move(c));
	}
	std::sort(cards.begin(), cards.end(), [](const Card &a, const Card &b) { return a.bdf < b.bdf; });
	return cards;
}

std::optional<Device> Device::open(int minor, int *err)
{
	return open("/dev/accel/accel" + std::to_string(minor), err);
}

std::optional<Device> Device::open(const std::string &node, int *err)
{
	const int fd = ::open(node.c_str(), O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		if (err)
			*err = errno;
		return std::nullopt;
	}
	return Device(fd);
}

Device &Device::operator=(Device &&o) noexcept
{
	if (this != &o) {
		if (fd_ >= 0)
			::close(fd_);
		fd_ = o.fd_;
		o.fd_ = -1;
	}
	return *this;
}

Device::~Device()
{
	if (fd_ >= 0)
		::close(fd_);
}

std::string Device::driver_name() const
{
	drmVersionPtr v = drmGetVersion(fd_);
	if (!v)
		return {};
	std::string name(v->name, v->name_len);
	drmFreeVersion(v);
	return name;
}

int Device::ioctl(unsigned long request, void *arg) const
{
	return drmIoctl(fd_, request, arg) ? -errno : 0;
}

} // namespace qaic
