// SPDX-License-Identifier: GPL-2.0-or-later
// A file descriptor with one owner: the fds that came with a message are
// held in these from the moment they are received, so whatever the server
// does not keep (a malformed message's, a replaced eventfd) is closed.
#pragma once

#include <unistd.h>

#include <utility>

namespace aic100::vfio_user {

class UniqueFd {
public:
	UniqueFd() = default;
	explicit UniqueFd(int fd) : fd_(fd) {}
	UniqueFd(UniqueFd &&o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
	UniqueFd &operator=(UniqueFd &&o) noexcept
	{
		if (this != &o)
			reset(std::exchange(o.fd_, -1));
		return *this;
	}
	UniqueFd(const UniqueFd &) = delete;
	UniqueFd &operator=(const UniqueFd &) = delete;
	~UniqueFd() { reset(); }

	int get() const { return fd_; }
	bool valid() const { return fd_ >= 0; }
	int release() { return std::exchange(fd_, -1); }
	void reset(int fd = -1)
	{
		if (fd_ >= 0)
			::close(fd_);
		fd_ = fd;
	}

private:
	int fd_ = -1;
};

}  // namespace aic100::vfio_user
