# The UMD asks FetchContent for protobuf with find_package(protobuf) first
# (FIND_PACKAGE_ARGS NAMES protobuf). Debian's libprotobuf-dev has no CMake
# config file, only CMake's own FindProtobuf module (capital P); this file
# lets the lower-case name find it, so that the system's protobuf is used and
# FetchContent does not build v3.11.4 next to it.
find_package(Protobuf QUIET)
set(protobuf_FOUND ${Protobuf_FOUND})
set(protobuf_VERSION ${Protobuf_VERSION})
