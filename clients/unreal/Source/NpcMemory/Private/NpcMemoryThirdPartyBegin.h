// Opens a fence around gRPC/protobuf headers. In Unreal builds (UBT defines UE_BUILD_SHIPPING) it
// hides the engine's check/verify macros and silences third-party warnings; elsewhere (clients/cpp,
// plain CMake) it does nothing. Pair with NpcMemoryThirdPartyEnd.h. No include guard on purpose.
#if defined(UE_BUILD_SHIPPING)
#include "CoreMinimal.h"
#pragma push_macro("check")
#pragma push_macro("verify")
#undef check
#undef verify
#if PLATFORM_WINDOWS
#include "Windows/AllowWindowsPlatformTypes.h"
#include "Windows/AllowWindowsPlatformAtomics.h"
#endif
THIRD_PARTY_INCLUDES_START
#endif
