// SPDX-License-Identifier: GPL-2.0-or-later
// The reproducers of upstream qaic's teardown races of its SBL clients
// (docs/upstream-bugs.md), reported as KTAP: the boot-log client's
// (--race bootlog) and the boot time-sync client's (--race timesync); and
// of its boot-log client registered after the card began to boot
// (--race bootlog-order).
//
// Usage: qaic-teardown-race-tests --race bootlog|timesync|bootlog-order --gate GATE.ko
//                                 --run LABEL=MODULE.ko:EXPECT [--run ...]
//                                 [--known-report NAME ...]
// The guest starts with no qaic module loaded (vm-run --module none) and
// card 0 has test-mailbox=on. Each run, in order:
//   1. arms the card's injection and loads the race's gate module
//      (tests/guest/kmod), which holds the client's work items:
//      - bootlog: "bootlog hold release=handover" (the SBL keeps its
//        boot-log lines and sends them all as it hands over to AMSS,
//        without waiting for the host to read them, so they are still on
//        their way through the host's logging client when the MHI core
//        removes that client for the EE change); qaic_bootlog_gate holds
//        any "qaic_bootlog" workqueue's work until the removal is under way
//        or its owner flushes it;
//      - timesync: "timesync hold release=handover" (the SBL sends its time
//        request as it hands over to AMSS, without waiting for the host to
//        take it); qaic_timesync_gate holds any "qaic_ts" workqueue's work
//        until the QAIC_TIMESYNC device's removal has returned or its owner
//        flushes it;
//      - bootlog-order: no injection; qaic_bootlog_order_gate holds the
//        registration of the "qaic_bootlog" driver, if it comes while a
//        card boots, until the card has left the SBL;
//   2. loads MODULE;
//   3. waits for the card to come ONLINE or for an oops, and checks what
//      EXPECT says: "oops" (the upstream bug: the late work item queues a
//      buffer on the torn down channel), "clean" (a driver with the
//      client's workqueue, which the gate held, and no oops) or
//      "clean-nogate" (a driver without such a workqueue; nothing to hold);
//      for bootlog-order "bug" (upstream's: its log client bound late, its
//      probe failed for the card's mission mode, no boot log) or "clean"
//      (the log client bound as the MHI core created its device);
//   4. after a clean run, unloads MODULE and resets the card, so that the
//      next run starts afresh from the card's PBL.
// An oops run must be the last one: the guest's MHI state worker never
// comes back from it.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest_util.h"
#include "ktap.h"
#include "mailbox.h"
#include "qaic.h"

