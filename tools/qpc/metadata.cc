// SPDX-License-Identifier: GPL-2.0-or-later
// Encoding and decoding of network ELF metadata.
#include "metadata.h"

#include <algorithm>
#include <cstring>

namespace aic100::qpc {

const std::vector<std::string> &known_required_fields()
{
	static const std::vector<std::string> fields = [] {
		const char *top[] = {"versionMajor", "versionMinor", "networkName", "requiredFields",
				     "semaphoreInitState", "L2TCMInitState", "dmaRequests", "nspMulticastTables",
				     "hostMulticastTable", "threadDescriptors", "constantMappings",
				     "staticSharedDDRSize", "dynamicSharedDDRSize", "staticConstantsSize",
				     "dynamicConstantsSize", "exitDoorbellOffset", "l2CachedDDRSize", "L2TCMInitSize",
				     "execContextMajorVersion", "numNSPs", "numSemaphores", "hwVersionMajor",
				     "hwVersionMinor", "staticSharedDDRECCEnabled", "dynamicSharedDDRECCEnabled",
				     "staticConstantsECCEnabled", "dynamicConstantsECCEnabled", "singleVTCMPage",
				     "hasHvxFP", "hasHmxFP", "VTCMSize", "L2TCMSize", "networkHeapSize",
				     "raw_struct_version_length"};
		const char *nested[] = {"dmaRequests->semaphoreOps", "dmaRequests->doorbellOps", "dmaRequests->hostOffset",
					"dmaRequests->devOffset", "dmaRequests->size", "dmaRequests->num",
					"dmaRequests->mcId", "dmaRequests->devAddrSpace", "dmaRequests->inOut",
					"dmaRequests->portId", "dmaRequests->semaphoreOps->semNum",
					"dmaRequests->semaphoreOps->semValue", "dmaRequests->semaphoreOps->semOp",
					"dmaRequests->semaphoreOps->preOrPost", "dmaRequests->semaphoreOps->inSyncFence",
					"dmaRequests->semaphoreOps->outSyncFence", "dmaRequests->doorbellOps->offset",
					"dmaRequests->doorbellOps->data", "dmaRequests->doorbellOps->mcId",
					"dmaRequests->doorbellOps->size", "nspMulticastTables->multicastEntries",
					"nspMulticastTables->multicastEntries->baseAddrOffset",
					"nspMulticastTables->multicastEntries->mask",
					"nspMulticastTables->multicastEntries->size",
					"nspMulticastTables->multicastEntries->addrSpace",
					"nspMulticastTables->multicastEntries->dynamic",
					"hostMulticastTable->multicastEntries", "hostMulticastTable->multicastEntries->mask",
					"hostMulticastTable->multicastEntries->size", "threadDescriptors->entryPoint",
					"threadDescriptors->typeMask", "constantMappings->constantDataBaseOffset",
					"constantMappings->coreMask", "constantMappings->size"};
		std::vector<std::string> v;
		for (const char *f : top)
			v.push_back(std::string("AicMetadataFlat_Metadata->") + f);
		for (const char *f : nested)
			v.push_back(std::string("AicMetadataFlat_Metadata->") + f);
		return v;
	}();
	return fields;
}

std::vector<uint8_t> encode_flatbuffer(const meta::MetadataT &m)
{
	flatbuffers::FlatBufferBuilder b;
	b.ForceDefaults(true);
	b.Finish(meta::Metadata::Pack(b, &m));
	return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
}

std::vector<uint8_t> encode_metadata(const meta::MetadataT &m)
{
	std::vector<uint8_t> out(kMetadataHeaderSize, 0);
	out[0] = uint8_t(kMetadataMajor);
	out[1] = uint8_t(kMetadataMajor >> 8);
	out[2] = uint8_t(kMetadataMinor);
	out[3] = uint8_t(kMetadataMinor >> 8);
	const auto fb = encode_flatbuffer(m);
	out.insert(out.end(), fb.begin(), fb.end());
	return out;
}

namespace {

bool verifies(const std::vector<uint8_t> &buf)
{
	if (buf.size() < 8)
		return false;
	flatbuffers::Verifier v(buf.data(), buf.size());
	return meta::VerifyMetadataBuffer(v);
}

} // namespace

std::unique_ptr<meta::MetadataT> decode_metadata(std::span<const uint8_t> section, std::string &err)
{
	// A copy: the FlatBuffer must be aligned for the verifier.
	std::vector<uint8_t> buf(section.begin(), section.end());
	if (!verifies(buf) && buf.size() > kMetadataHeaderSize && buf[0] == uint8_t(kMetadataMajor) &&
	    buf[1] == 0 && buf[2] == uint8_t(kMetadataMinor) && buf[3] == 0)
		buf.erase(buf.begin(), buf.begin() + kMetadataHeaderSize);
	if (!verifies(buf)) {
		err = "the metadata is not a FlatBuffer of the metadata schema";
		return nullptr;
	}
	auto m = meta::UnPackMetadata(buf.data());
	if (m->versionMajor != kMetadataMajor) {
		err = "metadata version " + std::to_string(m->versionMajor) + "." + std::to_string(m->versionMinor) +
		      " is not 1.x";
		return nullptr;
	}
	const auto &known = known_required_fields();
	for (const std::string &f : m->requiredFields)
		if (std::find(known.begin(), known.end(), f) == known.end()) {
			err = "the metadata requires a field this reader does not know: " + f;
			return nullptr;
		}
	return m;
}

} // namespace aic100::qpc
