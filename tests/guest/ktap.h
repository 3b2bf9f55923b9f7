// SPDX-License-Identifier: GPL-2.0-or-later
// A minimal KTAP (v1) producer: register cases, then run() prints the plan,
// one result line per case and diagnostics prefixed with '#'.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace ktap {

enum class Result { Pass, Fail, Skip };

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
		cases_.push_back({std::move(name), std::move(fn)});
	}

	// Returns the number of failed cases.
	int run()
	{
		std::printf("KTAP version 1\n1..%zu\n", cases_.size());
		std::fflush(stdout);
		int failures = 0, n = 0;
		for (auto &[name, fn] : cases_) {
			Case c;
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
	std::vector<std::pair<std::string, std::function<void(Case &)>>> cases_;
};

} // namespace ktap
