// npc_memory_cli: store and search memories on an npc-memory server from the command line.
//
//   npc_memory_cli [--target HOST:PORT] [--timeout SECONDS] store USER HEROINE CONTENT... [--importance N] [--subject S] [--slot S]
//   npc_memory_cli [--target HOST:PORT] [--timeout SECONDS] dialogue USER HEROINE DIALOGUE_ID SPEAKER:TEXT...
//                  [--first-position N] [--extract]   (SPEAKER: user or heroine, optionally user=NAME)
//   npc_memory_cli [--target HOST:PORT] [--timeout SECONDS] search USER HEROINE QUERY [--limit N] [--hops N] [--deepen]
//   npc_memory_cli [--target HOST:PORT] [--timeout SECONDS] expand USER HEROINE [MEMORY_ID]
//   npc_memory_cli [--target HOST:PORT] [--timeout SECONDS] context USER HEROINE [UTTERANCE] [--budget N] [--language ko|en] [--shared]
//   npc_memory_cli [--target HOST:PORT] [--timeout SECONDS] save|load USER SAVE_ID
//
// Connection options (any position): --ca FILE (PEM CA: TLS), --cert FILE --key FILE (client certificate for
// mutual TLS), --tls (TLS with the system roots), --api-key KEY (or NPC_MEMORY_API_KEY in the environment).
//
// store prints "memory_id<TAB>outcome" per fact, dialogue the same per turn (then "job<TAB>job_id" with
// --extract); search prints
// "rank<TAB>final<TAB>relevance<TAB>keyword<TAB>memory_id<TAB>content<TAB>hops<TAB>via_memory_id" per hit, best
// first (hops 0 and an empty via for a ranked result), after a "tier<TAB>TIER" line with --deepen; expand prints
// "expanded<TAB>memory_id<TAB>depth<TAB>total_linked", then "memory_id<TAB>depth<TAB>via<TAB>content" per find;
// context prints "context<TAB>tokens<TAB>budget<TAB>left_out<TAB>method", one
// "section<TAB>kind<TAB>tokens<TAB>memory_id,memory_id,..." per section, then the block's text; save and load
// print "saved|loaded<TAB>timeline_id".
// On failure: "error <code>: <message>", one "violation <field>: <description>" per bad field and
// "request_id <id>" (the server's id for the call, which its log lines carry) on stderr; exit 2 for
// INVALID_ARGUMENT, 1 otherwise.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "NpcMemoryCore.h"

namespace {

int Usage() {
  std::fprintf(stderr,
               "usage: npc_memory_cli [--target HOST:PORT] [--timeout SECONDS] store USER HEROINE CONTENT... "
               "[--importance N] [--subject user|heroine|world] [--slot SLOT]\n"
               "       npc_memory_cli [--target HOST:PORT] dialogue USER HEROINE DIALOGUE_ID SPEAKER[=NAME]:TEXT... "
               "[--first-position N] [--extract]\n"
               "       npc_memory_cli [--target HOST:PORT] search USER HEROINE QUERY [--limit N] [--hops N] [--deepen]\n"
               "       npc_memory_cli [--target HOST:PORT] expand USER HEROINE [MEMORY_ID]\n"
               "       npc_memory_cli [--target HOST:PORT] context USER HEROINE [UTTERANCE] [--budget N] "
               "[--language ko|en] [--shared]\n"
               "       npc_memory_cli [--target HOST:PORT] save|load USER SAVE_ID\n"
               "  connection: [--ca FILE] [--cert FILE --key FILE] [--tls] [--api-key KEY]\n");
  return 64;
}

int Fail(const npc_memory_client::CallStatus& s) {
  std::fprintf(stderr, "error %d: %s\n", s.code, s.message.c_str());
  for (const auto& v : s.violations) {
    std::fprintf(stderr, "violation %s: %s\n", v.first.c_str(), v.second.c_str());
  }
  if (!s.request_id.empty()) std::fprintf(stderr, "request_id %s\n", s.request_id.c_str());
  return s.code == 3 ? 2 : 1;  // 3 = INVALID_ARGUMENT
}

// A whole file, or exits with a message when it cannot be read.
std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::exit(1);
  }
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

