// SPDX-License-Identifier: GPL-2.0-or-later
// The aic100-vfio-user program itself: it serves on its socket, ends
// cleanly on SIGTERM (socket file gone), and refuses bad options and a
// socket another server holds with one line and status 1. Once listening
// it is the user it was given, confined by its seccomp allow-list.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <fstream>
#include <iterator>

#include "aic100/regs.h"
#include "test_client.h"

extern char **environ;

namespace aic100::vfio_user::test {
namespace {

class Program {
public:
	explicit Program(const std::vector<std::string> &args)
	{
		int p[2];
		EXPECT_EQ(pipe2(p, O_CLOEXEC), 0);
		err_.reset(p[0]);
		posix_spawn_file_actions_t fa;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, p[1], 2);
		std::vector<std::string> all = {AIC100_VFIO_USER_BIN};
		all.insert(all.end(), args.begin(), args.end());
		std::vector<char *> argv;
		for (std::string &a : all)
			argv.push_back(a.data());
		argv.push_back(nullptr);
		EXPECT_EQ(posix_spawn(&pid_, AIC100_VFIO_USER_BIN, &fa, nullptr, argv.data(), environ), 0);
		posix_spawn_file_actions_destroy(&fa);
		close(p[1]);
	}
	~Program()
	{
		if (pid_ > 0) {
			kill(pid_, SIGKILL);
			waitpid(pid_, nullptr, 0);
		}
	}
	// stderr up to the first line that holds `text` (or all of it, at EOF).
	std::string stderr_until(const std::string &text)
	{
		while (out_.find(text) == std::string::npos) {
			char buf[256];
			if (!wait_readable(err_.get()))
				break;
			const ssize_t n = read(err_.get(), buf, sizeof(buf));
			if (n <= 0)
				break;
			out_.append(buf, static_cast<size_t>(n));
		}
		return out_;
	}
	// The exit status, waiting at most kWaitMs for it.
	int wait_exit()
	{
		const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
		EXPECT_TRUE(wait_readable(pidfd));
		close(pidfd);
		int status = 0;
		waitpid(pid_, &status, WNOHANG);
		pid_ = -1;
		return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
	pid_t pid() const { return pid_; }

private:
	pid_t pid_ = -1;
	UniqueFd err_;
	std::string out_;
};

struct TempDir {
	TempDir()
	{
		char tmpl[] = "/tmp/aic100-vfio-user-prog.XXXXXX";
		path = mkdtemp(tmpl);
	}
	~TempDir()
	{
		unlink((path + "/card.sock").c_str());
		rmdir(path.c_str());
	}
	std::string path;
};

TestClient connect_to(const std::string &path)
{
	sockaddr_un addr{};
	addr.sun_family = AF_UNIX;
	std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
	const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof(addr)), 0);
	return TestClient(fd);
}

TEST(VfioUserServerProgram, ServesOnItsSocketAndEndsCleanlyOnSigterm)
{
	TempDir dir;
	const std::string sock = dir.path + "/card.sock";
	Program p({"--socket", sock, "--family", "aic200", "--nsps", "1", "--ddr-size", "64M"});
	ASSERT_NE(p.stderr_until(" on " + sock).find("AIC200 0xa110 on " + sock), std::string::npos);
	TestClient c = connect_to(sock);
	c.negotiate();
	EXPECT_EQ(read32(c, 1, regs::MHIVER), regs::kMhiVersion);
	kill(p.pid(), SIGTERM);
	EXPECT_EQ(p.wait_exit(), 0);
	EXPECT_NE(access(sock.c_str(), F_OK), 0);
}

// A line of /proc/PID/status: who a process is and what binds it.
std::string status_line(pid_t pid, const std::string &key)
{
	std::ifstream in("/proc/" + std::to_string(pid) + "/status");
	const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
	const size_t at = text.find("\n" + key + ":");
	return at == std::string::npos ? "" : text.substr(at + 1, text.find('\n', at + 1) - at - 1);
}

TEST(VfioUserServerProgram, ServesAsTheUserGivenInsideItsSandbox)
{
	if (geteuid() != 0)
		GTEST_SKIP() << "needs root to change users";
	TempDir dir;
	const std::string sock = dir.path + "/card.sock";
	Program p({"--socket", sock, "--nsps", "1", "--ddr-size", "64M", "--user", "nobody"});
	ASSERT_NE(p.stderr_until(" on " + sock).find(sock + " (user nobody, sandbox on)"), std::string::npos);
	TestClient c = connect_to(sock);
	c.negotiate();
	EXPECT_EQ(read32(c, 0, regs::MHIVER), regs::kMhiVersion);  // the AIC100's MHI is BAR0
	EXPECT_EQ(status_line(p.pid(), "Uid"), "Uid:\t65534\t65534\t65534\t65534");
	EXPECT_EQ(status_line(p.pid(), "Groups"), "Groups:\t ");  // none
	EXPECT_EQ(status_line(p.pid(), "NoNewPrivs"), "NoNewPrivs:\t1");
	EXPECT_EQ(status_line(p.pid(), "Seccomp"), "Seccomp:\t2");
	kill(p.pid(), SIGTERM);
	EXPECT_EQ(p.wait_exit(), 0);
}

TEST(VfioUserServerProgram, SandboxOffLeavesNoFilter)
{
	TempDir dir;
	const std::string sock = dir.path + "/card.sock";
	Program p({"--socket", sock, "--nsps", "1", "--ddr-size", "64M", "--sandbox", "off"});
	ASSERT_NE(p.stderr_until(" on " + sock).find("sandbox off"), std::string::npos);
	EXPECT_EQ(status_line(p.pid(), "Seccomp"), "Seccomp:\t0");
}

TEST(VfioUserServerProgram, BadOptionIsOneLineAndStatus1)
{
	Program p({"--socket", "/tmp/unused.sock", "--nsps", "17"});
	EXPECT_EQ(p.stderr_until("\n"), "aic100-vfio-user: nsps=17: must be 1..16\n");
	EXPECT_EQ(p.wait_exit(), 1);
}

TEST(VfioUserServerProgram, RefusesASocketAnotherServerListensOn)
{
	TempDir dir;
	const std::string sock = dir.path + "/card.sock";
	Program first({"--socket", sock, "--nsps", "1", "--ddr-size", "64M"});
	ASSERT_NE(first.stderr_until(" on " + sock).find(sock), std::string::npos);
	Program second({"--socket", sock, "--nsps", "1", "--ddr-size", "64M"});
	EXPECT_EQ(second.stderr_until("\n"), "aic100-vfio-user: " + sock + ": another server is listening on it\n");
	EXPECT_EQ(second.wait_exit(), 1);
}

}  // namespace
}  // namespace aic100::vfio_user::test
