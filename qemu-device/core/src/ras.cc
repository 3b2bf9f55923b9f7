// SPDX-License-Identifier: GPL-2.0-or-later
// RAS reports on QAIC_STATUS (docs/health.md, "RAS"). Syndrome layouts are
// those of later upstream qaic_ras.c.
#include "aic100/ras.h"
#include "aic100/wire.h"

#include <cstdio>
#include <cstring>

namespace aic100 {

using namespace ras;

namespace {

const char *const kSourceNames[kSources] = {"soc_mem", "pcie", "ddr", "sys_bus1", "sys_bus2", "nsp_mem", "tsens"};

} // namespace

std::optional<Source> ras::source_named(const std::string &s)
{
	for (unsigned i = 0; i < kSources; i++)
		if (s == kSourceNames[i])
			return static_cast<Source>(i);
	return std::nullopt;
}

std::optional<Type> ras::type_named(const std::string &s)
{
	if (s == "ce")
		return Type::Ce;
	if (s == "ue")
		return Type::Ue;
	if (s == "ue_nf")
		return Type::UeNf;
	return std::nullopt;
}

std::optional<Threshold> ras::threshold_named(const std::string &s)
{
	if (s == "lower")
		return Threshold::Lower;
	if (s == "upper")
		return Threshold::Upper;
	if (s == "critical")
		return Threshold::Critical;
	return std::nullopt;
}

const char *ras::source_name(Source s)
{
	const auto i = static_cast<unsigned>(s);
	return i < kSources ? kSourceNames[i] : "?";
}

Ras::Ras(HostInterface &host, Mhi &mhi) : host_(host), mhi_(mhi)
{
}

void Ras::reset()
{
	seq_ = 0;
	counts_ = {};
}

uint32_t Ras::count(Source s, Type t) const
{
	const auto i = static_cast<unsigned>(s), j = static_cast<unsigned>(t);
	return i < kSources && j < 3 ? counts_[i][j] : 0;
}

std::array<uint8_t, kMessageSize> Ras::encode(const Event &e, uint32_t seq, uint32_t ce, uint32_t ue)
{
	std::array<uint8_t, kMessageSize> m{};
	uint8_t *p = m.data();
	wire::store<uint16_t>(p, 0, kMagic);
	wire::store<uint16_t>(p, 2, kVersion);
	wire::store<uint32_t>(p, 4, seq);
	p[8] = 0; // PUSH
	p[9] = 0;
	wire::store<uint16_t>(p, 10, static_cast<uint16_t>(kMessageSize - kHeaderSize));
	wire::store<int32_t>(p, 12, 0); // result
	wire::store<uint32_t>(p, 16, static_cast<uint32_t>(e.source));
	wire::store<uint32_t>(p, 20, static_cast<uint32_t>(e.type));
	wire::store<uint32_t>(p, 24, 1); // err_threshold: every error is reported
	wire::store<uint32_t>(p, 28, ce);
	wire::store<uint32_t>(p, 32, ue);
	// The interrupt line of each source's error controller.
	static const uint32_t irqs[kSources] = {33, 34, 35, 36, 37, 38, 39};
	wire::store<uint32_t>(p, 36, irqs[static_cast<unsigned>(e.source) % kSources]);
	uint8_t *syn = p + 40;
	switch (e.source) {
	case Source::SocMem:
		wire::store<uint64_t>(syn, 0, e.addr); // error_address[0]
		break;
	case Source::Pcie:
		if (e.type == Type::Ce)
			wire::store<uint32_t>(syn, 0, 1); // bad_tlp
		else if (e.type == Type::UeNf)
			wire::store<uint32_t>(syn, 28, 1); // poison_tlp
		else
			wire::store<uint32_t>(syn, 48, static_cast<uint32_t>(e.addr)); // addr
		break;
	case Source::Ddr:
		wire::store<uint32_t>(syn, 0, 1);                                     // count
		wire::store<uint32_t>(syn, 40, static_cast<uint32_t>(e.addr));        // addr_lsb
		wire::store<uint16_t>(syn, 44, static_cast<uint16_t>(e.addr >> 32)); // addr_msb
		wire::store<uint16_t>(syn, 50, static_cast<uint16_t>(e.type == Type::Ce ? 0 : 1));
		break;
	case Source::SysBus1:
		wire::store<uint16_t>(syn, 8, static_cast<uint16_t>(e.addr)); // addr[0]
		break;
	case Source::SysBus2:
		wire::store<uint32_t>(syn, 0, static_cast<uint32_t>(e.addr));       // lsb3
		wire::store<uint32_t>(syn, 4, static_cast<uint32_t>(e.addr >> 32)); // msb3
		syn[28] = 1;                                                // valid
		break;
	case Source::NspMem:
		wire::store<uint32_t>(syn, 0, static_cast<uint32_t>(e.addr)); // error_address[0]
		syn[32] = static_cast<uint8_t>(e.nsp);                // nsp_id
		break;
	case Source::Tsens:
		wire::store<uint32_t>(syn, 0, static_cast<uint32_t>(e.threshold));
		wire::store<int32_t>(syn, 4, e.temp_mc / 1000); // °C
		break;
	}
	return m;
}

void Ras::raise(const Event &e)
{
	auto &c = counts_[static_cast<unsigned>(e.source) % kSources];
	c[static_cast<unsigned>(e.type) % 3]++;
	const auto m = encode(e, seq_++, c[0], c[1] + c[2]);
	char msg[96];
	std::snprintf(msg, sizeof(msg), "RAS: %s error from %s",
		      e.type == Type::Ce ? "correctable" : e.type == Type::Ue ? "uncorrectable" : "non-fatal uncorrectable",
		      source_name(e.source));
	host_.trace(msg);
	if (mhi_.send(kDl, std::vector<uint8_t>(m.begin(), m.end()))) {
		reported_++;
		return;
	}
	unheard_++;
	if (e.type == Type::Ue) {
		// Nobody hears it, yet the card cannot go on: fail so that the
		// host's MHI stack resets it.
		const std::string why = std::string(msg) + " with no host listening";
		host_.trace((why + ": SYS_ERR").c_str());
		mhi_.sys_err(why.c_str());
	}
}

void Ras::ul_message(std::span<const uint8_t> msg)
{
	(void)msg;
	host_.guest_error("RAS: the card expects nothing on QAIC_STATUS; message dropped");
}

} // namespace aic100
