// SPDX-License-Identifier: GPL-2.0-or-later
// The command line and files of both seed generators: `--out DIR` writes
// what a generator makes, `--check DIR` counts every file that differs from
// it and every file it does not make.
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace aic100::seed_steps {

struct SeedFiles {
	// `program` names the generator in messages; `make_target` rewrites
	// the committed files.
	SeedFiles(const char *program, const char *make_target) : program(program), make_target(make_target) {}

	const char *program;
	const char *make_target;
	bool check = false;
	std::filesystem::path dir;

	// From `--out DIR` or `--check DIR`; false (after the usage) otherwise.
	bool parse(int argc, char **argv)
	{
		if (argc != 3 || (std::strcmp(argv[1], "--out") != 0 && std::strcmp(argv[1], "--check") != 0)) {
			std::fprintf(stderr, "usage: %s --out DIR | --check DIR\n", argv[0]);
			return false;
		}
		check = std::strcmp(argv[1], "--check") == 0;
		dir = argv[2];
		return true;
	}

	// Writes `bytes` to `file`, or (check) counts a difference.
	int put(const std::filesystem::path &file, const std::vector<uint8_t> &bytes) const
	{
		if (check) {
			std::ifstream in(file, std::ios::binary);
			if (std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()) == bytes)
				return 0;
			std::fprintf(stderr, "%s: %s differs from what the generator makes now: "
					     "run 'make %s' and commit the result\n", program, file.c_str(), make_target);
			return 1;
		}
		std::filesystem::create_directories(file.parent_path());
		std::ofstream out(file, std::ios::binary | std::ios::trunc);
		out.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
		return 0;
	}

	// (check) Counts the files in `seeds` that are none of `names`.
	int strangers(const std::filesystem::path &seeds, const std::vector<std::string> &names) const
	{
		int n = 0;
		if (!check || !std::filesystem::is_directory(seeds))
			return 0;
		for (const auto &e : std::filesystem::directory_iterator(seeds)) {
			if (std::find(names.begin(), names.end(), e.path().filename().string()) == names.end()) {
				std::fprintf(stderr, "%s: %s is no seed the generator makes\n", program, e.path().c_str());
				n++;
			}
		}
		return n;
	}
};

} // namespace aic100::seed_steps
