// NPC Memory: UNpcMemoryClient runs NpcMemoryCore's blocking calls on a worker thread and reports
// on the game thread. NpcMemoryCore itself is plain C++ tested against a live server by clients/cpp.
#include "NpcMemoryClient.h"

#include "Async/Async.h"
#include "NpcMemoryCore.h"

namespace
{
std::string Utf8(const FString& Text)
{
	FTCHARToUTF8 Converted(*Text);
	return std::string(Converted.Get(), Converted.Length());
}

FString FromUtf8(const std::string& Text)
{
	FUTF8ToTCHAR Converted(Text.data(), static_cast<int32>(Text.size()));
	return FString(Converted.Length(), Converted.Get());
}

FNpcMemoryStatus ToStatus(const npc_memory_client::CallStatus& In)
{
	FNpcMemoryStatus Out;
	Out.bOk = In.ok;
	Out.Code = In.code;
	Out.Message = FromUtf8(In.message);
	for (const auto& Violation : In.violations)
	{
		Out.FieldViolations.Add(FromUtf8(Violation.first), FromUtf8(Violation.second));
	}
	Out.RequestId = FromUtf8(In.request_id);
	return Out;
}

// CreateSavePoint and LoadSavePoint differ only in the core call: both answer with a timeline id.
using FSavePointCall = npc_memory_client::CallStatus (npc_memory_client::MemoryClient::*)(
	const std::string&, const std::string&, std::int64_t*);

void CallSavePoint(const TSharedPtr<npc_memory_client::MemoryClient, ESPMode::ThreadSafe>& Core,
	FSavePointCall Call, const FString& UserId, const FString& SaveId, FOnNpcMemorySaved OnDone)
{
	auto Core_ = Core;
	const std::string User = Utf8(UserId), Save = Utf8(SaveId);
	Async(EAsyncExecution::ThreadPool, [Core_, Call, User, Save, OnDone]()
	{
		std::int64_t Timeline = 0;
		const FNpcMemoryStatus Status = ToStatus(((*Core_).*Call)(User, Save, &Timeline));
		const int64 Id = static_cast<int64>(Timeline);
		AsyncTask(ENamedThreads::GameThread, [OnDone, Id, Status]() { OnDone.ExecuteIfBound(Id, Status); });
	});
}
}  // namespace

UNpcMemoryClient* UNpcMemoryClient::CreateNpcMemoryClient(UObject* Outer, const FString& Target, float TimeoutSeconds)
{
	UNpcMemoryClient* Client = NewObject<UNpcMemoryClient>(Outer ? Outer : GetTransientPackage());
	Client->Core = MakeShared<npc_memory_client::MemoryClient, ESPMode::ThreadSafe>(
		Utf8(Target), std::chrono::milliseconds(static_cast<int64>(TimeoutSeconds * 1000)));
	return Client;
}

UNpcMemoryClient* UNpcMemoryClient::CreateSecureNpcMemoryClient(UObject* Outer, const FString& Target,
	const FString& ApiKey, const FString& RootCaPem, float TimeoutSeconds)
{
	UNpcMemoryClient* Client = NewObject<UNpcMemoryClient>(Outer ? Outer : GetTransientPackage());
	npc_memory_client::ConnectOptions Options;
	Options.use_tls = true;
	Options.root_ca_pem = Utf8(RootCaPem);
	Options.api_key = Utf8(ApiKey);
	Client->Core = MakeShared<npc_memory_client::MemoryClient, ESPMode::ThreadSafe>(
		Utf8(Target), std::chrono::milliseconds(static_cast<int64>(TimeoutSeconds * 1000)), Options);
	return Client;
}

void UNpcMemoryClient::StoreMemories(const FString& UserId, const FString& HeroineId,
	const TArray<FNpcMemoryFact>& Facts, FOnNpcMemoryStored OnDone)
{
	std::vector<npc_memory_client::Fact> In;
	for (const FNpcMemoryFact& Fact : Facts)
	{
		npc_memory_client::Fact F;
		F.content = Utf8(Fact.Content);
		F.subject = Utf8(Fact.Subject);
		F.importance = Fact.Importance;
		F.slot = Utf8(Fact.Slot);
		In.push_back(F);
	}
	auto Core_ = Core;
	const std::string User = Utf8(UserId), Heroine = Utf8(HeroineId);
	Async(EAsyncExecution::ThreadPool, [Core_, User, Heroine, In, OnDone]()
	{
		std::vector<npc_memory_client::Stored> Stored;
		const FNpcMemoryStatus Status = ToStatus(Core_->Store(User, Heroine, In, &Stored));
		TArray<FString> Ids;
		for (const auto& S : Stored) Ids.Add(FromUtf8(S.memory_id));
		AsyncTask(ENamedThreads::GameThread, [OnDone, Ids, Status]() { OnDone.ExecuteIfBound(Ids, Status); });
	});
}

