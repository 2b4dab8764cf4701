// NPC Memory runtime module: no startup work; clients are created on demand.
#include "Modules/ModuleManager.h"

IMPLEMENT_MODULE(FDefaultModuleImpl, NpcMemory)
