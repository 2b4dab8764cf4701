// Closes the fence opened by NpcMemoryThirdPartyBegin.h. No include guard on purpose.
#if defined(UE_BUILD_SHIPPING)
THIRD_PARTY_INCLUDES_END
#if PLATFORM_WINDOWS
#include "Windows/HideWindowsPlatformAtomics.h"
#include "Windows/HideWindowsPlatformTypes.h"
#endif
#pragma pop_macro("verify")
#pragma pop_macro("check")
#endif
