// SPDX-License-Identifier: GPL-2.0-or-later
// A stand-in for the qaic driver's MANAGE ioctl: records the message it was
// given and writes back a reply the test composed, as the driver does (over
// the same buffer, with len and count updated on success and -ECANCELED).
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "manage.h"

namespace qaic::test {

struct FakeDriver {
	// What the last ioctl carried.
	unsigned calls = 0;
	uint32_t len = 0, count = 0;
	std::vector<uint8_t> request;
	// What the next one answers.
	int ret = 0;
	std::vector<uint8_t> reply;
	uint32_t reply_count = 0;

	template <typename T> void add(const T &t) { add_bytes(&t, sizeof(t)); }
	void add_bytes(const void *p, size_t n)
	{
		const auto *b = static_cast<const uint8_t *>(p);
		reply.insert(reply.end(), b, b + n);
		reply_count++;
	}
	// A PASSTHROUGH_FROM_DEV holding `resp`, zero-padded to `pad_to` bytes
	// of payload (the QSM pads to the request's length).
	template <typename T> void add_passthrough(const T &resp, size_t pad_to = 0)
	{
		std::vector<uint8_t> p(sizeof(qaic_manage_trans_hdr));
		p.insert(p.end(), reinterpret_cast<const uint8_t *>(&resp),
			 reinterpret_cast<const uint8_t *>(&resp) + sizeof(resp));
		p.resize(std::max(p.size(), sizeof(qaic_manage_trans_hdr) + pad_to));
		p.resize((p.size() + 7) & ~size_t{7});
		const qaic_manage_trans_hdr h{QAIC_TRANS_PASSTHROUGH_FROM_DEV, static_cast<uint32_t>(p.size())};
		std::memcpy(p.data(), &h, sizeof(h));
		add_bytes(p.data(), p.size());
	}

	Ioctl ioctl()
	{
		return [this](unsigned long req, void *arg) {
			EXPECT_EQ(req, DRM_IOCTL_QAIC_MANAGE);
			auto *m = static_cast<qaic_manage_msg *>(arg);
			calls++;
			len = m->len;
			count = m->count;
			auto *data = reinterpret_cast<uint8_t *>(static_cast<uintptr_t>(m->data));
			request.assign(data, data + std::min<uint32_t>(m->len, 4096));
			if (ret == 0 || ret == -ECANCELED) {
				std::memcpy(data, reply.data(), reply.size());
				m->len = static_cast<uint32_t>(reply.size());
				m->count = reply_count;
			}
			return ret;
		};
	}

	// The request's n-th transaction (header included), or empty.
	std::vector<uint8_t> transaction(size_t n) const
	{
		size_t off = 0;
		for (size_t i = 0; off + 8 <= request.size(); i++) {
			qaic_manage_trans_hdr h;
			std::memcpy(&h, request.data() + off, sizeof(h));
			if (h.len < 8 || off + h.len > request.size())
				return {};
			if (i == n)
				return {request.begin() + off, request.begin() + off + h.len};
			off += h.len;
		}
		return {};
	}
};

template <typename T> T as(const std::vector<uint8_t> &b, size_t off = 0)
{
	T v{};
	if (b.size() >= off + sizeof(T))
		std::memcpy(&v, b.data() + off, sizeof(T));
	return v;
}

} // namespace qaic::test
