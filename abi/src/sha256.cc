// SPDX-License-Identifier: GPL-2.0-or-later
#include "aic100/sha256.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace aic100 {

namespace {

constexpr std::array<uint32_t, 64> kRound = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

constexpr std::array<uint32_t, 8> kInit = {
	0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

inline uint32_t load_be32(const uint8_t *p)
{
	return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3];
}

inline void store_be32(uint8_t *p, uint32_t v)
{
	p[0] = uint8_t(v >> 24);
	p[1] = uint8_t(v >> 16);
	p[2] = uint8_t(v >> 8);
	p[3] = uint8_t(v);
}

} // namespace

void Sha256::reset()
{
	state_ = kInit;
	buf_len_ = 0;
	total_len_ = 0;
}

void Sha256::compress(const uint8_t *block)
{
	// A 16-word rolling schedule keeps the working set in registers.
	uint32_t w[16];
	for (int i = 0; i < 16; i++)
		w[i] = load_be32(block + 4 * i);

	uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
	uint32_t e = state_[4], f = state_[5], g = state_[6], h = state_[7];
	for (int i = 0; i < 64; i++) {
		uint32_t wi;
		if (i < 16) {
			wi = w[i];
		} else {
			const uint32_t w15 = w[(i - 15) & 15], w2 = w[(i - 2) & 15];
			const uint32_t s0 = std::rotr(w15, 7) ^ std::rotr(w15, 18) ^ (w15 >> 3);
			const uint32_t s1 = std::rotr(w2, 17) ^ std::rotr(w2, 19) ^ (w2 >> 10);
			wi = w[i & 15] = w[i & 15] + s0 + w[(i - 7) & 15] + s1;
		}
		const uint32_t S1 = std::rotr(e, 6) ^ std::rotr(e, 11) ^ std::rotr(e, 25);
		const uint32_t ch = (e & f) ^ (~e & g);
		const uint32_t t1 = h + S1 + ch + kRound[i] + wi;
		const uint32_t S0 = std::rotr(a, 2) ^ std::rotr(a, 13) ^ std::rotr(a, 22);
		const uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
		const uint32_t t2 = S0 + maj;
		h = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}
	state_[0] += a;
	state_[1] += b;
	state_[2] += c;
	state_[3] += d;
	state_[4] += e;
	state_[5] += f;
	state_[6] += g;
	state_[7] += h;
}

void Sha256::update(const void *data, size_t len)
{
	const uint8_t *p = static_cast<const uint8_t *>(data);
	total_len_ += len;
	if (buf_len_) {
		const size_t take = std::min(len, buf_.size() - buf_len_);
		std::memcpy(buf_.data() + buf_len_, p, take);
		buf_len_ += take;
		p += take;
		len -= take;
		if (buf_len_ < buf_.size())
			return;
		compress(buf_.data());
		buf_len_ = 0;
	}
	// Whole blocks straight from the caller's buffer, no copy.
	for (; len >= 64; p += 64, len -= 64)
		compress(p);
	if (len) {
		std::memcpy(buf_.data(), p, len);
		buf_len_ = len;
	}
}

Sha256Digest Sha256::finish()
{
	const uint64_t bits = total_len_ * 8;
	// 0x80, zeros up to 56 mod 64, then the message length in bits (be64).
	uint8_t pad[72] = {0x80};
	const size_t pad_len = (buf_len_ < 56 ? 56 : 120) - buf_len_;
	for (int i = 0; i < 8; i++)
		pad[pad_len + i] = uint8_t(bits >> (56 - 8 * i));
	update(pad, pad_len + 8);

	Sha256Digest out;
	for (int i = 0; i < 8; i++)
		store_be32(out.data() + 4 * i, state_[i]);
	reset();
	return out;
}

Sha256Digest sha256(std::span<const uint8_t> data)
{
	Sha256 s;
	s.update(data);
	return s.finish();
}

} // namespace aic100
