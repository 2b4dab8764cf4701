// NPC Memory runtime module: the generated gRPC/protobuf C++ (../ThirdParty/NpcMemoryProto, from
// clients/generate), the engine-neutral client NpcMemoryCore, and the Blueprint-facing
// UNpcMemoryClient. gRPC and protobuf themselves come from a prebuilt install prefix (for example a
// vcpkg "installed/<triplet>" folder) with include/ and lib/: see README.md.
using System;
using System.IO;
using UnrealBuildTool;

public class NpcMemory : ModuleRules
{
	public NpcMemory(ReadOnlyTargetRules Target) : base(Target)
	{
		PCHUsage = PCHUsageMode.UseExplicitOrSharedPCHs;
		// The generated .pb.cc files share file-static names: never merge them into one unity file.
		bUseUnity = false;
		// protobuf without RTTI, like the engine.
		PublicDefinitions.Add("GOOGLE_PROTOBUF_NO_RTTI=1");
		PrivateDefinitions.Add("GPR_FORBID_UNREACHABLE_CODE=1");
		PrivateDefinitions.Add("GRPC_ALLOW_EXCEPTIONS=0");

		PublicDependencyModuleNames.AddRange(new string[] { "Core", "CoreUObject", "Engine" });
		PrivateIncludePaths.Add(Path.Combine(ModuleDirectory, "..", "ThirdParty", "NpcMemoryProto"));

		string GrpcRoot = Environment.GetEnvironmentVariable("NPC_MEMORY_GRPC_ROOT");
		if (string.IsNullOrEmpty(GrpcRoot))
		{
			GrpcRoot = Path.Combine(ModuleDirectory, "..", "ThirdParty", "grpc", Target.Platform.ToString());
		}
		string Include = Path.Combine(GrpcRoot, "include");
		string Lib = Path.Combine(GrpcRoot, "lib");
		if (!Directory.Exists(Include) || !Directory.Exists(Lib))
		{
			throw new BuildException(
				"NpcMemory: no gRPC install at " + GrpcRoot + " (needs include/ and lib/). Set NPC_MEMORY_GRPC_ROOT " +
				"or put one in Source/ThirdParty/grpc/" + Target.Platform + "; see the plugin's README.md.");
		}
		PublicSystemIncludePaths.Add(Include);
		bool Windows = Target.Platform == UnrealTargetPlatform.Win64;
		foreach (string Library in Directory.GetFiles(Lib, Windows ? "*.lib" : "*.a"))
		{
			PublicAdditionalLibraries.Add(Library);
		}
		if (Windows)
		{
			PublicSystemLibraries.AddRange(new string[] { "ws2_32.lib", "crypt32.lib", "iphlpapi.lib", "advapi32.lib", "bcrypt.lib" });
		}
		else
		{
			// gRPC brings its own TLS and zlib in a full install; fall back to the engine's otherwise.
			AddEngineThirdPartyPrivateStaticDependencies(Target, "OpenSSL", "zlib");
		}
	}
}
