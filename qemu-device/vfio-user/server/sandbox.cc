// SPDX-License-Identifier: GPL-2.0-or-later
#include "sandbox.h"

#include <grp.h>
#include <pwd.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

namespace aic100::vfio_user {

bool drop_to_user(const std::string &user, std::string &why)
{
	errno = 0;
	const passwd *pw = getpwnam(user.c_str());
	if (!pw) {
		// getpwnam(3): these mean only that the name is not there.
		const bool absent = errno == 0 || errno == ENOENT || errno == ESRCH || errno == EBADF || errno == EPERM;
		why = "--user " + user + ": " + (absent ? "no such user" : std::strerror(errno));
		return false;
	}
	const uid_t uid = pw->pw_uid;
	const gid_t gid = pw->pw_gid;
	if (setgroups(0, nullptr) != 0 || setgid(gid) != 0 || setuid(uid) != 0) {
		why = "--user " + user + ": " + std::strerror(errno);
		return false;
	}
	// setuid() to a non-root uid from root drops every capability; a way
	// back would mean it did not.
	if (uid != 0 && setuid(0) == 0) {
		why = "--user " + user + ": root could be regained";
		return false;
	}
	return true;
}

namespace {

// A call outside the list lands here (SECCOMP_RET_TRAP): say which one,
// with nothing but write and _exit, which the list has.
void on_sigsys(int, siginfo_t *info, void *)
{
	char line[80] = "aic100-vfio-user: sandbox: system call ";
	size_t n = std::strlen(line);
	char digits[12];
	size_t d = 0;
	unsigned nr = static_cast<unsigned>(info->si_syscall);
	do {
		digits[d++] = static_cast<char>('0' + nr % 10);
		nr /= 10;
	} while (nr && d < sizeof(digits));
	while (d)
		line[n++] = digits[--d];
	const char tail[] = " is not allowed (docs/vfio-user.md, \"Isolation\")\n";
	const ssize_t unused = write(STDERR_FILENO, line, n) + write(STDERR_FILENO, tail, sizeof(tail) - 1);
	(void)unused;
	_exit(128 + SIGSYS);
}

struct Rule {
	int nr;
	uint32_t action;
	std::vector<scmp_arg_cmp> args;
};

// The serving loop (poll, the socket's messages, eventfds, the timerfd,
// mmaps of the client's memory), the NSP threads each workload starts, and
// what glibc and libstdc++ do under them (malloc, futexes, abort).
std::vector<Rule> allow_list()
{
	const scmp_arg_cmp no_exec{2, SCMP_CMP_MASKED_EQ, PROT_EXEC, 0};
	const scmp_arg_cmp a_thread{0, SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD};
	std::vector<Rule> rules;
	for (const int nr : {
		     SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev), SCMP_SYS(close),
		     SCMP_SYS(poll), SCMP_SYS(ppoll), SCMP_SYS(accept4), SCMP_SYS(recvmsg), SCMP_SYS(sendmsg),
		     SCMP_SYS(recvfrom), SCMP_SYS(sendto), SCMP_SYS(shutdown), SCMP_SYS(fcntl),
		     SCMP_SYS(fstat), SCMP_SYS(newfstatat), SCMP_SYS(timerfd_settime), SCMP_SYS(timerfd_gettime),
		     SCMP_SYS(clock_gettime), SCMP_SYS(clock_nanosleep), SCMP_SYS(nanosleep),
		     SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(madvise), SCMP_SYS(brk), SCMP_SYS(futex),
		     SCMP_SYS(set_robust_list), SCMP_SYS(rseq), SCMP_SYS(sched_getaffinity), SCMP_SYS(sched_yield),
		     SCMP_SYS(getrandom), SCMP_SYS(getpid), SCMP_SYS(gettid), SCMP_SYS(tgkill),
		     SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigaction), SCMP_SYS(rt_sigreturn),
		     SCMP_SYS(restart_syscall), SCMP_SYS(exit), SCMP_SYS(exit_group),
		     // The socket file, removed at exit where the user may.
		     SCMP_SYS(unlink), SCMP_SYS(unlinkat)})
		rules.push_back({nr, SCMP_ACT_ALLOW, {}});
	// Memory is never made executable: the server loads no code.
	rules.push_back({SCMP_SYS(mmap), SCMP_ACT_ALLOW, {no_exec}});
	rules.push_back({SCMP_SYS(mprotect), SCMP_ACT_ALLOW, {no_exec}});
	// Threads, not processes; glibc falls back from clone3 to clone.
	rules.push_back({SCMP_SYS(clone), SCMP_ACT_ALLOW, {a_thread}});
	rules.push_back({SCMP_SYS(clone3), SCMP_ACT_ERRNO(ENOSYS), {}});
	// Files are refused, not fatal: glibc asks /sys for the CPU count and
	// takes sched_getaffinity when it may not.
	for (const int nr : {SCMP_SYS(open), SCMP_SYS(openat), SCMP_SYS(openat2)})
		rules.push_back({nr, SCMP_ACT_ERRNO(EACCES), {}});
	return rules;
}

}  // namespace

bool enter_sandbox(std::string &why)
{
	struct sigaction sa{};
	sa.sa_sigaction = on_sigsys;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, nullptr) != 0) {
		why = std::string("sandbox: sigaction: ") + std::strerror(errno);
		return false;
	}
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
	if (!ctx) {
		why = "sandbox: seccomp_init failed";
		return false;
	}
	int rc = 0;
	for (const Rule &r : allow_list()) {
		rc = seccomp_rule_add_array(ctx, r.action, r.nr, static_cast<unsigned>(r.args.size()),
					    r.args.empty() ? nullptr : r.args.data());
		if (rc < 0)
			break;
	}
	if (rc >= 0)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc < 0) {
		why = std::string("sandbox: ") + std::strerror(-rc);
		return false;
	}
	return true;
}

}  // namespace aic100::vfio_user
