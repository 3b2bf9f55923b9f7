// SPDX-License-Identifier: GPL-2.0-or-later
// The reproducer of upstream qaic's use after free at a close() after unbind
// (docs/upstream-bugs.md, patches/linux/0005-* and 0006-*). Upstream
// allocates its qaic_device with devm_kzalloc(), so it is freed when the
// card is unbound, but the SRCU structs in it are cleaned up by DRM managed
// actions that run when the last reference to the DRM device goes: for a
// node still open at unbind, at its close(). The guest boots with
// init_on_free=1 (the harness's configuration), so the freed memory is
// zeroes by then and the first cleanup_srcu_struct() oopses every time
// instead of reading whatever is left there.
//
// Each --run loads MODULE in place of the qaic module that is loaded (if
// any), waits for the card to be ONLINE, and has a child process open the
// accel node, hold it across an unbind of the card, then close it. EXPECT is
// "clean" (the child's close returns and the kernel says nothing; the card
// is bound again, comes ONLINE and the module unloads) or "oops" (the close
// oopses in cleanup_srcu_struct() under drm_release()). Nothing can follow
// an oops run, so it must be the last.
//
// --scenario rebind: the reproducer of the second bug there, the PCI drvdata
// cleared at that close (patches/linux/0007-*). The card is bound again
// while the node is held, and comes ONLINE under a new instance of the
// driver before the child closes the old node; then a process reads the new
// instance's ce_count, which the driver finds through the PCI drvdata.
// "clean": the read answers a number, the kernel says nothing, and rmmod
// takes the card down whole (no accel node or MHI controller left). "oops":
// the drvdata was cleared by the close, and the read oopses in
// ce_count_show(). Only upstream 7.3 has ce_count among the drivers that
// reach this bug (upstream with 0005's fix, docs/upstream-bugs.md).
//
// --known-report NAME (guest_util.h): a known upstream bug's detector
// report that the runs' kernel trouble checks leave out.
//
// Usage: qaic-close-after-unbind-tests [--card N] [--scenario unbind|rebind]
//                                      [--known-report NAME ...]
//                                      --run LABEL=MODULE:clean|oops ...
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guest_util.h"
#include "ktap.h"
#include "qaic.h"

namespace {

using namespace guest_util;

struct Run {
	std::string label, module;
	bool expect_oops = false;
};

struct Options {
	unsigned card = 0;
	bool rebind = false; // --scenario rebind
	std::vector<Run> runs;
	// Detector reports of known upstream bugs that a run of a driver
	// without their fixes shows (--known-report NAME; guest_util.h).
	std::vector<std::string> known_reports;
};

// One byte from `fd` within the time, or 0 (timeout, EOF or error).
char read_byte(int fd, double timeout_s)
{
	pollfd p{fd, POLLIN, 0};
	if (::poll(&p, 1, static_cast<int>(timeout_s * 1000)) != 1)
		return 0;
	char c = 0;
	return ::read(fd, &c, 1) == 1 ? c : 0;
}

// The child that holds the node: opens it, says 'o' (or 'e' and exits 1),
// waits for 'c', closes it, says 'd' and exits 0. The kernel kills it if its
// close() oopses.
pid_t start_holder(const std::string &node, int to_child[2], int from_child[2])
{
	const pid_t pid = ::fork();
	if (pid != 0)
		return pid;
	::close(to_child[1]);
	::close(from_child[0]);
	const int fd = ::open(node.c_str(), O_RDWR | O_CLOEXEC);
	const char opened = fd >= 0 ? 'o' : 'e';
	(void)!::write(from_child[1], &opened, 1);
	if (fd < 0)
		::_exit(1);
	char go = 0;
	if (::read(to_child[0], &go, 1) != 1 || go != 'c')
		::_exit(2);
	::close(fd);
	const char done = 'd';
	(void)!::write(from_child[1], &done, 1);
	::_exit(0);
}

// Waits for `pid` to end within the time; its wait status, or -1 (then it
// is sent SIGKILL and left: a task stuck in the kernel would not go).
int reap(pid_t pid, double timeout_s)
{
	int st = 0;
	if (!wait_for([&] { return ::waitpid(pid, &st, WNOHANG) == pid; }, timeout_s)) {
		::kill(pid, SIGKILL);
		return -1;
	}
	return st;
}

std::string describe_status(int st)
{
	if (st < 0)
		return "still running after the timeout";
	if (WIFSIGNALED(st))
		return std::string("killed by ") + strsignal(WTERMSIG(st));
	return "exit " + std::to_string(WEXITSTATUS(st));
}

// Whether the MHI clients of the driver bound to the card at `bdf` have all
// been probed. The MHI core creates a controller's devices for an execution
// environment in channel order, probing each as it adds it, and the last
// AMSS channel that either driver (ours, upstream's) binds is
// QAIC_TIMESYNC_PERIODIC: once that one has its driver, so have the others.
bool amss_clients_probed(const std::string &bdf)
{
	std::error_code ec;
	for (const auto &d : std::filesystem::directory_iterator("/sys/bus/mhi/devices", ec)) {
		const std::string name = d.path().filename().string();
		const std::string suffix = "_QAIC_TIMESYNC_PERIODIC";
		if (name.size() < suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix))
			continue;
		const std::string real = std::filesystem::canonical(d.path(), ec).string();
		if (real.find("/" + bdf + "/") != std::string::npos && std::filesystem::exists(d.path() / "driver"))
			return true;
	}
	return false;
}

