// Compiles the generated npc_memory/v1/extraction.pb.cc (Source/ThirdParty/NpcMemoryProto, written by
// clients/generate), fenced from engine macros and warnings. One file per generated .cc: they share
// file-static names, so they must not meet in one translation unit (the module turns unity builds
// off). clients/cpp builds these same files with CMake and the test suite runs the result.
#include "NpcMemoryThirdPartyBegin.h"
#include "npc_memory/v1/extraction.pb.cc"
#include "NpcMemoryThirdPartyEnd.h"
