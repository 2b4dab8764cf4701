// NPC Memory: a Blueprint-friendly client for the npc-memory gRPC service.
// Calls run on a background thread; the callbacks fire on the game thread.
#pragma once

#include "CoreMinimal.h"
#include "UObject/Object.h"
#include "NpcMemoryClient.generated.h"

namespace npc_memory_client { class MemoryClient; }

/** One fact to store for a player with a heroine. */
USTRUCT(BlueprintType)
struct NPCMEMORY_API FNpcMemoryFact
{
	GENERATED_BODY()

	/** The fact as text (Korean or any language), 1-2000 characters. */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "NPC Memory")
	FString Content;

	/** What it is about: "user" (the player), "heroine" or "world". */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "NPC Memory")
	FString Subject = TEXT("user");

	/** 1-10; 0 means the server's default (5). */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "NPC Memory")
	int32 Importance = 0;

	/** Optional key such as "favorite_animal": a newer fact in the slot replaces the older one. */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "NPC Memory")
	FString Slot;
};

/** One line of a dialogue, in the order said. */
USTRUCT(BlueprintType)
struct NPCMEMORY_API FNpcMemoryTurn
{
	GENERATED_BODY()

	/** What was said. */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "NPC Memory")
	FString Text;

	/** Who said it: "user" (the player) or "heroine". */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "NPC Memory")
	FString Speaker = TEXT("user");

	/** The name the game shows for the speaker, e.g. "민수" (optional). */
	UPROPERTY(EditAnywhere, BlueprintReadWrite, Category = "NPC Memory")
	FString SpeakerName;
};

/** A search result with its scores (each component in [0, 1]). */
USTRUCT(BlueprintType)
struct NPCMEMORY_API FNpcMemoryHit
{
	GENERATED_BODY()

	UPROPERTY(BlueprintReadOnly, Category = "NPC Memory") FString MemoryId;
	UPROPERTY(BlueprintReadOnly, Category = "NPC Memory") FString Content;
	UPROPERTY(BlueprintReadOnly, Category = "NPC Memory") int32 Importance = 0;
	UPROPERTY(BlueprintReadOnly, Category = "NPC Memory") float FinalScore = 0.f;
	UPROPERTY(BlueprintReadOnly, Category = "NPC Memory") float Relevance = 0.f;
	UPROPERTY(BlueprintReadOnly, Category = "NPC Memory") float Keyword = 0.f;
};

/** The outcome of a call; on INVALID_ARGUMENT, FieldViolations names each bad field. */
USTRUCT(BlueprintType)
struct NPCMEMORY_API FNpcMemoryStatus
{
	GENERATED_BODY()

	UPROPERTY(BlueprintReadOnly, Category = "NPC Memory") bool bOk = true;
	/** The gRPC status code (3 invalid argument, 5 not found, 14 unavailable, 4 deadline exceeded). */
	UPROPERTY(BlueprintReadOnly, Category = "NPC Memory") int32 Code = 0;
	UPROPERTY(BlueprintReadOnly, Category = "NPC Memory") FString Message;
	UPROPERTY(BlueprintReadOnly, Category = "NPC Memory") TMap<FString, FString> FieldViolations;
	/** The server's id for the call (its x-request-id trailer), which the server's log lines carry. */
	UPROPERTY(BlueprintReadOnly, Category = "NPC Memory") FString RequestId;
};

/** The heroine's context block: what she remembers that matters now, ready for her system prompt. */
USTRUCT(BlueprintType)
struct NPCMEMORY_API FNpcMemoryContext
{
	GENERATED_BODY()

	/** The whole block (section titles and one line per memory). */
	UPROPERTY(BlueprintReadOnly, Category = "NPC Memory") FString Text;
	UPROPERTY(BlueprintReadOnly, Category = "NPC Memory") int32 Tokens = 0;
	UPROPERTY(BlueprintReadOnly, Category = "NPC Memory") int32 TokenBudget = 0;
	/** Memories that belonged in the block but did not fit the budget. */
	UPROPERTY(BlueprintReadOnly, Category = "NPC Memory") int32 LeftOut = 0;
};