// Reads the sysfs attribute `path` in a child process (the kernel kills it
// if the read oopses); the child's wait status (-1: it did not end), and
// what it read in `value`.
int read_in_child(const std::string &path, std::string &value)
{
	int out[2];
	if (::pipe2(out, O_CLOEXEC))
		return -1;
	std::fflush(stdout);
	const pid_t pid = ::fork();
	if (pid == 0) {
		::close(out[0]);
		const std::string v = slurp(path);
		(void)!::write(out[1], v.data(), v.size());
		::_exit(v.empty() ? 3 : 0);
	}
	::close(out[1]);
	const int st = reap(pid, 30);
	char buf[64];
	const ssize_t n = ::read(out[0], buf, sizeof(buf));
	::close(out[0]);
	value.assign(buf, n > 0 ? size_t(n) : 0);
	while (!value.empty() && value.back() == '\n')
		value.pop_back();
	return st;
}

// Shared by a run's cases: where the kernel log stood when the run began,
// and the card's address.
struct State {
	size_t mark = 0;
	std::string bdf;
};

// ---- a run's cases -------------------------------------------------------------

// What each of a run's cases is given: the options, the run, and the state
// its cases share (they run one after the other in this process).
struct RunFixture {
	Options o;
	Run r;
	std::shared_ptr<State> st;
};

// --scenario rebind, once the holder closed the old instance's node (its
// wait status in `holder`, -1 if its close did not return): whether the
// new instance still finds itself through the PCI drvdata.
void expect_new_instance_whole(ktap::Case &t, const RunFixture &f, int holder)
{
	t.expect(holder >= 0 && WIFEXITED(holder) && WEXITSTATUS(holder) == 0,
		 "the holder's close did not return cleanly (holder: %s)", describe_status(holder).c_str());
	auto c = card_at(f.st->bdf);
	if (!c)
		return t.expect(false, "no card %s", f.st->bdf.c_str());
	t.expect(c->accel_minor.has_value(), "the new instance has no accel node after the old one's close");
	std::string value;
	const int reader = read_in_child(c->sysfs + "/ce_count", value);
	const std::string trouble = kernel_trouble_since(f.st->mark, f.o.known_reports);
	if (f.r.expect_oops) {
		t.expect(trouble.find("ce_count_show") != std::string::npos, "no oops in ce_count_show (reader: %s, "
			 "read '%s'; upstream fixed?):\n    # %s", describe_status(reader).c_str(), value.c_str(),
			 as_diagnostic(trouble).c_str());
		t.expect(reader >= 0 && WIFSIGNALED(reader), "the reader was not killed (%s)",
			 describe_status(reader).c_str());
		if (!trouble.empty())
			note_expected_oops(t, trouble);
		return;
	}
	char *end = nullptr;
	const long n = value.empty() ? -1 : std::strtol(value.c_str(), &end, 10);
	t.expect(reader >= 0 && WIFEXITED(reader) && WEXITSTATUS(reader) == 0 && n >= 0 && end && !*end,
		 "ce_count of the new instance: '%s' (reader: %s)", value.c_str(), describe_status(reader).c_str());
	expect_no_trouble(t, trouble);
	t.note("the old node closed with the card bound again; the new instance's ce_count reads %s", value.c_str());
}

void loaded(ktap::Case &t, const RunFixture &f)
{
	if (std::filesystem::exists("/sys/module/qaic"))
		t.expect(shell("rmmod qaic") == 0, "rmmod qaic failed");
	t.expect(shell("modprobe -a drm mhi") == 0, "modprobe drm mhi failed");
	kmsg(f.r.label + ": close-after-unbind reproducer armed; loading " + f.r.module);
	f.st->mark = dmesg().size();
	t.expect(shell("insmod " + f.r.module) == 0, "insmod %s failed", f.r.module.c_str());
	auto cards = qaic::find_cards();
	if (f.o.card >= cards.size())
		return t.expect(false, "no card %u", f.o.card);
	f.st->bdf = cards[f.o.card].bdf;
	t.expect(wait_online(f.st->bdf), "card %s not ONLINE after loading %s", f.st->bdf.c_str(),
		 f.r.module.c_str());
}

