// SPDX-License-Identifier: GPL-2.0-or-later
// Fault injection: the command grammar shared by the QEMU monitor, QMP and
// the BAR4 test mailbox (docs/health.md, "Fault injection").
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>

#include "aic100/device.h"

namespace aic100 {

namespace {

constexpr char kUsage[] = "known: syserr; idle; crash dbc=N|nsp=N [hold=1] [reason=TEXT]; ssr release; "
			  "ras ce|ue|ue_nf source=S [addr=A] [nsp=N] [temp=MC] [threshold=T]; "
			  "sensor soc_temp|board_temp|ddr_temp|board_power=VALUE|auto; "
			  "bootlog hold [release=reset|handover] [ack_delay_ms=MS]|normal; "
			  "timesync hold release=handover|normal";

std::optional<int64_t> number(const std::string &s, int64_t lo, int64_t hi)
{
	if (s.empty())
		return std::nullopt;
	errno = 0;
	char *end = nullptr;
	const long long v = std::strtoll(s.c_str(), &end, 0);
	if (errno || *end || v < lo || v > hi)
		return std::nullopt;
	return v;
}

std::optional<uint64_t> address(const std::string &s)
{
	if (s.empty() || s[0] == '-')
		return std::nullopt;
	errno = 0;
	char *end = nullptr;
	const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
	if (errno || *end)
		return std::nullopt;
	return v;
}

// "key=value" words after the verb; `reason=` takes the rest of the line.
bool arguments(std::istringstream &in, std::map<std::string, std::string> &out, std::string &err)
{
	std::string word;
	while (in >> word) {
		const size_t eq = word.find('=');
		if (eq == std::string::npos || eq == 0) {
			err = "'" + word + "' is not key=value";
			return false;
		}
		std::string key = word.substr(0, eq), value = word.substr(eq + 1);
		if (key == "reason") {
			std::string rest;
			std::getline(in, rest);
			value += rest;
		}
		if (out.count(key)) {
			err = key + "= given twice";
			return false;
		}
		out[key] = value;
	}
	return true;
}

} // namespace

// A SYS_ERR's event and MSI may reach QEMU's config space (a reset or an
// unplug of this very card): the injection is the card's own pass.
std::string Device::inject(const std::string &command)
{
	std::string result;
	as_own_pass([&] {
		result = run_injection(command);
		halt_on_sys_err();
	});
	return result;
}

namespace {

using Args = std::map<std::string, std::string>;

// Whether anything follows the words already read.
bool more_words(std::istringstream &in)
{
	std::string extra;
	return bool(in >> extra);
}

std::string inject_crash(Qsm &qsm, std::istringstream &in)
{
	Args a;
	std::string err;
	if (!arguments(in, a, err))
		return "crash: " + err;
	const std::string reason = a.count("reason") ? a["reason"] : "no reason given";
	a.erase("reason");
	bool hold = false;
	if (a.count("hold")) {
		const auto h = number(a["hold"], 0, 1);
		if (!h)
			return "crash: hold=" + a["hold"] + " is not 0 or 1";
		hold = *h;
		a.erase("hold");
	}
	if (a.size() != 1 || !(a.count("dbc") || a.count("nsp")))
		return "crash: give dbc=N or nsp=N";
	if (a.count("dbc")) {
		const auto n = number(a["dbc"], 0, 255);
		return n ? qsm.crash_dbc(unsigned(*n), reason, hold) : "crash: dbc=" + a["dbc"] + " is not a number";
	}
	const auto n = number(a["nsp"], 0, 255);
	return n ? qsm.crash_nsp(unsigned(*n), reason, hold) : "crash: nsp=" + a["nsp"] + " is not a number";
}

std::string inject_ssr(Qsm &qsm, std::istringstream &in)
{
	std::string what;
	in >> what;
	if (what != "release" || more_words(in))
		return "ssr: the only command is 'ssr release'";
	return qsm.ssr_release();
}

// One optional argument of a RAS event (all but source=) into `e`.
std::string ras_argument(const std::string &key, const std::string &value, Ras::Event &e)
{
	if (key == "addr") {
		const auto v = address(value);
		if (!v)
			return "ras: addr=" + value + " is not an address";
		e.addr = *v;
	} else if (key == "nsp") {
		const auto v = number(value, 0, kMaxNsps - 1);
		if (!v)
			return "ras: nsp=" + value + " (0..15)";
		e.nsp = unsigned(*v);
	} else if (key == "temp") {
		const auto v = number(value, -40000, 200000);
		if (!v)
			return "ras: temp=" + value + " (m°C, -40000..200000)";
		e.temp_mc = int32_t(*v);
	} else if (key == "threshold") {
		const auto v = ras::threshold_named(value);
		if (!v)
			return "ras: threshold=" + value + " (lower, upper or critical)";
		e.threshold = *v;
	} else {
		return "ras: unknown argument " + key + "=";
	}
	return {};
}

std::string inject_ras(Qsm &qsm, std::istringstream &in)
{
	std::string type;
	in >> type;
	const auto t = ras::type_named(type);
	if (!t)
		return "ras: the error type '" + type + "' is not ce, ue or ue_nf";
	Args a;
	std::string err;
	if (!arguments(in, a, err))
		return "ras: " + err;
	Ras::Event e;
	e.type = *t;
	const auto src = ras::source_named(a["source"]);
	if (!src)
		return "ras: source=" + a["source"] + " (soc_mem, pcie, ddr, sys_bus1, sys_bus2, nsp_mem or tsens)";
	e.source = *src;
	a.erase("source");
	for (const auto &[key, value] : a)
		if (std::string why = ras_argument(key, value, e); !why.empty())
			return why;
	if (!qsm.running())
		return "ras: RAS reports come from the QSM, and AMSS is not running";
	qsm.ras().raise(e);
	return {};
}

std::string inject_sensor(Qsm &qsm, std::istringstream &in)
{
	Args a;
	std::string err;
	if (!arguments(in, a, err))
		return "sensor: " + err;
	if (a.empty())
		return "sensor: give NAME=VALUE|auto";
	// Every value is checked before any sensor changes.
	std::vector<std::pair<telemetry::Sensor, std::optional<int64_t>>> sets;
	for (const auto &[key, value] : a) {
		const auto s = telemetry::sensor_named(key);
		if (!s)
			return "sensor: unknown sensor " + key + " (soc_temp, board_temp, ddr_temp, board_power)";
		const bool power = *s == telemetry::Sensor::BoardPower;
		if (value == "auto") {
			sets.emplace_back(*s, std::nullopt);
			continue;
		}
		const auto v = power ? number(value, 0, 500'000'000) : number(value, -40000, 200000);
		if (!v)
			return "sensor: " + key + "=" + value +
			       (power ? " (uW, 0..500000000, or auto)" : " (m°C, -40000..200000, or auto)");
		sets.emplace_back(*s, *v);
	}
	for (const auto &[s, v] : sets)
		qsm.telemetry().set_sensor(s, v);
	return {};
}

// The arguments of "bootlog hold".
std::string bootlog_hold(Sbl &sbl, const Args &a)
{
	uint64_t delay_ms = 0;
	Sbl::Release release = Sbl::Release::AtChannelReset;
	for (const auto &[key, value] : a) {
		if (key == "release") {
			if (value != "reset" && value != "handover")
				return "bootlog hold: release=" + value + " (reset or handover)";
			release = value == "reset" ? Sbl::Release::AtChannelReset : Sbl::Release::AtHandover;
			continue;
		}
		if (key != "ack_delay_ms")
			return "bootlog hold: unknown argument " + key + "=";
		const auto v = number(value, 0, int64_t(Mhi::kMaxResetAckDelayNs / 1'000'000));
		if (!v)
			return "bootlog hold: ack_delay_ms=" + value + " (0..1000)";
		delay_ms = uint64_t(*v);
	}
	sbl.hold_log(delay_ms * 1'000'000, release);
	return {};
}

// The arguments of "timesync hold".
std::string timesync_hold(Sbl &sbl, const Args &a)
{
	for (const auto &[key, value] : a) {
		if (key != "release")
			return "timesync hold: unknown argument " + key + "=";
		if (value != "handover")
			return "timesync hold: release=" + value + " (handover)";
	}
	if (!a.count("release"))
		return "timesync hold: give release=handover";
	sbl.hold_timesync();
	return {};
}

// "bootlog" and "timesync": `verb` hold ARGS, or `verb` normal.
std::string inject_hold_mode(Sbl &sbl, const std::string &verb, std::istringstream &in)
{
	std::string mode;
	in >> mode;
	Args a;
	std::string err;
	if (!arguments(in, a, err))
		return verb + ": " + err;
	const bool log = verb == "bootlog";
	if (mode == "normal") {
		if (!a.empty())
			return verb + " normal takes no arguments";
		if (log)
			sbl.stop_holding_log();
		else
			sbl.stop_holding_timesync();
		return {};
	}
	if (mode != "hold")
		return log ? "bootlog: give hold [release=reset|handover] [ack_delay_ms=0..1000] or normal"
			   : "timesync: give hold release=handover or normal";
	return log ? bootlog_hold(sbl, a) : timesync_hold(sbl, a);
}

} // namespace

std::string Device::run_injection(const std::string &command)
{
	std::istringstream in(command);
	std::string verb;
	in >> verb;
	if (verb == "syserr") {
		if (more_words(in))
			return "syserr takes no arguments";
		boot_.inject_sys_err();
		return {};
	}
	if (verb == "idle") {
		if (more_words(in))
			return "idle takes no arguments";
		if (!mhi_.enter_m1())
			return "idle: MHI is not in M0";
		return {};
	}
	Qsm &qsm = boot_.qsm();
	if (verb == "crash")
		return inject_crash(qsm, in);
	if (verb == "ssr")
		return inject_ssr(qsm, in);
	if (verb == "ras")
		return inject_ras(qsm, in);
	if (verb == "sensor")
		return inject_sensor(qsm, in);
	if (verb == "bootlog" || verb == "timesync")
		return inject_hold_mode(boot_.sbl(), verb, in);
	return "unknown fault '" + command + "' (" + kUsage + ")";
}

// ---- questions -------------------------------------------------------------

bool Device::is_query(const std::string &command)
{
	std::istringstream in(command);
	std::string verb;
	in >> verb;
	return verb == "dma-stats";
}

std::string Device::query(const std::string &command, bool &refused) const
{
	refused = true;
	std::istringstream in(command);
	std::string verb;
	in >> verb;
	if (verb != "dma-stats")
		return "unknown question '" + command + "' (known: dma-stats dbc=N)";
	std::map<std::string, std::string> a;
	std::string err;
	if (!arguments(in, a, err))
		return "dma-stats: " + err;
	if (a.size() != 1 || !a.count("dbc"))
		return "dma-stats: give dbc=N";
	const auto n = number(a["dbc"], 0, regs::kNumDbc - 1);
	if (!n)
		return "dma-stats: dbc=" + a["dbc"] + " (0.." + std::to_string(regs::kNumDbc - 1) + ")";
	const DmaBridge::Stats &st = dbr_.stats(unsigned(*n));
	char buf[256];
	std::snprintf(buf, sizeof(buf),
		      "requests=%llu errors=%llu bytes_in=%llu bytes_out=%llu copy_ns_in=%llu copy_ns_out=%llu "
		      "request_ns=%llu doorbells=%llu doorbell_ns=%llu now_ns=%llu",
		      static_cast<unsigned long long>(st.requests), static_cast<unsigned long long>(st.errors),
		      static_cast<unsigned long long>(st.bytes_in), static_cast<unsigned long long>(st.bytes_out),
		      static_cast<unsigned long long>(st.copy_ns_in), static_cast<unsigned long long>(st.copy_ns_out),
		      static_cast<unsigned long long>(st.request_ns), static_cast<unsigned long long>(st.doorbells),
		      static_cast<unsigned long long>(st.doorbell_ns), static_cast<unsigned long long>(host_.now_ns()));
	refused = false;
	return buf;
}

// ---- the BAR4 test mailbox ---------------------------------------------------

uint64_t Device::mailbox_read(uint64_t offset, unsigned size) const
{
	using namespace mailbox;
	uint64_t v = 0;
	if (offset + size <= kCommand + kBufferSize)
		std::memcpy(&v, mbox_.command.data() + offset, size);
	else if (offset == kStatus && size == 4)
		v = mbox_.status;
	else if (offset == kMagic && size == 4)
		v = kMagicValue;
	else if (offset >= kMessage && offset + size <= kMessage + kBufferSize)
		std::memcpy(&v, mbox_.message.data() + (offset - kMessage), size);
	return v;
}

void Device::mailbox_write(uint64_t offset, uint64_t value, unsigned size)
{
	using namespace mailbox;
	if (offset + size <= kCommand + kBufferSize) {
		std::memcpy(mbox_.command.data() + offset, &value, size);
		return;
	}
	if (offset != kLength || size != 4) {
		host_.guest_error("aic100 test mailbox: write outside the command buffer and length register");
		return;
	}
	if (mbox_.status == kPending) {
		host_.guest_error("aic100 test mailbox: a command is still pending");
		return;
	}
	if (value == 0 || value > kMaxCommand) {
		mbox_.status = kRefused;
		mbox_.message = {};
		std::strcpy(reinterpret_cast<char *>(mbox_.message.data()), "length must be 1..255");
		return;
	}
	// Run from the event loop rather than inside the register write.
	mbox_.pending.assign(reinterpret_cast<const char *>(mbox_.command.data()), value);
	mbox_.status = kPending;
	host_.kick();
}

void Device::mailbox_run()
{
	const std::string cmd = std::move(mbox_.pending);
	mbox_.pending.clear();
	const std::string text(cmd.c_str()); // stops at a NUL
	// A fault's message says why it was refused; a question's is its answer.
	bool refused = false;
	const std::string msg = is_query(text) ? query(text, refused) : inject(text);
	if (!is_query(text))
		refused = !msg.empty();
	mbox_.message = {};
	std::memcpy(mbox_.message.data(), msg.data(), std::min<size_t>(msg.size(), mbox_.message.size() - 1));
	mbox_.status = refused ? mailbox::kRefused : mailbox::kDone;
}

} // namespace aic100