DECLARE_DYNAMIC_DELEGATE_TwoParams(FOnNpcMemoryStored, const TArray<FString>&, MemoryIds, const FNpcMemoryStatus&, Status);
DECLARE_DYNAMIC_DELEGATE_TwoParams(FOnNpcMemorySearched, const TArray<FNpcMemoryHit>&, Hits, const FNpcMemoryStatus&, Status);
DECLARE_DYNAMIC_DELEGATE_TwoParams(FOnNpcMemoryContext, const FNpcMemoryContext&, Context, const FNpcMemoryStatus&, Status);
DECLARE_DYNAMIC_DELEGATE_TwoParams(FOnNpcMemorySaved, int64, TimelineId, const FNpcMemoryStatus&, Status);

/** Stores and searches NPC memories on an npc-memory server. Create one and keep it (e.g. on the GameInstance). */
UCLASS(BlueprintType)
class NPCMEMORY_API UNpcMemoryClient : public UObject
{
	GENERATED_BODY()

public:
	/** A client for "host:port" (plaintext HTTP/2). */
	UFUNCTION(BlueprintCallable, Category = "NPC Memory", meta = (DefaultToSelf = "Outer"))
	static UNpcMemoryClient* CreateNpcMemoryClient(UObject* Outer, const FString& Target, float TimeoutSeconds = 5.f);

	/** A client for "host:port" over TLS (RootCaPem empty: the system's roots) sending ApiKey on every call. */
	UFUNCTION(BlueprintCallable, Category = "NPC Memory", meta = (DefaultToSelf = "Outer"))
	static UNpcMemoryClient* CreateSecureNpcMemoryClient(UObject* Outer, const FString& Target, const FString& ApiKey,
		const FString& RootCaPem, float TimeoutSeconds = 5.f);

	/** Stores facts for a player with a heroine in one transaction; OnDone gets one id per fact. */
	UFUNCTION(BlueprintCallable, Category = "NPC Memory")
	void StoreMemories(const FString& UserId, const FString& HeroineId, const TArray<FNpcMemoryFact>& Facts,
		FOnNpcMemoryStored OnDone);

	/** Stores a dialogue's turns (each embedded with its context, linked in order) in one transaction; a streaming
	 * game sends FirstPosition = the turns it sent before. bExtract also queues the dialogue's extraction job.
	 * OnDone gets one id per turn (a turn resent at its place: the stored one). */
	UFUNCTION(BlueprintCallable, Category = "NPC Memory")
	void StoreDialogue(const FString& UserId, const FString& HeroineId, const FString& DialogueId,
		const TArray<FNpcMemoryTurn>& Turns, int32 FirstPosition, bool bExtract, FOnNpcMemoryStored OnDone);

	/** The heroine's memories that matter for Query, best first. Limit 0 means 10. */
	UFUNCTION(BlueprintCallable, Category = "NPC Memory")
	void SearchMemories(const FString& UserId, const FString& HeroineId, const FString& Query, int32 Limit,
		FOnNpcMemorySearched OnDone);

	/** The heroine's context block for what the player just said (Utterance may be empty), within TokenBudget
	 * tokens (0: the server's default). Language "ko" or "en" for the section titles. */
	UFUNCTION(BlueprintCallable, Category = "NPC Memory")
	void BuildContext(const FString& UserId, const FString& HeroineId, const FString& Utterance, int32 TokenBudget,
		const FString& Language, FOnNpcMemoryContext OnDone);

	/** Marks the player's memory (every heroine) in save slot SaveId; OnDone gets the timeline saved. */
	UFUNCTION(BlueprintCallable, Category = "NPC Memory")
	void CreateSavePoint(const FString& UserId, const FString& SaveId, FOnNpcMemorySaved OnDone);

	/** The player's memory as it was at save SaveId from now on; OnDone gets the new live timeline. */
	UFUNCTION(BlueprintCallable, Category = "NPC Memory")
	void LoadSavePoint(const FString& UserId, const FString& SaveId, FOnNpcMemorySaved OnDone);

private:
	TSharedPtr<npc_memory_client::MemoryClient, ESPMode::ThreadSafe> Core;
};