// With the holder's node open: the card unbound.
void unbind_card(ktap::Case &t, const std::string &bdf)
{
	t.expect(spit("/sys/bus/pci/drivers/qaic/unbind", bdf), "unbind %s failed", bdf.c_str());
	auto after = card_at(bdf);
	t.expect(after && after->driver.empty() && !after->accel_minor,
		 "%s still bound or with an accel node after the unbind", bdf.c_str());
}

// With the holder's node open: the card unbound, then a new instance of
// the driver takes it.
void rebind_card(ktap::Case &t, const std::string &bdf)
{
	unbind_card(t, bdf);
	t.expect(spit("/sys/bus/pci/drivers/qaic/bind", bdf), "bind %s failed", bdf.c_str());
	t.expect(wait_online(bdf), "card %s not ONLINE after binding it again", bdf.c_str());
	// The close must come after every probe that reads the drvdata, or one
	// of them meets the bug first.
	t.expect(wait_for([&] { return amss_clients_probed(bdf); }, kOnlineTimeout),
		 "the new instance's MHI clients are not all probed");
}

// How the holder's close went: 'd' if it said it was done, and its wait
// status (-1: it did not end).
struct HolderClose {
	char closed = 0;
	int status = -1;
};

// Has a child open the card's accel node, does `while_open` to the card,
// then has the child close the node; nothing if it could not begin.
std::optional<HolderClose> close_after(ktap::Case &t, const RunFixture &f,
				       void (*while_open)(ktap::Case &, const std::string &bdf))
{
	auto c = card_at(f.st->bdf);
	if (!c || !c->accel_minor) {
		t.expect(false, "no accel node for %s", f.st->bdf.c_str());
		return std::nullopt;
	}
	int to_child[2], from_child[2];
	if (::pipe2(to_child, O_CLOEXEC) || ::pipe2(from_child, O_CLOEXEC)) {
		t.expect(false, "pipe: %s", std::strerror(errno));
		return std::nullopt;
	}
	const pid_t pid = start_holder(c->accel_node(), to_child, from_child);
	::close(to_child[0]);
	::close(from_child[1]);
	const char opened = read_byte(from_child[0], 30);
	t.expect(opened == 'o', "the holder did not open %s", c->accel_node().c_str());
	if (opened == 'o') {
		while_open(t, f.st->bdf);
		const char go = 'c';
		(void)!::write(to_child[1], &go, 1);
	}
	::close(to_child[1]);
	HolderClose done;
	done.closed = read_byte(from_child[0], 30);
	::close(from_child[0]);
	done.status = reap(pid, 30);
	return done;
}

void close_after_unbind(ktap::Case &t, const RunFixture &f)
{
	const auto held = close_after(t, f, unbind_card);
	if (!held)
		return;
	// The oops is printed by the close() itself, before the child is gone:
	// it is in the log once the child is reaped.
	const std::string trouble = kernel_trouble_since(f.st->mark, f.o.known_reports);
	const std::string holder = describe_status(held->status);
	if (!f.r.expect_oops) {
		t.expect(held->closed == 'd' && held->status >= 0 && WIFEXITED(held->status) &&
				 WEXITSTATUS(held->status) == 0,
			 "the holder's close did not return cleanly (holder: %s)", holder.c_str());
		return expect_no_trouble(t, trouble);
	}
	t.expect(!trouble.empty(), "no oops at the close after the unbind (holder: %s; upstream fixed?)",
		 holder.c_str());
	// The DRM managed release under the close, on the freed qdev: the NULL
	// srcu_sup in cleanup_srcu_struct(), or, under KASAN, its report of the
	// first action's access (a mutex_destroy()).
	t.expect((trouble.find("cleanup_srcu_struct") != std::string::npos ||
		  trouble.find("drm_managed_release") != std::string::npos) &&
			 trouble.find("drm_release") != std::string::npos,
		 "the oops is not the DRM managed release under drm_release:\n    # %s",
		 as_diagnostic(trouble).c_str());
	t.expect(held->closed != 'd' && held->status >= 0 && WIFSIGNALED(held->status),
		 "the holder's close returned (holder: %s)", holder.c_str());
	if (!trouble.empty())
		note_expected_oops(t, trouble);
}

