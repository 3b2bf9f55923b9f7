// SPDX-License-Identifier: GPL-2.0-or-later
// Telemetry on QAIC_TELEMETRY (docs/health.md, "Telemetry").
#include "aic100/telemetry.h"
#include "aic100/wire.h"

#include <algorithm>
#include <cstdio>
#include <cstring>

namespace aic100 {

using wire::load;

using namespace telemetry;

namespace {

} // namespace

std::optional<Sensor> telemetry::sensor_named(const std::string &s)
{
	if (s == "soc_temp")
		return Sensor::SocTemp;
	if (s == "board_temp")
		return Sensor::BoardTemp;
	if (s == "ddr_temp")
		return Sensor::DdrTemp;
	if (s == "board_power")
		return Sensor::BoardPower;
	return std::nullopt;
}

Telemetry::Telemetry(HostInterface &host, Mhi &mhi, Ras &ras, StatsFn stats)
	: host_(host), mhi_(mhi), ras_(ras), stats_(std::move(stats))
{
}

void Telemetry::reset()
{
	warning_mc_ = kDefaultWarningMc;
	shutdown_mc_ = kDefaultShutdownMc;
	tdp_uw_ = kPowerMaxUw;
	power_state_ = 1;
	sampled_ = false;
	model_uw_ = power_uw_ = kIdlePowerUw;
	max_soc_mc_ = max_board_mc_ = 0;
	throttled_ns_ = 0;
}

int64_t Telemetry::demand_uw() const
{
	// A pinned reading is what the board draws; the model's draw is held
	// to the limit by throttling.
	return pinned_[size_t(Sensor::BoardPower)].value_or(model_uw_);
}

int64_t Telemetry::cap_uw() const
{
	// Reduced and minimal power states take a quarter and a half off the limit.
	return power_state_ == 1 ? tdp_uw_ : power_state_ == 2 ? tdp_uw_ * 3 / 4 : tdp_uw_ / 2;
}

void Telemetry::sample()
{
	const uint64_t now = host_.now_ns();
	const NspStats s = stats_ ? stats_() : NspStats{};
	if (!sampled_) {
		sampled_ = true;
		last_ns_ = now;
		last_busy_ns_ = s.busy_ns;
	} else if (now - last_ns_ >= kWindowNs) {
		const uint64_t dt = now - last_ns_;
		const uint64_t busy = s.busy_ns >= last_busy_ns_ ? s.busy_ns - last_busy_ns_ : 0;
		// NSPs busy on average over the window; the NSP threads run on
		// host time, so keep it within what is assigned.
		const double nsps = std::min<double>(double(busy) / double(dt), s.active);
		model_uw_ = kIdlePowerUw + int64_t(nsps * double(kNspPowerUw));
		if (demand_uw() > cap_uw())
			throttled_ns_ += dt;
		last_ns_ = now;
		last_busy_ns_ = s.busy_ns;
	}
	power_uw_ = pinned_[size_t(Sensor::BoardPower)].value_or(std::min(model_uw_, cap_uw()));
	max_soc_mc_ = std::max(max_soc_mc_, temperature(Sensor::SocTemp));
	max_board_mc_ = std::max(max_board_mc_, temperature(Sensor::BoardTemp));
}

int64_t Telemetry::temperature(Sensor s) const
{
	if (const auto &p = pinned_[size_t(s)])
		return *p;
	// Ambient plus a thermal resistance times the board's power.
	switch (s) {
	case Sensor::SocTemp:
		return 35'000 + power_uw_ * 6 / 10'000;
	case Sensor::BoardTemp:
		return 30'000 + power_uw_ * 4 / 10'000;
	default:
		return 32'000 + power_uw_ * 3 / 10'000;
	}
}

std::string Telemetry::set_sensor(Sensor s, std::optional<int64_t> value)
{
	if (value) {
		const bool power = s == Sensor::BoardPower;
		const int64_t lo = power ? 0 : -40'000, hi = power ? 500'000'000 : 200'000;
		if (*value < lo || *value > hi) {
			char msg[96];
			std::snprintf(msg, sizeof(msg), "sensor value %lld out of range [%lld, %lld] %s",
				      static_cast<long long>(*value), static_cast<long long>(lo),
				      static_cast<long long>(hi), power ? "uW" : "m°C");
			return msg;
		}
	}
	sample();
	const int64_t before = temperature(Sensor::SocTemp);
	pinned_[size_t(s)] = value;
	sample();
	const int64_t after = temperature(Sensor::SocTemp);
	// The temperature sensors' comparators fire on the way up.
	Ras::Event e;
	e.source = ras::Source::Tsens;
	e.temp_mc = static_cast<int32_t>(after);
	if (after >= shutdown_mc_ && before < shutdown_mc_) {
		e.type = ras::Type::UeNf;
		e.threshold = ras::Threshold::Critical;
		ras_.raise(e);
	} else if (after >= warning_mc_ && before < warning_mc_) {
		e.type = ras::Type::Ce;
		e.threshold = ras::Threshold::Upper;
		ras_.raise(e);
	}
	return {};
}

int64_t Telemetry::read(uint8_t cmd, Status &st)
{
	st = kOk;
	sample();
	const NspStats s = stats_ ? stats_() : NspStats{};
	switch (cmd) {
	case kSocTemp:
		return temperature(Sensor::SocTemp);
	case kSocMaxTemp:
		return max_soc_mc_;
	case kBoardTemp:
		return temperature(Sensor::BoardTemp);
	case kBoardMaxTemp:
		return max_board_mc_;
	case kDdrTemp:
		return temperature(Sensor::DdrTemp);
	case kWarningTemp:
		return warning_mc_;
	case kShutdownTemp:
		return shutdown_mc_;
	case kCurrentTdp:
		return tdp_uw_;
	case kBoardPower:
		return power_uw_;
	case kPowerState:
		return power_state_;
	case kPowerMax:
		return kPowerMaxUw;
	case kThrottlePercent:
		return demand_uw() > cap_uw() ? (demand_uw() - cap_uw()) * 100 / demand_uw() : 0;
	case kThrottleTime:
		return static_cast<int64_t>(throttled_ns_ / 1'000'000);
	case kNspBusyNs:
		return static_cast<int64_t>(s.busy_ns);
	case kNspInferences:
		return static_cast<int64_t>(s.inferences);
	case kNspFaults:
		return static_cast<int64_t>(s.faults);
	case kNspActive:
		return s.active;
	default:
		st = kUnknownCmd;
		return 0;
	}
}

Status Telemetry::write(uint8_t cmd, int64_t v)
{
	switch (cmd) {
	case kWarningTemp:
	case kShutdownTemp:
		if (v <= 0 || v > kMaxLimitMc)
			return kOutOfRange;
		(cmd == kWarningTemp ? warning_mc_ : shutdown_mc_) = v;
		return kOk;
	case kCurrentTdp:
		if (v < kTdpMinUw || v > kPowerMaxUw)
			return kOutOfRange;
		sample();
		tdp_uw_ = v;
		sample();
		return kOk;
	case kPowerState:
		if (v < 1 || v > 3)
			return kOutOfRange;
		power_state_ = v;
		return kOk;
	default: {
		Status st;
		read(cmd, st);
		return st == kOk ? kReadOnly : st;
	}
	}
}

void Telemetry::ul_message(std::span<const uint8_t> msg)
{
	if (msg.size() < 12 || load<uint16_t>(msg, 0) != kMagic) {
		host_.guest_error("telemetry: request without a valid header dropped");
		return;
	}
	std::array<uint8_t, kMessageSize> r{};
	std::memcpy(r.data(), msg.data(), 12); // magic, version, seq, type, id, len
	r[8] = kTypeResp;
	const uint16_t len = kMessageSize - 12;
	std::memcpy(r.data() + 10, &len, 2);
	const bool complete = msg.size() == kMessageSize;
	if (complete) {
		r[12] = msg[12];
		r[13] = msg[13];
	}
	Status st = kOk;
	int64_t val = 0;
	if (!complete || load<uint16_t>(msg, 2) != kVersion || msg[8] != kTypeReq ||
	    load<uint16_t>(msg, 10) != kMessageSize - 12 || msg[13] > kWrite) {
		host_.guest_error("telemetry: malformed request (version, type or length) refused");
		st = kMalformed;
	} else if (msg[13] == kRead) {
		val = read(msg[12], st);
	} else {
		val = load<int64_t>(msg, 15);
		st = write(msg[12], val);
	}
	const uint16_t ver = kVersion;
	std::memcpy(r.data() + 2, &ver, 2);
	r[14] = st;
	std::memcpy(r.data() + 15, &val, 8);
	mhi_.send(kDl, std::vector<uint8_t>(r.begin(), r.end()));
}

} // namespace aic100
