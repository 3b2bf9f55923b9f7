// SPDX-License-Identifier: GPL-2.0-or-later
// Runs fuzz inputs once each, without libFuzzer: for ctest (the committed
// seeds and regression inputs, in the normal and the sanitizer builds) and
// to reproduce a finding under a debugger. Arguments are files or
// directories of files.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	namespace fs = std::filesystem;
	std::vector<fs::path> files;
	for (int i = 1; i < argc; i++) {
		const fs::path p(argv[i]);
		if (fs::is_directory(p)) {
			for (const auto &e : fs::directory_iterator(p))
				if (e.is_regular_file())
					files.push_back(e.path());
		} else if (fs::is_regular_file(p)) {
			files.push_back(p);
		} else {
			std::fprintf(stderr, "%s: no such file or directory\n", argv[i]);
			return 2;
		}
	}
	std::sort(files.begin(), files.end());
	if (files.empty()) {
		std::fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 2;
	}
	for (const auto &f : files) {
		std::ifstream in(f, std::ios::binary);
		const std::vector<char> data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
		std::printf("%s (%zu bytes)\n", f.c_str(), data.size());
		std::fflush(stdout);
		LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(data.data()), data.size());
	}
	std::printf("%zu inputs ran\n", files.size());
	return 0;
}
