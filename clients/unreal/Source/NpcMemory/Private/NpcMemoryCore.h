// npc-memory: a small engine-neutral C++ client over the generated gRPC stub.
//
// Plain C++17 and std:: types only, so the same file is compiled by the Unreal plugin (wrapped by
// UNpcMemoryClient) and by clients/cpp (CMake, Debian's libgrpc++), whose test suite runs it
// against a live server. Blocking calls: in a game, call them off the game thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace npc_memory_client {

// One fact to store. Empty/zero fields take the server's defaults.
struct Fact {
  std::string content;
  // "user" (the player), "heroine" or "world": what the fact is about.
  std::string subject = "user";
  // "user" or "heroine": who said it.
  std::string speaker = "user";
  int importance = 0;  // 1-10; 0 means 5
  std::string slot;    // e.g. "favorite_animal": a newer fact in the slot supersedes the older
};

// One line of a dialogue, in the order said.
struct Turn {
  std::string text;
  std::string speaker = "user";  // "user" (the player) or "heroine"
  std::string speaker_name;      // the name the game shows, e.g. "민수" (optional)
  std::int64_t said_at_unix_ms = 0;  // when it was said; 0 means the server's clock
};

// Optional parts of a StoreDialogue call.
struct DialogueOptions {
  int first_position = 0;  // where in the dialogue the first turn goes (a streaming game: turns sent before)
  bool extract = false;    // also queue the dialogue's extraction job (needs extraction on the server)
};

// What happened to one stored fact.
struct Stored {
  std::string memory_id;
  std::string outcome;  // "created", "superseded", "duplicate" or "historical"
};

// One search hit with its scores (each component in [0, 1]).
struct Hit {
  std::string memory_id;
  std::string content;
  std::string subject_id;
  int importance = 0;
  double final_score = 0, recency = 0, importance_score = 0, relevance = 0, keyword = 0;
  // Set for a memory reached through links (SearchOptions::hops): the memory it was linked from, and how far.
  std::string via_memory_id;
  int hops = 0;
};

// Optional parts of a search.
struct SearchOptions {
  int limit = 0;        // 0 means 10
  int hops = 0;         // 0, 1 or 2: also return memories linked to the ranked results
  bool deepen = false;  // gists first, then knowledge, then sources while too few results are relevant
};

// One memory an Expand call linked.
struct Found {
  std::string memory_id;
  std::string content;
  int depth = 0;
  std::string via;  // the shared keyword, or the memory it was found through
};

// What one Expand call did.
struct Expansion {
  std::string memory_id;  // the memory expanded from
  int depth = 0;          // the depth this call reached
  int total_linked = 0;   // memories linked from it by expansion in all
  std::vector<Found> found;
};

// Optional parts of a BuildContext call.
struct ContextOptions {
  int token_budget = 0;         // 0 means the server's default (400)
  bool include_shared = false;  // also the player's memories other heroines stored as shared
  std::string language;         // "ko" (default) or "en": the section titles' language
};

// One section of the heroine's context block.
struct ContextSection {
  std::string kind;  // "about_player", "about_heroine", "opinions", "relevant" or "recent"
  std::string text;  // the section rendered: its title line and one line per memory
  int tokens = 0;
  std::vector<std::string> memory_ids;
};

// The heroine's context block, ready for a system prompt, within the token budget.
struct ContextBlock {
  std::string text;
  int tokens = 0;
  int token_budget = 0;
  int left_out = 0;  // memories that belonged in the block but did not fit the budget
  std::string token_count_method;
  std::vector<ContextSection> sections;
};

// The outcome of a call: ok, or a gRPC status with the bad fields of an INVALID_ARGUMENT.
struct CallStatus {
  bool ok = true;
  int code = 0;  // grpc::StatusCode
  std::string message;
  std::vector<std::pair<std::string, std::string>> violations;  // (field path, description)
  std::string request_id;  // the server's id for the call (x-request-id trailer): its log lines carry it
};

// How to reach a server that uses TLS and API keys. All empty: plaintext, no key.
struct ConnectOptions {
  std::string root_ca_pem;      // PEM CA bundle to trust; non-empty turns TLS on (or set use_tls)
  std::string client_cert_pem;  // PEM client certificate, for servers that require mutual TLS
  std::string client_key_pem;   // its PEM private key
  std::string api_key;          // sent as "authorization: Bearer <key>" on every call
  bool use_tls = false;         // TLS with the system's trusted roots when root_ca_pem is empty
};

class MemoryClient {
 public:
  // target: "host:port" of the npc-memory server.
  explicit MemoryClient(const std::string& target,
                        std::chrono::milliseconds timeout = std::chrono::milliseconds(5000),
                        const ConnectOptions& options = ConnectOptions());
  ~MemoryClient();
  MemoryClient(const MemoryClient&) = delete;
  MemoryClient& operator=(const MemoryClient&) = delete;

  // Stores facts for one player with one heroine, in one transaction. request_id makes it idempotent.
  CallStatus Store(const std::string& user_id, const std::string& heroine_id,
                   const std::vector<Fact>& facts, std::vector<Stored>* out,
                   const std::string& request_id = "");

  // Stores a dialogue's turns (each a source memory embedded with its context, linked to the turn before it), in
  // one transaction; continues the scope's dialogue of this id at options.first_position. A turn resent at its
  // place comes back "duplicate" with the stored id. job_id (optional) receives the extraction job's id.
  CallStatus StoreDialogue(const std::string& user_id, const std::string& heroine_id, const std::string& dialogue_id,
                           const std::vector<Turn>& turns, const DialogueOptions& options, std::vector<Stored>* out,
                           std::string* job_id = nullptr);

  // The scope's memories ranked for the query, best first. limit 0 means 10.
  CallStatus Search(const std::string& user_id, const std::string& heroine_id,
                    const std::string& query, int limit, std::vector<Hit>* out);

  // The same with hops and deepen; answered_tier (optional) receives the tier a deepen search stopped at
  // ("gist", "knowledge" or "source"; empty without deepen).
  CallStatus Search(const std::string& user_id, const std::string& heroine_id, const std::string& query,
                    const SearchOptions& options, std::vector<Hit>* out, std::string* answered_tier = nullptr);

  // Goes one depth further from memory_id (empty: the scope's last expanded memory), linking what it finds.
  CallStatus Expand(const std::string& user_id, const std::string& heroine_id, const std::string& memory_id,
                    Expansion* out);

  // The block of what the heroine remembers that matters now (profile sections, and the memories relevant
  // to what the player just said), within a token budget: what goes into the heroine's prompt.
  CallStatus BuildContext(const std::string& user_id, const std::string& heroine_id, const std::string& utterance,
                          const ContextOptions& options, ContextBlock* out);

  // Marks the player's memory (every heroine) in a save slot; timeline_id receives the timeline saved.
  CallStatus CreateSavePoint(const std::string& user_id, const std::string& save_id, std::int64_t* timeline_id);

  // From now on the player's memory is as it was at the save; timeline_id receives the new live timeline.
  CallStatus LoadSavePoint(const std::string& user_id, const std::string& save_id, std::int64_t* timeline_id);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace npc_memory_client