void UNpcMemoryClient::StoreDialogue(const FString& UserId, const FString& HeroineId, const FString& DialogueId,
	const TArray<FNpcMemoryTurn>& Turns, int32 FirstPosition, bool bExtract, FOnNpcMemoryStored OnDone)
{
	std::vector<npc_memory_client::Turn> In;
	for (const FNpcMemoryTurn& Turn : Turns)
	{
		npc_memory_client::Turn T;
		T.text = Utf8(Turn.Text);
		T.speaker = Utf8(Turn.Speaker);
		T.speaker_name = Utf8(Turn.SpeakerName);
		In.push_back(T);
	}
	npc_memory_client::DialogueOptions Options;
	Options.first_position = FirstPosition;
	Options.extract = bExtract;
	auto Core_ = Core;
	const std::string User = Utf8(UserId), Heroine = Utf8(HeroineId), Dialogue = Utf8(DialogueId);
	Async(EAsyncExecution::ThreadPool, [Core_, User, Heroine, Dialogue, In, Options, OnDone]()
	{
		std::vector<npc_memory_client::Stored> Stored;
		const FNpcMemoryStatus Status = ToStatus(Core_->StoreDialogue(User, Heroine, Dialogue, In, Options, &Stored));
		TArray<FString> Ids;
		for (const auto& S : Stored) Ids.Add(FromUtf8(S.memory_id));
		AsyncTask(ENamedThreads::GameThread, [OnDone, Ids, Status]() { OnDone.ExecuteIfBound(Ids, Status); });
	});
}

void UNpcMemoryClient::SearchMemories(const FString& UserId, const FString& HeroineId, const FString& Query,
	int32 Limit, FOnNpcMemorySearched OnDone)
{
	auto Core_ = Core;
	const std::string User = Utf8(UserId), Heroine = Utf8(HeroineId), Text = Utf8(Query);
	Async(EAsyncExecution::ThreadPool, [Core_, User, Heroine, Text, Limit, OnDone]()
	{
		std::vector<npc_memory_client::Hit> Found;
		const FNpcMemoryStatus Status = ToStatus(Core_->Search(User, Heroine, Text, Limit, &Found));
		TArray<FNpcMemoryHit> Hits;
		for (const auto& H : Found)
		{
			FNpcMemoryHit Hit;
			Hit.MemoryId = FromUtf8(H.memory_id);
			Hit.Content = FromUtf8(H.content);
			Hit.Importance = H.importance;
			Hit.FinalScore = static_cast<float>(H.final_score);
			Hit.Relevance = static_cast<float>(H.relevance);
			Hit.Keyword = static_cast<float>(H.keyword);
			Hits.Add(Hit);
		}
		AsyncTask(ENamedThreads::GameThread, [OnDone, Hits, Status]() { OnDone.ExecuteIfBound(Hits, Status); });
	});
}

void UNpcMemoryClient::BuildContext(const FString& UserId, const FString& HeroineId, const FString& Utterance,
	int32 TokenBudget, const FString& Language, FOnNpcMemoryContext OnDone)
{
	auto Core_ = Core;
	const std::string User = Utf8(UserId), Heroine = Utf8(HeroineId), Text = Utf8(Utterance);
	npc_memory_client::ContextOptions Options;
	Options.token_budget = TokenBudget;
	Options.language = Utf8(Language);
	Async(EAsyncExecution::ThreadPool, [Core_, User, Heroine, Text, Options, OnDone]()
	{
		npc_memory_client::ContextBlock Block;
		const FNpcMemoryStatus Status = ToStatus(Core_->BuildContext(User, Heroine, Text, Options, &Block));
		FNpcMemoryContext Context;
		Context.Text = FromUtf8(Block.text);
		Context.Tokens = Block.tokens;
		Context.TokenBudget = Block.token_budget;
		Context.LeftOut = Block.left_out;
		AsyncTask(ENamedThreads::GameThread, [OnDone, Context, Status]() { OnDone.ExecuteIfBound(Context, Status); });
	});
}

void UNpcMemoryClient::CreateSavePoint(const FString& UserId, const FString& SaveId, FOnNpcMemorySaved OnDone)
{
	CallSavePoint(Core, &npc_memory_client::MemoryClient::CreateSavePoint, UserId, SaveId, OnDone);
}

void UNpcMemoryClient::LoadSavePoint(const FString& UserId, const FString& SaveId, FOnNpcMemorySaved OnDone)
{
	CallSavePoint(Core, &npc_memory_client::MemoryClient::LoadSavePoint, UserId, SaveId, OnDone);
}
