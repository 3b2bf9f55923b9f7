// SPDX-License-Identifier: GPL-2.0-or-later
// A minimal KTAP (v1) producer: register cases, then run() prints the plan,
// one result line per case and diagnostics prefixed with '#'.
//
// Every guest program also takes --list: it prints the names its results
// would carry, one a line, in order, and runs nothing, so that the harness
// asks the program for its cases instead of keeping a copy of them.
#pragma once

#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace ktap {

enum class Result { Pass, Fail, Skip };

class Case;

// One row of a suite's table of cases, in the shape of kselftest_harness.h's
// TEST_F: a function of its own, given the suite's fixture (what every case
// is given, e.g. the card, the driver's profile and the options), run in a
// child process of its own under a time limit (Suite::add_isolated).
// KTAP_CASE names the case after its function, so that a name in the
// results is found in the source as a function's. A timeout of kInProcess
// runs the case in the suite's own process instead, without a limit.
template <class Fixture> struct Def {
	const char *name;
	void (*fn)(Case &, const Fixture &);
	unsigned timeout_s;
};
#define KTAP_CASE(fn, timeout_s) {#fn, fn, timeout_s}
constexpr unsigned kInProcess = 0;

class Case {
public:
	// Records a failed expectation; the case goes on.
	void expect(bool ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)))
	{
		if (ok)
			return;
		failed_ = true;
		va_list ap;
		va_start(ap, fmt);
		diag("FAIL: ", fmt, ap);
		va_end(ap);
	}
	void note(const char *fmt, ...) __attribute__((format(printf, 2, 3)))
	{
		va_list ap;
		va_start(ap, fmt);
		diag("", fmt, ap);
		va_end(ap);
	}
	void skip(std::string why) { skip_ = std::move(why); }
	// Fails without a diagnostic of its own (one was printed elsewhere).
	void fail() { failed_ = true; }

	bool failed() const { return failed_; }
	const std::string &skip_reason() const { return skip_; }

private:
	static void diag(const char *prefix, const char *fmt, va_list ap)
	{
		std::printf("    # %s", prefix);
		std::vprintf(fmt, ap);
		std::printf("\n");
	}

	bool failed_ = false;
	std::string skip_;
};

class Suite {
public:
	void add(std::string name, std::function<void(Case &)> fn)
	{
		cases_.push_back({std::move(name), std::move(fn), 0});
	}
	// Runs the case in a child process under a time limit, as kselftest's
	// harness does: a crash or a hang fails this case only, and whatever
	// the case left open is closed before the next one starts. A timeout
	// of kInProcess runs it as add() does.
	void add_isolated(std::string name, unsigned timeout_s, std::function<void(Case &)> fn)
	{
		cases_.push_back({std::move(name), std::move(fn), timeout_s});
	}
	// A row of a table of cases (Def), run as add_isolated() runs a
	// function, given the fixture.
	template <class Fixture> void add(const Def<Fixture> &d, const Fixture &f) { add(d.name, d, f); }
	// The same under a name of the caller's, for a row that runs once per
	// fixture: "card1_bars" for the row "bars" given card 1.
	template <class Fixture> void add(std::string name, const Def<Fixture> &d, const Fixture &f)
	{
		add_isolated(std::move(name), d.timeout_s, [fn = d.fn, f](Case &t) { fn(t, f); });
	}
	// A case listed by name that only skips, with the reason.
	void add_skipped(std::string name, std::string why)
	{
		add(std::move(name), [why = std::move(why)](Case &t) { t.skip(why); });
	}

	// The names of the cases, one a line, in the order run() runs them.
	void list() const
	{
		for (const auto &c : cases_)
			std::printf("%s\n", c.name.c_str());
		std::fflush(stdout);
	}

	// The program's exit status: with --list (take_list_option), 0 once
	// the names are out; otherwise 1 if a case failed.
	int run_or_list(bool listing)
	{
		if (listing) {
			list();
			return 0;
		}
		return run() ? 1 : 0;
	}