int main(int argc, char** argv) {
  std::string target = "localhost:50051";
  std::vector<std::string> positional;
  int importance = 0;
  npc_memory_client::SearchOptions options;
  npc_memory_client::ContextOptions context;
  npc_memory_client::DialogueOptions dialogue;
  double timeout_seconds = 5.0;
  std::string subject = "user", slot;
  npc_memory_client::ConnectOptions connect;
  if (const char* key = std::getenv("NPC_MEMORY_API_KEY")) connect.api_key = key;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--target" && has_value) {
      target = argv[++i];
    } else if (arg == "--timeout" && has_value) {
      timeout_seconds = std::atof(argv[++i]);
    } else if (arg == "--importance" && has_value) {
      importance = std::atoi(argv[++i]);
    } else if (arg == "--limit" && has_value) {
      options.limit = std::atoi(argv[++i]);
    } else if (arg == "--hops" && has_value) {
      options.hops = std::atoi(argv[++i]);
    } else if (arg == "--budget" && has_value) {
      context.token_budget = std::atoi(argv[++i]);
    } else if (arg == "--language" && has_value) {
      context.language = argv[++i];
    } else if (arg == "--shared") {
      context.include_shared = true;
    } else if (arg == "--first-position" && has_value) {
      dialogue.first_position = std::atoi(argv[++i]);
    } else if (arg == "--extract") {
      dialogue.extract = true;
    } else if (arg == "--deepen") {
      options.deepen = true;
    } else if (arg == "--subject" && has_value) {
      subject = argv[++i];
    } else if (arg == "--slot" && has_value) {
      slot = argv[++i];
    } else if (arg == "--ca" && has_value) {
      connect.root_ca_pem = ReadFile(argv[++i]);
    } else if (arg == "--cert" && has_value) {
      connect.client_cert_pem = ReadFile(argv[++i]);
    } else if (arg == "--key" && has_value) {
      connect.client_key_pem = ReadFile(argv[++i]);
    } else if (arg == "--api-key" && has_value) {
      connect.api_key = argv[++i];
    } else if (arg == "--tls") {
      connect.use_tls = true;
    } else {
      positional.push_back(arg);
    }
  }
  if (positional.size() < 3) return Usage();
  const std::string& command = positional[0];
  const std::string& user = positional[1];
  const std::string& heroine = positional[2];
  npc_memory_client::MemoryClient client(
      target, std::chrono::milliseconds(static_cast<long long>(timeout_seconds * 1000)), connect);

  if ((command == "save" || command == "load") && positional.size() == 3) {
    std::int64_t timeline = 0;
    const auto status = command == "save" ? client.CreateSavePoint(user, positional[2], &timeline)
                                          : client.LoadSavePoint(user, positional[2], &timeline);
    if (!status.ok) return Fail(status);
    std::printf("%s\t%lld\n", command == "save" ? "saved" : "loaded", static_cast<long long>(timeline));
    return 0;
  }
  if (command == "context" && positional.size() <= 4) {
    npc_memory_client::ContextBlock block;
    const auto status = client.BuildContext(user, heroine, positional.size() == 4 ? positional[3] : "", context,
                                            &block);
    if (!status.ok) return Fail(status);
    std::printf("context\t%d\t%d\t%d\t%s\n", block.tokens, block.token_budget, block.left_out,
                block.token_count_method.c_str());
    for (const auto& section : block.sections) {
      std::string ids;
      for (const auto& id : section.memory_ids) ids += (ids.empty() ? "" : ",") + id;
      std::printf("section\t%s\t%d\t%s\n", section.kind.c_str(), section.tokens, ids.c_str());
    }
    std::printf("%s\n", block.text.c_str());
    return 0;
  }
  if (command == "expand" && positional.size() <= 4) {
    npc_memory_client::Expansion expansion;
    const auto status = client.Expand(user, heroine, positional.size() == 4 ? positional[3] : "", &expansion);
    if (!status.ok) return Fail(status);
    std::printf("expanded\t%s\t%d\t%d\n", expansion.memory_id.c_str(), expansion.depth, expansion.total_linked);
    for (const auto& f : expansion.found) {
      std::printf("%s\t%d\t%s\t%s\n", f.memory_id.c_str(), f.depth, f.via.c_str(), f.content.c_str());
    }
    return 0;
  }
  if (positional.size() < 4) return Usage();
  if (command == "dialogue" && positional.size() >= 5) {
    std::vector<npc_memory_client::Turn> turns;
    for (size_t i = 4; i < positional.size(); ++i) {
      const std::string& line = positional[i];
      const auto colon = line.find(':');
      if (colon == std::string::npos) return Usage();
      npc_memory_client::Turn t;
      std::string who = line.substr(0, colon);
      const auto equals = who.find('=');
      if (equals != std::string::npos) {
        t.speaker_name = who.substr(equals + 1);
        who = who.substr(0, equals);
      }
      t.speaker = who;
      t.text = line.substr(colon + 1);
      turns.push_back(t);
    }
    std::vector<npc_memory_client::Stored> stored;
    std::string job;
    const auto status = client.StoreDialogue(user, heroine, positional[3], turns, dialogue, &stored, &job);
    if (!status.ok) return Fail(status);
    for (const auto& s : stored) std::printf("%s\t%s\n", s.memory_id.c_str(), s.outcome.c_str());
    if (!job.empty()) std::printf("job\t%s\n", job.c_str());
    return 0;
  }
  if (command == "store") {
    std::vector<npc_memory_client::Fact> facts;
    for (size_t i = 3; i < positional.size(); ++i) {
      npc_memory_client::Fact f;
      f.content = positional[i];
      f.importance = importance;
      f.subject = subject;
      f.slot = slot;
      facts.push_back(f);
    }
    std::vector<npc_memory_client::Stored> stored;
    const auto status = client.Store(user, heroine, facts, &stored);
    if (!status.ok) return Fail(status);
    for (const auto& s : stored) std::printf("%s\t%s\n", s.memory_id.c_str(), s.outcome.c_str());
    return 0;
  }
  if (command == "search" && positional.size() == 4) {
    std::vector<npc_memory_client::Hit> hits;
    std::string tier;
    const auto status = client.Search(user, heroine, positional[3], options, &hits, &tier);
    if (!status.ok) return Fail(status);
    if (options.deepen) std::printf("tier\t%s\n", tier.c_str());
    int rank = 0;
    for (const auto& h : hits) {
      std::printf("%d\t%.6f\t%.6f\t%.6f\t%s\t%s\t%d\t%s\n", ++rank, h.final_score, h.relevance, h.keyword,
                  h.memory_id.c_str(), h.content.c_str(), h.hops, h.via_memory_id.c_str());
    }
    return 0;
  }
  return Usage();
}
