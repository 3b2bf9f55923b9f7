// SPDX-License-Identifier: GPL-2.0-or-later
// The reproducers of upstream qaic's teardown races of its SBL clients
// (docs/upstream-bugs.md), reported as KTAP: the boot-log client's
// (--race bootlog) and the boot time-sync client's (--race timesync).
//
// Usage: qaic-teardown-race-tests --race bootlog|timesync --gate GATE.ko
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
//   2. loads MODULE;
//   3. waits for the card to come ONLINE or for an oops, and checks what
//      EXPECT says: "oops" (the upstream bug: the late work item queues a
//      buffer on the torn down channel), "clean" (a driver with the
//      client's workqueue, which the gate held, and no oops) or
//      "clean-nogate" (a driver without such a workqueue; nothing to hold);
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
	const char *hold;      // the card's injection, armed before each run
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

GateCounts gate_counts(const Race &r)
{
	GateCounts c;
	auto get = [&](const char *name) { return std::atol(qaic::read_attr(std::string(r.gate_params) + name).c_str()); };
	if (std::string(r.name) == "bootlog") {
		for (const char *n : kBootlogCounters)
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

void add_run(ktap::Suite &s, const Options &o, const Run &r)
{
	const Race &race = *o.race;
	// Shared by the run's cases: where the kernel log stood when it began,
	// and the gate's counters then.
	struct State {
		size_t mark = 0;
		GateCounts before;
		bool loaded = false;
		std::string bdf;
	};
	auto st = std::make_shared<State>();

	s.add(r.label + "_reproducer_armed", [=](ktap::Case &t) {
		auto cards = qaic::find_cards();
		if (cards.empty()) {
			t.expect(false, "no card");
			return;
		}
		st->bdf = cards[0].bdf;
		t.expect(cards[0].driver.empty(), "card %s is bound to '%s' before the run", st->bdf.c_str(),
			 cards[0].driver.c_str());
		qaic::Mailbox mb(st->bdf);
		const std::string err = mb.run(race.hold);
		t.expect(err.empty(), "%s: %s", race.hold, err.c_str());
		// The gate probes the MHI core, so mhi goes first.
		t.expect(shell("modprobe -a drm mhi") == 0, "modprobe drm mhi failed");
		if (qaic::read_attr(std::string(race.gate_params) + "gated").empty())
			t.expect(shell("insmod " + o.gate) == 0, "insmod %s failed", o.gate.c_str());
		st->before = gate_counts(race);
		kmsg(r.label + ": " + race.what + " race reproducer armed; loading " + r.module);
		st->mark = dmesg().size();
	});

	s.add(r.label + "_driver_loaded", [=](ktap::Case &t) {
		st->loaded = shell("insmod " + r.module) == 0;
		t.expect(st->loaded, "insmod %s failed", r.module.c_str());
	});

	s.add(r.label + "_outcome", [=](ktap::Case &t) {
		if (!st->loaded) {
			t.expect(false, "the driver is not loaded");
			return;
		}
		std::string oops;
		bool online = false;
		wait_for([&] {
			oops = kernel_trouble_since(st->mark, o.known_reports);
			online = is_online(st->bdf);
			return online || !oops.empty();
		}, kOutcomeTimeout);
		if (r.expect == "oops" && oops.empty()) {
			// An oops may follow ONLINE by a moment: the late work items run
			// only once the logging client's remove() flushes them.
			wait_for([&] {
				oops = kernel_trouble_since(st->mark, o.known_reports);
				return !oops.empty();
			}, 30);
		}
		GateCounts d = gate_counts(race) - st->before;
		std::string counts;
		for (const auto &[k, v] : d)
			counts += " " + k + "=" + std::to_string(v);
		t.note("%s: ONLINE %s; gate:%s", r.label.c_str(), online ? "yes" : "no", counts.c_str());
		const bool bootlog = std::string(race.name) == "bootlog";
		t.expect(d["timed_out"] == 0, "a gate timed out: nobody tore the channel down or flushed the workqueue");
		if (r.expect == "oops") {
			t.expect(!oops.empty(), "no oops: the %s work survived the teardown (upstream fixed?)", race.what);
			t.expect(oops.find("mhi_queue") != std::string::npos && oops.find(race.worker) != std::string::npos,
				 "the oops is not upstream's %s -> mhi_queue_buf on the torn down channel", race.worker);
			if (bootlog) {
				t.expect(d["windows"] > 0, "no work item was inside mhi_queue() as the removal began");
			} else {
				t.expect(d["removals"] > 0 && d["opened_after_removal"] > 0,
					 "no work item was held behind the gate until the removal of QAIC_TIMESYNC returned");
			}
			t.note("the expected oops (upstream bug, docs/upstream-bugs.md):\n    # %s",
			       as_diagnostic(oops).c_str());
			return;
		}
		t.expect(online, "%s not ONLINE after %.0f s", st->bdf.c_str(), kOutcomeTimeout);
		t.expect(oops.empty(), "kernel trouble:\n    # %s", as_diagnostic(oops).c_str());
		if (r.expect == "clean" && bootlog) {
			t.expect(d["gated"] > 0 && d["held"] > 0 && d["opened_by_teardown"] + d["opened_by_flush"] > 0,
				 "the reproducer's condition was not met: no boot-log work was held until the teardown");
		} else if (r.expect == "clean") {
			t.expect(d["gated"] > 0 && d["early"] == 0 && d["held"] > 0 && d["removals"] > 0 && d["missed"] == 0,
				 "the reproducer's condition was not met: no time-sync work was held as QAIC_TIMESYNC "
				 "went away");
			t.expect(d["opened_by_flush"] > 0, "the driver's remove() did not flush its qaic_ts workqueue");
		} else {
			t.expect(d["gated"] == 0, "the driver made a %s workqueue (expected none)", race.workqueue);
		}
		// What the card logged reached the host's log (for the boot-log
		// race, with the lines held until the handover).
		auto c = card_at(st->bdf);
		const std::string dir = c ? debugfs_dir(*c) : std::string();
		const std::string log = dir.empty() ? std::string() : slurp(dir + "/bootlog");
		for (const char *want : race.boot_log)
			t.expect(log.find(want) != std::string::npos, "boot log lacks '%s'", want);
		if (t.failed())
			t.note("boot log:\n    # %s", as_diagnostic(log).c_str());
	});

	if (r.expect == "oops")
		return;
	s.add(r.label + "_unloaded", [=](ktap::Case &t) {
		t.expect(shell("rmmod qaic") == 0, "rmmod qaic failed");
		// Left alone, the card stays in AMSS and the next driver finds it
		// there, with no SBL and no boot log: a function reset takes it back
		// to its PBL.
		t.expect(spit("/sys/bus/pci/devices/" + st->bdf + "/reset", "1"), "reset of %s failed",
			 st->bdf.c_str());
		qaic::Mailbox mb(st->bdf);
		const std::string err = mb.run(race.normal);
		t.expect(err.empty(), "%s: %s", race.normal, err.c_str());
		const std::string trouble = kernel_trouble_since(st->mark, o.known_reports);
		t.expect(trouble.empty(), "kernel trouble:\n    # %s", as_diagnostic(trouble).c_str());
	});
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
			if (r.expect != "oops" && r.expect != "clean" && r.expect != "clean-nogate")
				return false;
			o.runs.push_back(r);
		} else {
			return false;
		}
	}
	if (argc % 2 == 0 || !o.race || o.gate.empty() || o.runs.empty())
		return false;
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
		std::fprintf(stderr, "usage: %s --race bootlog|timesync --gate GATE.ko "
				     "--run LABEL=MODULE.ko:oops|clean|clean-nogate [--run ...] (an oops run last)\n",
			     argv[0]);
		return 2;
	}
	ktap::Suite s;
	for (const Run &r : o.runs)
		add_run(s, o, r);
	return s.run_or_list(listing);
}
