// SPDX-License-Identifier: GPL-2.0-or-later
// Small helpers that the in-guest test programs share: files, the kernel
// log, waiting for a condition, and a card's state as users see it.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ktap.h"
#include "qaic.h"

namespace guest_util {

constexpr double kOnlineTimeout = 60; // seconds; TCG guests are slow

inline std::string slurp(const std::string &path)
{
	std::ifstream f(path, std::ios::binary);
	return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline bool spit(const std::string &path, const std::string &data)
{
	std::ofstream f(path, std::ios::binary | std::ios::trunc);
	f.write(data.data(), static_cast<std::streamsize>(data.size()));
	f.flush();
	return static_cast<bool>(f);
}

inline std::string dmesg()
{
	std::string out;
	FILE *p = popen("dmesg", "r");
	char buf[4096];
	size_t n;
	while (p && (n = fread(buf, 1, sizeof(buf), p)) > 0)
		out.append(buf, n);
	if (p)
		pclose(p);
	return out;
}

// A card's current view; re-read because minors change across reloads.
inline std::optional<qaic::Card> card_at(const std::string &bdf)
{
	for (auto &c : qaic::find_cards())
		if (c.bdf == bdf)
			return c;
	return std::nullopt;
}

// ONLINE is what upstream qaic and ours both show to users: open() of the
// accel node succeeds (it gives ENODEV until the NNC exchange is done).
inline bool is_online(const std::string &bdf)
{
	auto c = card_at(bdf);
	if (!c || !c->accel_minor)
		return false;
	return qaic::Device::open(*c->accel_minor).has_value();
}

inline bool wait_for(const std::function<bool()> &cond, double timeout_s)
{
	const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
	while (std::chrono::steady_clock::now() < end) {
		if (cond())
			return true;
		std::this_thread::sleep_for(std::chrono::milliseconds(10));
	}
	return cond();
}

inline bool wait_online(const std::string &bdf, double timeout_s = kOnlineTimeout)
{
	return wait_for([&] { return is_online(bdf); }, timeout_s);
}

// The accel device's debugfs directory (named by PCI address in 6.12, by
// minor in older kernels).
inline std::string debugfs_dir(const qaic::Card &c)
{
	for (const std::string &d : {"/sys/kernel/debug/accel/" + c.bdf,
				    "/sys/kernel/debug/accel/" + std::to_string(c.accel_minor.value_or(-1))})
		if (std::filesystem::exists(d))
			return d;
	return {};
}

// Runs `cmd` with /bin/sh; its exit status, or -1 if it did not exit.
inline int shell(const std::string &cmd)
{
	const int st = std::system(cmd.c_str());
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

// A line in the kernel log, so that the serial log shows where a run starts
// (the harness accepts an expected oops only after such a line).
inline void kmsg(const std::string &line)
{
	const int fd = ::open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	const std::string text = "aic100-test: " + line + "\n";
	(void)!::write(fd, text.data(), text.size());
	::close(fd);
}

// The kernel's report of trouble in `log` (an oops, BUG or WARNING), from
// its first line, or "". Long enough to hold a whole oops with its trace.
inline std::string kernel_trouble(const std::string &log)
{
	for (const char *pat : {"BUG:", "Oops", "general protection", "WARNING:", "Call Trace"}) {
		size_t at = log.find(pat);
		if (at == std::string::npos)
			continue;
		at = log.rfind('\n', at);
		return log.substr(at == std::string::npos ? 0 : at + 1, 8000);
	}
	return {};
}

// Whether a kernel_trouble() report has been printed to its end: every
// report with a stack closes it with "</TASK>". A report from another task
// (a work item's oops) is printed line by line while the reader looks.
inline bool kernel_report_whole(const std::string &report)
{
	return report.find("</TASK>") != std::string::npos || report.find("---[ end trace") != std::string::npos;
}

// A known upstream bug's detector report (--known-report NAME): what its
// first line, a line it must hold and its last line end with
// (docs/upstream-bugs.md). The harness allows the same reports in the
// serial log, reading this table (print_known_reports).
struct KnownReport {
	const char *name, *first, *holds, *last;
};
inline constexpr KnownReport kKnownReports[] = {
	// Upstream qaic's wrapper list lock taken with bottom halves on
	// (patches/linux/0009-*).
	{"wrapper-lock", "WARNING: inconsistent lock state", "&wrappers->lock", "</TASK>"},
	// Upstream qaic's SRCU structs sharing one lockdep class, a DBC's
	// synchronized inside the device's (patches/linux/0010-*, 0011-* on 6.12).
	{"srcu-class", "WARNING: possible recursive locking detected", "disable_dbc", "</TASK>"},
};

// The table for the harness (qaic-guest-tests --list-known-reports): a
// report a line, its name and markers separated by tabs.
inline void print_known_reports()
{
	for (const auto &r : kKnownReports)
		std::printf("%s\t%s\t%s\t%s\n", r.name, r.first, r.holds, r.last);
}

inline bool is_known_report(const std::string &name)
{
	for (const auto &r : kKnownReports)
		if (name == r.name)
			return true;
	return false;
}

// `log` without the first report of each known bug in `names`: lockdep
// reports once and is off from then on.
inline std::string without_known_reports(std::string log, const std::vector<std::string> &names)
{
	for (const auto &r : kKnownReports) {
		if (std::find(names.begin(), names.end(), r.name) == names.end())
			continue;
		size_t first = log.find(r.first);
		if (first == std::string::npos)
			continue;
		const size_t last = log.find(r.last, first);
		if (last == std::string::npos || log.substr(first, last - first).find(r.holds) == std::string::npos)
			continue;
		first = log.rfind('\n', first);
		first = first == std::string::npos ? 0 : first + 1;
		const size_t end = log.find('\n', last);
		log.erase(first, end == std::string::npos ? std::string::npos : end + 1 - first);
	}
	return log;
}

// The kernel's report of trouble in the log since `mark` (a size of the
// log read earlier), without the known reports in `known`, or "".
inline std::string kernel_trouble_since(size_t mark, const std::vector<std::string> &known)
{
	const std::string log = dmesg();
	return kernel_trouble(without_known_reports(log.substr(std::min(mark, log.size())), known));
}

// `text` as KTAP diagnostic lines (each one prefixed by the note's "# ").
inline std::string as_diagnostic(const std::string &text)
{
	std::string out;
	for (char c : text)
		out += c == '\n' ? std::string("\n    # ") : std::string(1, c);
	return out;
}

// Fails the case if `trouble` (a kernel_trouble() report) is not empty,
// with the report as its diagnostic.
inline void expect_no_trouble(ktap::Case &t, const std::string &trouble)
{
	t.expect(trouble.empty(), "kernel trouble:\n    # %s", as_diagnostic(trouble).c_str());
}

// Shows the oops that a reproducer's run of a driver with the bug expects.
inline void note_expected_oops(ktap::Case &t, const std::string &oops)
{
	t.note("the expected oops (upstream bug, docs/upstream-bugs.md):\n    # %s", as_diagnostic(oops).c_str());
}

// A "--run LABEL=MODULE:OUTCOME" argument of the reproducers that load
// several qaic modules in turn: the parts, if OUTCOME is one of `outcomes`.
struct ModuleRunArg {
	std::string label, module, outcome;
};
inline std::optional<ModuleRunArg> parse_module_run(const std::string &v, std::initializer_list<const char *> outcomes)
{
	const size_t eq = v.find('='), colon = v.rfind(':');
	if (eq == std::string::npos || colon == std::string::npos || colon < eq)
		return std::nullopt;
	ModuleRunArg r{v.substr(0, eq), v.substr(eq + 1, colon - eq - 1), v.substr(colon + 1)};
	for (const char *o : outcomes)
		if (r.outcome == o)
			return r;
	return std::nullopt;
}

// What the suites see differ between the card families (docs/aic200.md),
// by the card's PCI device id.
struct CardFamily {
	const char *name;	  // "AIC100": the board serial's and RAM dump's prefix
	const char *firmware_dir; // in the guest
	// The runtime images, as the boot log and the RAM dump name them.
	const char *qsm_image, *qsm_kind, *nsp_image;
	// The SBL takes the host's time at boot (its boot log says so).
	bool boot_timesync;
};

inline constexpr CardFamily kAic100Family = {"AIC100", "/lib/firmware/qcom/aic100", "fw1.bin", "qsm", "fw2.bin", true};
inline constexpr CardFamily kAic200Family = {"AIC200", "/lib/firmware/qcom/aic200", "aic200-hlos.elf", "hlos",
					     "aic200-nsp.bin", false};

inline const CardFamily &family_of_device(unsigned device_id)
{
	return device_id == 0xa110 ? kAic200Family : kAic100Family;
}

// The family of the card at `bdf` (AIC100's if it cannot be read).
inline const CardFamily &family_of_bdf(const std::string &bdf)
{
	const std::string id = slurp("/sys/bus/pci/devices/" + bdf + "/device");
	return family_of_device(id.empty() ? 0 : unsigned(std::stoul(id, nullptr, 16)));
}

} // namespace guest_util
