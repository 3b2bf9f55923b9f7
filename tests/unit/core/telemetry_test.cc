// SPDX-License-Identifier: GPL-2.0-or-later
// Telemetry requests on QAIC_TELEMETRY: reads, writes, the model and pinned
// sensors, and requests that are malformed.
#include <gtest/gtest.h>

#include "aic100/telemetry.h"
#include "nnc_host.h"

namespace aic100::test {
namespace {

using namespace telemetry;

struct Reply {
	uint32_t seq;
	uint8_t type, id, cmd, cmd_type, status;
	int64_t val;
};

class TelemetryTest : public NncHostTest {
protected:
	void SetUp() override
	{
		NncHostTest::SetUp();
		ASSERT_TRUE(mhi->start(kUl));
		ASSERT_TRUE(mhi->start(kDl));
		mhi->queue_dl(kDl, 64, 2);
	}
	static std::vector<uint8_t> request(uint8_t cmd, uint8_t cmd_type, int64_t val = 0, uint32_t seq = 7,
					    uint8_t id = 0)
	{
		std::vector<uint8_t> m(kMessageSize, 0);
		const uint16_t magic = telemetry::kMagic, ver = telemetry::kVersion, len = 11;
		std::memcpy(&m[0], &magic, 2);
		std::memcpy(&m[2], &ver, 2);
		std::memcpy(&m[4], &seq, 4);
		m[8] = kTypeReq;
		m[9] = id;
		std::memcpy(&m[10], &len, 2);
		m[12] = cmd;
		m[13] = cmd_type;
		std::memcpy(&m[15], &val, 8);
		return m;
	}
	Reply exchange(const std::vector<uint8_t> &req)
	{
		mhi->send(kUl, req);
		const auto r = mhi->pop(kDl);
		EXPECT_EQ(r.size(), kMessageSize);
		EXPECT_EQ(as<uint16_t>(r, 0), telemetry::kMagic);
		EXPECT_EQ(as<uint16_t>(r, 10), 11);
		return {as<uint32_t>(r, 4), r[8], r[9], r[12], r[13], r[14], as<int64_t>(r, 15)};
	}
	int64_t get(uint8_t cmd)
	{
		const Reply r = exchange(request(cmd, kRead));
		EXPECT_EQ(r.status, telemetry::kOk) << int(cmd);
		return r.val;
	}
};

TEST_F(TelemetryTest, ReadsAnswerWithTheRequestsSequenceAndUnits)
{
	const Reply r = exchange(request(kSocTemp, kRead, 0, 0xABCD, 3));
	EXPECT_EQ(r.seq, 0xABCDu);
	EXPECT_EQ(r.type, kTypeResp);
	EXPECT_EQ(r.id, 3);
	EXPECT_EQ(r.cmd, kSocTemp);
	EXPECT_EQ(r.status, telemetry::kOk);
	// Idle: 18 W, so the SoC sits near 35 °C + 0.6 °C/W.
	EXPECT_EQ(get(kBoardPower), kIdlePowerUw);
	EXPECT_EQ(r.val, 35'000 + 18 * 600);
	EXPECT_EQ(get(kPowerMax), kPowerMaxUw);
	EXPECT_EQ(get(kCurrentTdp), kPowerMaxUw);
	EXPECT_EQ(get(kThrottlePercent), 0);
	EXPECT_EQ(get(kNspActive), 0);
	EXPECT_GE(get(kSocMaxTemp), get(kSocTemp));
}

TEST_F(TelemetryTest, WritesSetLimitsWithinRange)
{
	EXPECT_EQ(exchange(request(kCurrentTdp, kWrite, 40'000'000)).status, telemetry::kOk);
	EXPECT_EQ(get(kCurrentTdp), 40'000'000);
	EXPECT_EQ(exchange(request(kCurrentTdp, kWrite, 5'000'000)).status, kOutOfRange);
	EXPECT_EQ(exchange(request(kCurrentTdp, kWrite, 80'000'000)).status, kOutOfRange);
	EXPECT_EQ(get(kCurrentTdp), 40'000'000) << "a refused write changes nothing";
	EXPECT_EQ(exchange(request(kPowerState, kWrite, 2)).status, telemetry::kOk);
	EXPECT_EQ(exchange(request(kPowerState, kWrite, 4)).status, kOutOfRange);
	EXPECT_EQ(exchange(request(kWarningTemp, kWrite, 80'000)).status, telemetry::kOk);
	EXPECT_EQ(get(kWarningTemp), 80'000);
	EXPECT_EQ(exchange(request(kSocTemp, kWrite, 1)).status, kReadOnly);
	EXPECT_EQ(exchange(request(99, kRead)).status, kUnknownCmd);
	EXPECT_EQ(exchange(request(99, kWrite, 1)).status, kUnknownCmd);
}

TEST_F(TelemetryTest, PinnedPowerThrottlesAgainstTheLimit)
{
	ASSERT_EQ(dev->inject("sensor board_power=60000000"), "");
	EXPECT_EQ(get(kBoardPower), 60'000'000);
	EXPECT_EQ(get(kSocTemp), 35'000 + 60 * 600) << "temperatures follow power";
	EXPECT_EQ(get(kThrottlePercent), 0);
	ASSERT_EQ(exchange(request(kCurrentTdp, kWrite, 45'000'000)).status, telemetry::kOk);
	EXPECT_EQ(get(kThrottlePercent), 25) << "15 W of 60 W over the limit";
	host.clock_ns += 2 * kWindowNs;
	EXPECT_EQ(get(kThrottleTime), 200);
	ASSERT_EQ(dev->inject("sensor board_power=auto soc_temp=70000"), "");
	EXPECT_EQ(get(kBoardPower), kIdlePowerUw);
	EXPECT_EQ(get(kThrottlePercent), 0);
	EXPECT_EQ(get(kSocTemp), 70'000);
	EXPECT_EQ(get(kSocMaxTemp), 35'000 + 60 * 600) << "the highest since boot";
	ASSERT_EQ(dev->inject("sensor soc_temp=99000"), "");
	ASSERT_EQ(dev->inject("sensor soc_temp=auto"), "");
	EXPECT_EQ(get(kSocMaxTemp), 99'000) << "the highest stays";
	EXPECT_EQ(get(kSocTemp), 35'000 + 18 * 600);
}

TEST_F(TelemetryTest, CrossingTheWarningTemperatureRaisesTsens)
{
	ASSERT_TRUE(mhi->start(ras::kUl));
	ASSERT_TRUE(mhi->start(ras::kDl));
	mhi->queue_dl(ras::kDl, 104, 1);
	ASSERT_EQ(dev->inject("sensor soc_temp=96000"), "");
	mhi->settle();
	auto m = mhi->pop(ras::kDl);
	ASSERT_EQ(m.size(), ras::kMessageSize);
	EXPECT_EQ(as<uint32_t>(m, 16), 6u) << "TSENS";
	EXPECT_EQ(as<uint32_t>(m, 20), 0u) << "CE";
	EXPECT_EQ(as<uint32_t>(m, 40), 1u) << "upper threshold";
	EXPECT_EQ(as<int32_t>(m, 44), 96);
	ASSERT_EQ(dev->inject("sensor soc_temp=97000"), "");
	mhi->settle();
	EXPECT_TRUE(mhi->pop(ras::kDl).empty()) << "only the crossing reports";
	ASSERT_EQ(dev->inject("sensor soc_temp=120000"), "");
	mhi->settle();
	m = mhi->pop(ras::kDl);
	EXPECT_EQ(as<uint32_t>(m, 20), 2u) << "UE_NF";
	EXPECT_EQ(as<uint32_t>(m, 40), 2u) << "critical threshold";
}

TEST_F(TelemetryTest, MalformedRequestsAreAnsweredOrDropped)
{
	auto r = request(kSocTemp, kRead);
	r[2] = 9; // version
	EXPECT_EQ(exchange(r).status, kMalformed);
	r = request(kSocTemp, kRead);
	r[8] = 2; // a response sent to the card
	EXPECT_EQ(exchange(r).status, kMalformed);
	r = request(kSocTemp, 7); // neither read nor write
	EXPECT_EQ(exchange(r).status, kMalformed);
	r = request(kSocTemp, kRead);
	r.resize(16); // short
	EXPECT_EQ(exchange(r).status, kMalformed);
	// Without a header there is nobody to answer.
	const size_t errors = host.errors.size();
	mhi->send(kUl, std::vector<uint8_t>{0xAA, 0x55, 1});
	r = request(kSocTemp, kRead);
	r[0] = 0;
	mhi->send(kUl, r);
	EXPECT_TRUE(mhi->rx[kDl].empty());
	EXPECT_EQ(host.errors.size(), errors + 2);
	EXPECT_EQ(get(kPowerState), 1) << "still answering";
}

TEST_F(TelemetryTest, SensorInjectionsAreChecked)
{
	for (const char *bad : {"sensor", "sensor soc_temp", "sensor fan=3", "sensor soc_temp=hot",
				"sensor soc_temp=300000", "sensor board_power=-1", "sensor soc_temp=1 soc_temp=2"})
		EXPECT_NE(dev->inject(bad), "") << bad;
	EXPECT_EQ(get(kSocTemp), 35'000 + 18 * 600);
}

TEST(TelemetryConfig, SensorsPinnedByProperties)
{
	FakeHost host;
	DeviceConfig cfg;
	cfg.boot_amss = true;
	cfg.soc_temp_mc = 81'000;
	cfg.board_power_uw = 33'000'000;
	ASSERT_EQ(cfg.validate(), "");
	Device dev(host, cfg);
	telemetry::Status st;
	EXPECT_EQ(dev.boot().qsm().telemetry().read(kSocTemp, st), 81'000);
	EXPECT_EQ(dev.boot().qsm().telemetry().read(kBoardPower, st), 33'000'000);
	cfg.ddr_temp_mc = 900'000;
	EXPECT_NE(cfg.validate(), "");
}

} // namespace
} // namespace aic100::test