	// Returns the number of failed cases.
	int run()
	{
		std::printf("KTAP version 1\n1..%zu\n", cases_.size());
		std::fflush(stdout);
		int failures = 0, n = 0;
		for (auto &[name, fn, timeout] : cases_) {
			Case c;
			if (timeout)
				run_isolated(c, fn, timeout);
			else
				fn(c);
			n++;
			if (!c.skip_reason().empty() && !c.failed())
				std::printf("ok %d %s # SKIP %s\n", n, name.c_str(), c.skip_reason().c_str());
			else if (c.failed())
				std::printf("not ok %d %s\n", n, name.c_str()), failures++;
			else
				std::printf("ok %d %s\n", n, name.c_str());
			std::fflush(stdout);
		}
		std::printf("# Totals: pass:%zu fail:%d\n", cases_.size() - failures, failures);
		return failures;
	}

private:
	struct Entry {
		std::string name;
		std::function<void(Case &)> fn;
		unsigned timeout; // seconds; 0: in this process
	};

	// The child reports 'P', 'F' or 'S' plus the skip reason on a pipe.
	static void run_isolated(Case &c, const std::function<void(Case &)> &fn, unsigned timeout)
	{
		int fds[2];
		if (pipe(fds)) {
			c.expect(false, "pipe: %s", std::strerror(errno));
			return;
		}
		std::fflush(stdout);
		const pid_t pid = fork();
		if (pid < 0) {
			c.expect(false, "fork: %s", std::strerror(errno));
			return;
		}
		if (pid == 0) {
			close(fds[0]);
			alarm(timeout);
			Case child;
			fn(child);
			std::string out = child.failed() ? "F" : child.skip_reason().empty() ? "P" : "S";
			out += child.skip_reason();
			std::fflush(stdout);
			[[maybe_unused]] ssize_t w = write(fds[1], out.data(), out.size());
			_exit(0);
		}
		close(fds[1]);
		int st = 0;
		waitpid(pid, &st, 0);
		// Grandchildren may still hold the pipe: read what is there, no more.
		fcntl(fds[0], F_SETFL, O_NONBLOCK);
		std::string got;
		char buf[512];
		for (ssize_t r; (r = read(fds[0], buf, sizeof(buf))) > 0;)
			got.append(buf, r);
		close(fds[0]);
		if (WIFSIGNALED(st)) {
			if (WTERMSIG(st) == SIGALRM)
				c.expect(false, "timed out after %u s", timeout);
			else
				c.expect(false, "killed by signal %d (%s)", WTERMSIG(st), strsignal(WTERMSIG(st)));
		} else if (got.empty()) {
			c.expect(false, "the case's process exited (status %d) without a result", WEXITSTATUS(st));
		} else if (got[0] == 'F') {
			c.fail(); // the child printed why
		} else if (got[0] == 'S') {
			c.skip(got.substr(1));
		}
	}

	std::vector<Entry> cases_;
};

// Whether the command line holds `flag` (an option without a value);
// takes it out of argv (and argc), so that the programs parse the rest as
// "--option value" pairs. Only an option's place counts: a value that
// reads as the flag stays.
inline bool take_flag(int &argc, char **argv, const char *flag)
{
	bool found = false;
	int kept = 1;
	for (int i = 1; i < argc;) {
		if (std::strcmp(argv[i], flag) == 0) {
			found = true;
			i++;
			continue;
		}
		argv[kept++] = argv[i++];
		if (i < argc)
			argv[kept++] = argv[i++];
	}
	argc = kept;
	argv[argc] = nullptr;
	return found;
}

// Whether the command line asks for --list (Suite::run_or_list).
inline bool take_list_option(int &argc, char **argv)
{
	return take_flag(argc, argv, "--list");
}

} // namespace ktap