namespace {

using namespace guest_util;

struct Run {
	std::string label, module, expect;
};

// What differs between the two races.
struct Race {
	const char *name;      // --race
	const char *what;      // in the kernel log's run markers
	const char *hold;      // the card's injection, armed before each run (or none)
	const char *normal;    // and its reset after a clean run
	const char *gate_params;
	const char *workqueue; // the client's workqueue, which the gate holds
	const char *worker;    // upstream's work function, in its oops
	// The card's SBL log of such a boot.
	std::vector<const char *> boot_log;
};

const Race kRaces[] = {
	{"bootlog", "boot-log", "bootlog hold release=handover", "bootlog normal",
	 "/sys/module/qaic_bootlog_gate/parameters/", "qaic_bootlog", "bootlog_log",
	 {"SBL: sbl 1.0.0.1 started", "fw1.bin: qsm", "fw2.bin: nsp", "SHA-256 ok", "time synchronised with the host",
	  "starting AMSS"}},
	// The SBL does not synchronise time in this one: it sends its request
	// only as it leaves.
	{"timesync", "boot-timesync", "timesync hold release=handover", "timesync normal",
	 "/sys/module/qaic_timesync_gate/parameters/", "qaic_ts", "qaic_boot_timesync_worker",
	 {"SBL: sbl 1.0.0.1 started", "fw1.bin: qsm", "fw2.bin: nsp", "SHA-256 ok",
	  "time sync request held by test injection", "starting AMSS"}},
	// Nothing held on the card: the host is what is late.
	{"bootlog-order", "boot-log order", nullptr, nullptr, "/sys/module/qaic_bootlog_order_gate/parameters/",
	 "qaic_bootlog", "", {"SBL: sbl 1.0.0.1 started", "fw1.bin: qsm", "fw2.bin: nsp", "SHA-256 ok",
	  "time synchronised with the host", "starting AMSS"}},
};

struct Options {
	const Race *race = nullptr;
	std::string gate;
	std::vector<Run> runs;
	// Detector reports of known upstream bugs that a run of a driver
	// without their fixes shows (--known-report NAME; guest_util.h).
	std::vector<std::string> known_reports;
};

// Long enough for a loaded TCG guest to take the card from PBL to ONLINE.
constexpr double kOutcomeTimeout = 240;

// The gate module's counters (tests/guest/kmod), by name.
using GateCounts = std::map<std::string, long>;

const char *const kBootlogCounters[] = {"gated",  "held",   "opened_by_teardown", "opened_by_flush",
					"timed_out", "windows", "missed", "cut_short"};
const char *const kTimesyncCounters[] = {"gated",     "early",    "held",    "opened_after_removal",
					 "opened_by_flush", "timed_out", "removals", "missed"};
const char *const kOrderCounters[] = {"late_registrations", "held_to_mission", "timed_out", "worker_binds",
				      "late_binds"};

bool is_order_race(const Race &r)
{
	return std::string(r.name) == "bootlog-order";
}

GateCounts gate_counts(const Race &r)
{
	GateCounts c;
	auto get = [&](const char *name) { return std::atol(qaic::read_attr(std::string(r.gate_params) + name).c_str()); };
	if (std::string(r.name) == "bootlog") {
		for (const char *n : kBootlogCounters)
			c[n] = get(n);
	} else if (is_order_race(r)) {
		for (const char *n : kOrderCounters)
			c[n] = get(n);
	} else {
		for (const char *n : kTimesyncCounters)
			c[n] = get(n);
	}
	return c;
}

GateCounts operator-(GateCounts a, const GateCounts &b)
{
	for (auto &[k, v] : a)
		v -= b.count(k) ? b.at(k) : 0;
	return a;
}

// ---- a run's cases -------------------------------------------------------------

// Shared by a run's cases, which run one after the other in this process:
// where the kernel log stood when the run began, the gate's counters then,
// and whether the driver loaded.
struct RunState {
	size_t mark = 0;
	GateCounts before;
	bool loaded = false;
	std::string bdf;
};

// What each of a run's cases is given.
struct RunFixture {
	Options o;
	Run r;
	std::shared_ptr<RunState> st;
};

void reproducer_armed(ktap::Case &t, const RunFixture &f)
{
	const Race &race = *f.o.race;
	auto cards = qaic::find_cards();
	if (cards.empty()) {
		t.expect(false, "no card");
		return;
	}
	f.st->bdf = cards[0].bdf;
	t.expect(cards[0].driver.empty(), "card %s is bound to '%s' before the run", f.st->bdf.c_str(),
		 cards[0].driver.c_str());
	if (race.hold) {
		qaic::Mailbox mb(f.st->bdf);
		const std::string err = mb.run(race.hold);
		t.expect(err.empty(), "%s: %s", race.hold, err.c_str());
	}
	// The gate probes the MHI core, so mhi goes first.
	t.expect(shell("modprobe -a drm mhi") == 0, "modprobe drm mhi failed");
	if (qaic::read_attr(std::string(race.gate_params) + (is_order_race(race) ? "late_registrations" : "gated")).empty())
		t.expect(shell("insmod " + f.o.gate) == 0, "insmod %s failed", f.o.gate.c_str());
	f.st->before = gate_counts(race);
	kmsg(f.r.label + ": " + race.what + " race reproducer armed; loading " + f.r.module);
	f.st->mark = dmesg().size();
}

void driver_loaded(ktap::Case &t, const RunFixture &f)
{
	f.st->loaded = shell("insmod " + f.r.module) == 0;
	t.expect(f.st->loaded, "insmod %s failed", f.r.module.c_str());
}

// Waits for the card to come ONLINE or for an oops since the run began;
// the oops (or "") in `oops`, and whether the card is ONLINE.
bool wait_for_online_or_oops(const RunFixture &f, std::string &oops)
{
	bool online = false;
	wait_for([&] {
		oops = kernel_trouble_since(f.st->mark, f.o.known_reports);
		online = is_online(f.st->bdf);
		return online || !oops.empty();
	}, kOutcomeTimeout);
	if (f.r.expect == "oops" && oops.empty()) {
		// An oops may follow ONLINE by a moment: the late work items run
		// only once the logging client's remove() flushes them.
		wait_for([&] {
			oops = kernel_trouble_since(f.st->mark, f.o.known_reports);
			return !oops.empty();
		}, 30);
	}
	// The worker prints its oops a line at a time: read it once it is whole,
	// or the trace that names the bug may not be there yet.
	if (!oops.empty()) {
		wait_for([&] {
			oops = kernel_trouble_since(f.st->mark, f.o.known_reports);
			return kernel_report_whole(oops);
		}, kOutcomeTimeout);
	}
	return online;
}

// An "oops" run: upstream's bug, with the gate's proof that a work item
// was where the race needs it.
void expect_race_oops(ktap::Case &t, const Race &race, const std::string &oops, GateCounts &d)
{
	t.expect(!oops.empty(), "no oops: the %s work survived the teardown (upstream fixed?)", race.what);
	t.expect(oops.find("mhi_queue") != std::string::npos && oops.find(race.worker) != std::string::npos,
		 "the oops is not upstream's %s -> mhi_queue_buf on the torn down channel", race.worker);
	if (std::string(race.name) == "bootlog") {
		t.expect(d["windows"] > 0, "no work item was inside mhi_queue() as the removal began");
	} else {
		t.expect(d["removals"] > 0 && d["opened_after_removal"] > 0,
			 "no work item was held behind the gate until the removal of QAIC_TIMESYNC returned");
	}
	note_expected_oops(t, oops);
}

// A clean run: the reproducer's condition was met ("clean"), or the driver
// has no workqueue for the gate to hold ("clean-nogate").
void expect_race_condition_met(ktap::Case &t, const RunFixture &f, GateCounts &d)
{
	const Race &race = *f.o.race;
	const bool bootlog = std::string(race.name) == "bootlog";
	if (f.r.expect == "clean" && bootlog) {
		t.expect(d["gated"] > 0 && d["held"] > 0 && d["opened_by_teardown"] + d["opened_by_flush"] > 0,
			 "the reproducer's condition was not met: no boot-log work was held until the teardown");
	} else if (f.r.expect == "clean") {
		t.expect(d["gated"] > 0 && d["early"] == 0 && d["held"] > 0 && d["removals"] > 0 && d["missed"] == 0,
			 "the reproducer's condition was not met: no time-sync work was held as QAIC_TIMESYNC "
			 "went away");
		t.expect(d["opened_by_flush"] > 0, "the driver's remove() did not flush its qaic_ts workqueue");
	} else {
		t.expect(d["gated"] == 0, "the driver made a %s workqueue (expected none)", race.workqueue);
	}
}

// What the card logged reached the host's log (for the boot-log race, with
// the lines held until the handover).
void expect_boot_log_in_debugfs(ktap::Case &t, const RunFixture &f)
{
	auto c = card_at(f.st->bdf);
	const std::string dir = c ? debugfs_dir(*c) : std::string();
	const std::string log = dir.empty() ? std::string() : slurp(dir + "/bootlog");
	for (const char *want : f.o.race->boot_log)
		t.expect(log.find(want) != std::string::npos, "boot log lacks '%s'", want);
	if (t.failed())
		t.note("boot log:\n    # %s", as_diagnostic(log).c_str());
}

// A boot-log order run: upstream's bug ("bug": the gate held the log
// client's registration, which came while the card booted, until the card
// left the SBL, and the boot log is empty) or its absence ("clean": the
// client bound as the MHI core created its device, and the log is whole).
void expect_order_outcome(ktap::Case &t, const RunFixture &f, GateCounts &d)
{
	expect_no_trouble(t, kernel_trouble_since(f.st->mark, f.o.known_reports));
	t.expect(d["timed_out"] == 0, "the gate's hold timed out: the card never left the SBL");
	if (f.r.expect == "clean") {
		t.expect(d["late_registrations"] == 0 && d["late_binds"] == 0 && d["worker_binds"] > 0,
			 "the log client did not bind as the MHI core created its device");
		return expect_boot_log_in_debugfs(t, f);
	}
	const std::string log = dmesg().substr(f.st->mark);
	auto c = card_at(f.st->bdf);
	const std::string dir = c ? debugfs_dir(*c) : std::string();
	const std::string bootlog = dir.empty() ? std::string() : slurp(dir + "/bootlog");
	t.expect(d["late_registrations"] > 0 && d["held_to_mission"] > 0,
		 "the log client was not registered after the card left the SBL");
	t.expect(d["worker_binds"] == 0, "the log client bound as the MHI core created its device (upstream fixed?)");
	// Its bind then finds the device gone, or its controller in mission
	// mode, the probe failing with -ENOTCONN.
	if (log.find("probe with driver qaic_bootlog failed with error -107") != std::string::npos)
		t.note("qaic_bootlog's late probe failed with -ENOTCONN");
	t.expect(bootlog.find("SBL: sbl 1.0.0.1 started") == std::string::npos,
		 "the boot log reached the host (upstream fixed?)");
	t.note("the expected bug (upstream, docs/upstream-bugs.md): no boot log, %zu bytes in debugfs",
	       bootlog.size());
}

void outcome(ktap::Case &t, const RunFixture &f)
{
	if (!f.st->loaded) {
		t.expect(false, "the driver is not loaded");
		return;
	}
	std::string oops;
	const bool online = wait_for_online_or_oops(f, oops);
	GateCounts d = gate_counts(*f.o.race) - f.st->before;
	std::string counts;
	for (const auto &[k, v] : d)
		counts += " " + k + "=" + std::to_string(v);
	t.note("%s: ONLINE %s; gate:%s", f.r.label.c_str(), online ? "yes" : "no", counts.c_str());
	if (is_order_race(*f.o.race)) {
		t.expect(online, "%s not ONLINE after %.0f s", f.st->bdf.c_str(), kOutcomeTimeout);
		return expect_order_outcome(t, f, d);
	}
	t.expect(d["timed_out"] == 0, "a gate timed out: nobody tore the channel down or flushed the workqueue");
	if (f.r.expect == "oops")
		return expect_race_oops(t, *f.o.race, oops, d);
	t.expect(online, "%s not ONLINE after %.0f s", f.st->bdf.c_str(), kOutcomeTimeout);
	expect_no_trouble(t, oops);
	expect_race_condition_met(t, f, d);
	expect_boot_log_in_debugfs(t, f);
}

// After a clean run: the driver unloaded and the card back in its PBL.
void unloaded(ktap::Case &t, const RunFixture &f)
{
	t.expect(shell("rmmod qaic") == 0, "rmmod qaic failed");
	// Left alone, the card stays in AMSS and the next driver finds it
	// there, with no SBL and no boot log: a function reset takes it back
	// to its PBL.
	t.expect(spit("/sys/bus/pci/devices/" + f.st->bdf + "/reset", "1"), "reset of %s failed",
		 f.st->bdf.c_str());
	if (f.o.race->normal) {
		qaic::Mailbox mb(f.st->bdf);
		const std::string err = mb.run(f.o.race->normal);
		t.expect(err.empty(), "%s: %s", f.o.race->normal, err.c_str());
	}
	expect_no_trouble(t, kernel_trouble_since(f.st->mark, f.o.known_reports));
}

// A run's cases in the order they run, named <label>_<case>, in this
// process (they share the run's state); an oops run ends after its outcome.
const ktap::Def<RunFixture> kRunCases[] = {
	KTAP_CASE(reproducer_armed, ktap::kInProcess),
	KTAP_CASE(driver_loaded, ktap::kInProcess),
	KTAP_CASE(outcome, ktap::kInProcess),
};
const ktap::Def<RunFixture> kAfterCleanRun = KTAP_CASE(unloaded, ktap::kInProcess);

void add_run(ktap::Suite &s, const Options &o, const Run &r)
{
	const RunFixture f{o, r, std::make_shared<RunState>()};
	for (const auto &c : kRunCases)
		s.add(r.label + "_" + c.name, c, f);
	if (r.expect != "oops")
		s.add(r.label + "_" + kAfterCleanRun.name, kAfterCleanRun, f);
}

bool parse(int argc, char **argv, Options &o)
{
	for (int i = 1; i + 1 < argc; i += 2) {
		const std::string k = argv[i], v = argv[i + 1];
		if (k == "--race") {
			for (const Race &r : kRaces)
				if (v == r.name)
					o.race = &r;
			if (!o.race)
				return false;
		} else if (k == "--gate") {
			o.gate = v;
		} else if (k == "--known-report") {
			if (!is_known_report(v))
				return false;
			o.known_reports.push_back(v);
		} else if (k == "--run") {
			const size_t eq = v.find('='), colon = v.rfind(':');
			if (eq == std::string::npos || colon == std::string::npos || colon < eq)
				return false;
			Run r{v.substr(0, eq), v.substr(eq + 1, colon - eq - 1), v.substr(colon + 1)};
			if (r.expect != "oops" && r.expect != "clean" && r.expect != "clean-nogate" &&
			    r.expect != "bug")
				return false;
			o.runs.push_back(r);
		} else {
			return false;
		}
	}
	if (argc % 2 == 0 || !o.race || o.gate.empty() || o.runs.empty())
		return false;
	for (const Run &r : o.runs)
		if ((r.expect == "bug") != (is_order_race(*o.race) && r.expect != "clean"))
			return false; // "bug" and "clean" only, for the order race
	for (size_t i = 0; i + 1 < o.runs.size(); i++)
		if (o.runs[i].expect == "oops")
			return false; // nothing can follow an oops
	return true;
}

} // namespace

int main(int argc, char **argv)
{
	const bool listing = ktap::take_list_option(argc, argv);
	Options o;
	if (!parse(argc, argv, o)) {
		std::fprintf(stderr, "usage: %s --race bootlog|timesync|bootlog-order --gate GATE.ko "
				     "--run LABEL=MODULE.ko:oops|clean|clean-nogate|bug [--run ...] (an oops run last)\n",
			     argv[0]);
		return 2;
	}
	ktap::Suite s;
	for (const Run &r : o.runs)
		add_run(s, o, r);
	return s.run_or_list(listing);
}