void close_after_rebind(ktap::Case &t, const RunFixture &f)
{
	if (const auto held = close_after(t, f, rebind_card))
		expect_new_instance_whole(t, f, held->closed == 'd' ? held->status : -1);
}

// --scenario unbind, after a clean close: the driver is whole, the card
// binds again, comes ONLINE, and the module unloads for the next run.
void rebound(ktap::Case &t, const RunFixture &f)
{
	t.expect(spit("/sys/bus/pci/drivers/qaic/bind", f.st->bdf), "bind %s failed", f.st->bdf.c_str());
	t.expect(wait_online(f.st->bdf), "card %s not ONLINE after binding it again", f.st->bdf.c_str());
	t.expect(shell("rmmod qaic") == 0, "rmmod qaic failed");
	expect_no_trouble(t, kernel_trouble_since(f.st->mark, f.o.known_reports));
}

// --scenario rebind, after a clean close: the new instance goes whole,
// nothing of it is left after rmmod.
void removed(ktap::Case &t, const RunFixture &f)
{
	t.expect(shell("rmmod qaic") == 0, "rmmod qaic failed");
	auto c = card_at(f.st->bdf);
	t.expect(c && c->driver.empty() && !c->accel_minor, "%s still bound or with an accel node after rmmod",
		 f.st->bdf.c_str());
	std::error_code ec;
	for (const auto &d : std::filesystem::directory_iterator(c ? c->sysfs : "", ec))
		t.expect(d.path().filename().string().rfind("mhi", 0) != 0, "%s left after rmmod", d.path().c_str());
	expect_no_trouble(t, kernel_trouble_since(f.st->mark, f.o.known_reports));
}

// A run's cases in the order they run, named <label>_<case>, in this
// process (they share the run's state); an oops run ends after the close.
struct Scenario {
	ktap::Def<RunFixture> loaded, close, after_clean_close;
};

const Scenario kUnbindScenario = {KTAP_CASE(loaded, ktap::kInProcess), KTAP_CASE(close_after_unbind, ktap::kInProcess),
				  KTAP_CASE(rebound, ktap::kInProcess)};
const Scenario kRebindScenario = {KTAP_CASE(loaded, ktap::kInProcess), KTAP_CASE(close_after_rebind, ktap::kInProcess),
				  KTAP_CASE(removed, ktap::kInProcess)};

void add_run(ktap::Suite &s, const Options &o, const Run &r)
{
	const Scenario &sc = o.rebind ? kRebindScenario : kUnbindScenario;
	const RunFixture f{o, r, std::make_shared<State>()};
	s.add(r.label + "_" + sc.loaded.name, sc.loaded, f);
	s.add(r.label + "_" + sc.close.name, sc.close, f);
	if (!r.expect_oops)
		s.add(r.label + "_" + sc.after_clean_close.name, sc.after_clean_close, f);
}

} // namespace

int main(int argc, char **argv)
{
	const bool listing = ktap::take_list_option(argc, argv);
	Options o;
	for (int i = 1; i + 1 < argc; i += 2) {
		const std::string k = argv[i], v = argv[i + 1];
		if (k == "--card") {
			o.card = std::stoul(v);
		} else if (k == "--scenario") {
			if (v != "unbind" && v != "rebind") {
				std::fprintf(stderr, "--scenario %s: want unbind or rebind\n", v.c_str());
				return 2;
			}
			o.rebind = v == "rebind";
		} else if (k == "--run") {
			const auto run = parse_module_run(v, {"clean", "oops"});
			if (!run) {
				std::fprintf(stderr, "--run %s: want LABEL=MODULE:clean|oops\n", v.c_str());
				return 2;
			}
			o.runs.push_back({run->label, run->module, run->outcome == "oops"});
		} else if (k == "--known-report") {
			if (!is_known_report(v)) {
				std::fprintf(stderr, "--known-report %s: no such report\n", v.c_str());
				return 2;
			}
			o.known_reports.push_back(v);
		} else {
			std::fprintf(stderr, "unknown option %s\n", k.c_str());
			return 2;
		}
	}
	for (size_t i = 0; i + 1 < o.runs.size(); i++)
		if (o.runs[i].expect_oops) {
			std::fprintf(stderr, "--run %s: an oops run must be the last\n", o.runs[i].label.c_str());
			return 2;
		}
	if (o.runs.empty()) {
		std::fprintf(stderr, "usage: %s [--card N] [--scenario unbind|rebind] --run LABEL=MODULE:clean|oops "
			     "... (an oops run last)\n", argv[0]);
		return 2;
	}
	ktap::Suite s;
	for (const auto &r : o.runs)
		add_run(s, o, r);
	return s.run_or_list(listing);
}
