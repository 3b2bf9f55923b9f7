// SPDX-License-Identifier: GPL-2.0-or-later
// RAS reports on QAIC_STATUS: the QSM pushes one 104-byte message per error
// it detects, with the source's syndrome (docs/health.md, "RAS"). The
// message is the card's ABI (aic100/ras_wire.h).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "aic100/host.h"
#include "aic100/mhi.h"
#include "aic100/ras_wire.h"

namespace aic100 {

namespace ras {
// Names as the injection grammar spells them ("soc_mem", "ce", "upper").
std::optional<Source> source_named(const std::string &s);
std::optional<Type> type_named(const std::string &s);
std::optional<Threshold> threshold_named(const std::string &s);
const char *source_name(Source s);
} // namespace ras

class Ras {
public:
	struct Event {
		ras::Source source = ras::Source::SocMem;
		ras::Type type = ras::Type::Ce;
		uint64_t addr = 0;      // SoC/NSP memory, DDR, PCIe, system bus
		unsigned nsp = 0;       // NSP memory
		int32_t temp_mc = 0;    // TSENS, m°C (the message carries °C)
		ras::Threshold threshold = ras::Threshold::Upper;
	};

	Ras(HostInterface &host, Mhi &mhi);

	// Reports `e` on QAIC_STATUS. Without a host listening, a UE takes the
	// card to SYS_ERR; CE and UE_NF are only counted.
	void raise(const Event &e);
	// The host sends nothing on QAIC_STATUS.
	void ul_message(std::span<const uint8_t> msg);
	// A new boot of AMSS: sequence numbers and counts restart.
	void reset();

	// The 104-byte message for `e` with sequence number `seq` and the
	// running counts `ce`, `ue` of its source.
	static std::array<uint8_t, ras::kMessageSize> encode(const Event &e, uint32_t seq, uint32_t ce, uint32_t ue);

	uint64_t reported() const { return reported_; }
	uint64_t unheard() const { return unheard_; }
	uint32_t count(ras::Source s, ras::Type t) const;

private:
	HostInterface &host_;
	Mhi &mhi_;
	uint32_t seq_ = 0;
	uint64_t reported_ = 0, unheard_ = 0;
	// Per source: CE, UE, UE_NF.
	std::array<std::array<uint32_t, 3>, ras::kSources> counts_{};
};

} // namespace aic100
