// SPDX-License-Identifier: GPL-2.0-or-later
// export_network(): what the ONNX Runtime baseline rebuilds the network
// from must be the network itself, with the reference's own outputs.
#include "export.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "reference.h"

namespace aic100::compiler {
namespace {

std::string read(const std::filesystem::path &p)
{
	std::ifstream f(p, std::ios::binary);
	return {std::istreambuf_iterator<char>(f), {}};
}

class Export : public ::testing::Test {
protected:
	void SetUp() override
	{
		// A folder per test: ctest runs them as parallel processes.
		dir_ = std::filesystem::path(::testing::TempDir()) /
		       (std::string("export-") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
		std::filesystem::remove_all(dir_);
	}
	void TearDown() override { std::filesystem::remove_all(dir_); }
	std::filesystem::path dir_;
	const Network net_ = resnet50(32);
};

TEST_F(Export, WritesEveryWeightInLayerOrder)
{
	ASSERT_EQ(export_network(net_, dir_.string(), 1), "");
	std::string want;
	for (const Layer &l : net_.layers)
		want.append(reinterpret_cast<const char *>(l.weights.data()), l.weights.size());
	EXPECT_EQ(read(dir_ / "weights.bin"), want);
}

TEST_F(Export, DescribesEachLayerWithItsWeightsRange)
{
	ASSERT_EQ(export_network(net_, dir_.string(), 1), "");
	const std::string json = read(dir_ / "network.json");
	EXPECT_NE(json.find("\"name\":\"resnet50-32\""), std::string::npos);
	EXPECT_NE(json.find("\"layout\":\"NHWC\""), std::string::npos);
	// conv1's 7×7×3×64 weights come first.
	EXPECT_NE(json.find("\"name\":\"conv1\",\"in0\":0,\"in1\":-1,\"out\":1,\"k\":7,\"stride\":2,\"pad\":3,"
			    "\"weights\":[0,9408],\"relu\":true"),
		  std::string::npos);
	size_t layers = 0;
	for (size_t at = json.find("{\"kind\":"); at != std::string::npos; at = json.find("{\"kind\":", at + 1))
		layers++;
	EXPECT_EQ(layers, net_.layers.size());
}

TEST_F(Export, WritesTheReferencesOutputsForItsInputs)
{
	ASSERT_EQ(export_network(net_, dir_.string(), 2), "");
	for (unsigned k = 1; k <= 2; k++) {
		const std::vector<int8_t> in = random_input(net_, k);
		const std::vector<int8_t> out = reference::run(net_, in);
		EXPECT_EQ(read(dir_ / ("input-" + std::to_string(k) + ".bin")), std::string(in.begin(), in.end()));
		EXPECT_EQ(read(dir_ / ("output-" + std::to_string(k) + ".bin")), std::string(out.begin(), out.end()));
	}
	uint64_t elements = 0;
	for (const Shape &s : net_.tensors)
		elements += s.elements();
	EXPECT_EQ(read(dir_ / "tensors-1.bin").size(), elements);
}

TEST_F(Export, SaysWhyItCannotWrite)
{
	std::ofstream(dir_.string()) << "a file where the folder should be";
	EXPECT_NE(export_network(net_, dir_.string(), 1).find(dir_.string()), std::string::npos);
}

} // namespace
} // namespace aic100::compiler
