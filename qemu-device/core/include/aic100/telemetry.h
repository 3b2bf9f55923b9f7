// SPDX-License-Identifier: GPL-2.0-or-later
// Telemetry on QAIC_TELEMETRY: the QSM answers the host's requests for
// temperatures, power, the power limit and the NSP counters, from a simple
// thermal and power model that injected sensor values override
// (docs/health.md, "Telemetry"). The messages are the card's ABI
// (aic100/telemetry_wire.h).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "aic100/host.h"
#include "aic100/mhi.h"
#include "aic100/ras.h"
#include "aic100/telemetry_wire.h"

namespace aic100 {

namespace telemetry {
enum class Sensor { SocTemp, BoardTemp, DdrTemp, BoardPower };
inline constexpr unsigned kSensors = 4;
std::optional<Sensor> sensor_named(const std::string &s);

// Model constants (µW, m°C).
inline constexpr int64_t kIdlePowerUw = 18'000'000, kNspPowerUw = 3'500'000;
inline constexpr int64_t kPowerMaxUw = 75'000'000, kTdpMinUw = 10'000'000;
inline constexpr int64_t kDefaultWarningMc = 95'000, kDefaultShutdownMc = 110'000, kMaxLimitMc = 150'000;
inline constexpr uint64_t kWindowNs = 100'000'000; // power is averaged over 100 ms
} // namespace telemetry

class Telemetry {
public:
	struct NspStats {
		uint64_t busy_ns = 0, inferences = 0, faults = 0;
		unsigned active = 0;
	};
	using StatsFn = std::function<NspStats()>;

	Telemetry(HostInterface &host, Mhi &mhi, Ras &ras, StatsFn stats);

	// A request on the host-to-card channel.
	void ul_message(std::span<const uint8_t> msg);
	// A new boot of AMSS: limits back to their defaults, highest
	// temperatures and throttling time forgotten. Injected sensor values
	// stay (they are physics, not firmware).
	void reset();

	// Pins a sensor to `value` (nullopt: back to the model). Crossing the
	// warning or shutdown temperature raises a TSENS RAS event. Empty when
	// done, else why not.
	std::string set_sensor(telemetry::Sensor s, std::optional<int64_t> value);

	// What a READ of `cmd` returns now (status in `st`).
	int64_t read(uint8_t cmd, telemetry::Status &st);
	// A WRITE of `cmd`; the status.
	telemetry::Status write(uint8_t cmd, int64_t value);

private:
	void sample();
	int64_t temperature(telemetry::Sensor s) const;
	int64_t cap_uw() const;
	int64_t demand_uw() const; // the model's draw, or the pinned reading

	HostInterface &host_;
	Mhi &mhi_;
	Ras &ras_;
	StatsFn stats_;
	std::array<std::optional<int64_t>, telemetry::kSensors> pinned_{};
	int64_t warning_mc_ = telemetry::kDefaultWarningMc;
	int64_t shutdown_mc_ = telemetry::kDefaultShutdownMc;
	int64_t tdp_uw_ = telemetry::kPowerMaxUw;
	int64_t power_state_ = 1;
	// The model, as of the last sample.
	bool sampled_ = false;
	uint64_t last_ns_ = 0, last_busy_ns_ = 0;
	int64_t model_uw_ = telemetry::kIdlePowerUw;  // what the NSPs' work would draw
	int64_t power_uw_ = telemetry::kIdlePowerUw;  // what the board draws
	int64_t max_soc_mc_ = 0, max_board_mc_ = 0;
	uint64_t throttled_ns_ = 0;
};

} // namespace aic100
