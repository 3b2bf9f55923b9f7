// SPDX-License-Identifier: GPL-2.0-or-later
// aic100-vfio-user's confinement (sandbox.h), each case in a child process
// of its own, since neither a seccomp filter nor a new uid can be undone:
// what the loop needs still works, a file is refused, anything else ends
// the process with its line, and --user leaves no way back to root.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <string>
#include <thread>

#include "sandbox.h"

namespace aic100::vfio_user {
namespace {

struct ChildResult {
	int status = -1;  // exit status, or 128 + signal
	std::string err;  // what it wrote to stderr
};

// Runs `body` in a forked child with stderr captured; its return value is
// the child's exit status.
ChildResult in_child(const std::function<int()> &body)
{
	int p[2];
	EXPECT_EQ(pipe(p), 0);
	const pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], STDERR_FILENO);
		close(p[0]);
		_exit(body());
	}
	close(p[1]);
	ChildResult r;
	char buf[256];
	ssize_t n;
	while ((n = read(p[0], buf, sizeof(buf))) > 0)
		r.err.append(buf, static_cast<size_t>(n));
	close(p[0]);
	int status = 0;
	waitpid(pid, &status, 0);
	r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	return r;
}

int sandboxed(const std::function<int()> &body)
{
	std::string why;
	if (!enter_sandbox(why)) {
		dprintf(STDERR_FILENO, "%s\n", why.c_str());
		return 2;
	}
	return body();
}

TEST(VfioUserSandbox, TheLoopsCallsStillWork)
{
	const ChildResult r = in_child([] {
		const int shm = memfd_create("dma", MFD_CLOEXEC);
		const int ev = eventfd(0, EFD_CLOEXEC);
		if (shm < 0 || ev < 0 || ftruncate(shm, 1 << 16) != 0)
			return 3;
		return sandboxed([&] {
			void *m = mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_SHARED, shm, 0);
			if (m == MAP_FAILED)
				return 4;
			std::memset(m, 0xa5, 1 << 16);
			const uint64_t one = 1;
			if (write(ev, &one, sizeof(one)) != sizeof(one))
				return 5;
			int ran = 0;
			std::thread t([&] { ran = 1; });  // the NSPs' threads
			t.join();
			std::string grown(1 << 22, 'x');  // malloc past its mmap threshold
			munmap(m, 1 << 16);
			return ran && grown.size() == (1u << 22) ? 0 : 6;
		});
	});
	EXPECT_EQ(r.status, 0) << r.err;
	EXPECT_EQ(r.err, "");
}

TEST(VfioUserSandbox, OpeningAFileIsRefusedWithEacces)
{
	const ChildResult r = in_child([] {
		return sandboxed([] {
			const int fd = open("/proc/self/status", O_RDONLY);
			return fd < 0 && errno == EACCES ? 0 : 7;
		});
	});
	EXPECT_EQ(r.status, 0) << r.err;
}

TEST(VfioUserSandbox, AnyOtherCallEndsTheProcessNamingIt)
{
	const ChildResult r = in_child([] { return sandboxed([] { return socket(AF_INET, SOCK_STREAM, 0) < 0 ? 8 : 9; }); });
	EXPECT_EQ(r.status, 159);
	EXPECT_EQ(r.err, "aic100-vfio-user: sandbox: system call " + std::to_string(SYS_socket) +
				 " is not allowed (docs/vfio-user.md, \"Isolation\")\n");
}

TEST(VfioUserSandbox, ExecutableMemoryEndsTheProcess)
{
	const ChildResult r = in_child([] {
		return sandboxed([] {
			void *m = mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			return m == MAP_FAILED ? 10 : 11;
		});
	});
	EXPECT_EQ(r.status, 159);
	EXPECT_NE(r.err.find("system call " + std::to_string(SYS_mmap) + " "), std::string::npos) << r.err;
}

TEST(VfioUserSandbox, ProcessesCannotBeStarted)
{
	const ChildResult r = in_child([] { return sandboxed([] { return fork() < 0 ? 12 : 13; }); });
	EXPECT_EQ(r.status, 159) << r.err;
}

TEST(VfioUserSandbox, DroppingToAUserLeavesNoWayBack)
{
	if (geteuid() != 0)
		GTEST_SKIP() << "needs root to change users";
	const ChildResult r = in_child([] {
		std::string why;
		if (!drop_to_user("nobody", why)) {
			dprintf(STDERR_FILENO, "%s\n", why.c_str());
			return 2;
		}
		gid_t groups[4];
		const bool no_root = getuid() != 0 && geteuid() != 0 && getgid() != 0 && getgroups(4, groups) == 0;
		return no_root && setuid(0) != 0 && setgid(0) != 0 ? 0 : 14;
	});
	EXPECT_EQ(r.status, 0) << r.err;
}

TEST(VfioUserSandbox, AnUnknownUserIsOneLine)
{
	std::string why;
	EXPECT_FALSE(drop_to_user("no-such-user-aic100", why));
	EXPECT_EQ(why, "--user no-such-user-aic100: no such user");
}

}  // namespace
}  // namespace aic100::vfio_user
