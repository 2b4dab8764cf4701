// npc-memory: the engine-neutral C++ client (see NpcMemoryCore.h).
#include "NpcMemoryCore.h"

#include "NpcMemoryThirdPartyBegin.h"
#include <google/protobuf/unknown_field_set.h>
#include <grpcpp/grpcpp.h>

#include "npc_memory/v1/memory_service.grpc.pb.h"
#include "NpcMemoryThirdPartyEnd.h"

namespace npc_memory_client {
namespace pb = ::npc_memory::v1;

namespace {

pb::Subject ToSubject(const std::string& s) {
  if (s == "heroine") return pb::SUBJECT_HEROINE;
  if (s == "world") return pb::SUBJECT_WORLD;
  return pb::SUBJECT_USER;
}

pb::Speaker ToSpeaker(const std::string& s) {
  return s == "heroine" ? pb::SPEAKER_HEROINE : pb::SPEAKER_USER;
}

std::string SectionName(pb::ContextSectionKind k) {
  switch (k) {
    case pb::CONTEXT_SECTION_KIND_ABOUT_PLAYER: return "about_player";
    case pb::CONTEXT_SECTION_KIND_ABOUT_HEROINE: return "about_heroine";
    case pb::CONTEXT_SECTION_KIND_OPINIONS: return "opinions";
    case pb::CONTEXT_SECTION_KIND_RELEVANT: return "relevant";
    case pb::CONTEXT_SECTION_KIND_RECENT: return "recent";
    default: return "unspecified";
  }
}

std::string OutcomeName(pb::StoreOutcome o) {
  switch (o) {
    case pb::STORE_OUTCOME_CREATED: return "created";
    case pb::STORE_OUTCOME_SUPERSEDED: return "superseded";
    case pb::STORE_OUTCOME_DUPLICATE: return "duplicate";
    case pb::STORE_OUTCOME_HISTORICAL: return "historical";
    default: return "unspecified";
  }
}

// Length-delimited fields `number` of a serialized message, read without its schema. Used for
// google.rpc.Status / Any / BadRequest, whose C++ classes Debian does not ship.
std::vector<std::string> Fields(const std::string& bytes, int number) {
  std::vector<std::string> out;
  google::protobuf::UnknownFieldSet set;
  if (!set.ParseFromString(bytes)) return out;
  for (int i = 0; i < set.field_count(); ++i) {
    const auto& f = set.field(i);
    if (f.number() == number && f.type() == google::protobuf::UnknownField::TYPE_LENGTH_DELIMITED) {
      out.push_back(f.length_delimited());
    }
  }
  return out;
}

std::string First(const std::string& bytes, int number) {
  auto all = Fields(bytes, number);
  return all.empty() ? std::string() : all.front();
}

CallStatus FromStatus(const grpc::Status& s, const grpc::ClientContext& ctx) {
  CallStatus out;
  out.ok = s.ok();
  out.code = static_cast<int>(s.error_code());
  out.message = s.error_message();
  // The server's id for the call, in its trailing metadata however the call ended.
  const auto& trailers = ctx.GetServerTrailingMetadata();
  const auto id = trailers.find("x-request-id");
  if (id != trailers.end()) out.request_id.assign(id->second.data(), id->second.size());
  // google.rpc.Status{3: repeated Any{1: type_url, 2: value}}; BadRequest{1: FieldViolation{1: field, 2: description}}
  for (const auto& any : Fields(s.error_details(), 3)) {
    const std::string type_url = First(any, 1);
    const std::string suffix = "/google.rpc.BadRequest";
    if (type_url.size() < suffix.size() ||
        type_url.compare(type_url.size() - suffix.size(), suffix.size(), suffix) != 0) {
      continue;
    }
    for (const auto& v : Fields(First(any, 2), 1)) {
      out.violations.emplace_back(First(v, 1), First(v, 2));
    }
  }
  return out;
}

// Plaintext unless a CA, a client certificate or use_tls asks for TLS.
std::shared_ptr<grpc::ChannelCredentials> Credentials(const ConnectOptions& o) {
  if (o.root_ca_pem.empty() && o.client_cert_pem.empty() && !o.use_tls) {
    return grpc::InsecureChannelCredentials();
  }
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = o.root_ca_pem;
  ssl.pem_cert_chain = o.client_cert_pem;
  ssl.pem_private_key = o.client_key_pem;
  return grpc::SslCredentials(ssl);
}

}  // namespace

struct MemoryClient::Impl {
  std::unique_ptr<pb::MemoryService::Stub> stub;
  std::chrono::milliseconds timeout;
  std::string api_key;

  // Every call's deadline and, when configured, its API key.
  void Prepare(grpc::ClientContext* ctx) const {
    ctx->set_deadline(std::chrono::system_clock::now() + timeout);
    if (!api_key.empty()) ctx->AddMetadata("authorization", "Bearer " + api_key);
  }
};

MemoryClient::MemoryClient(const std::string& target, std::chrono::milliseconds timeout,
                           const ConnectOptions& options)
    : impl_(new Impl{pb::MemoryService::NewStub(grpc::CreateChannel(target, Credentials(options))),
                     timeout, options.api_key}) {}

MemoryClient::~MemoryClient() = default;

CallStatus MemoryClient::Store(const std::string& user_id, const std::string& heroine_id,
                               const std::vector<Fact>& facts, std::vector<Stored>* out,
                               const std::string& request_id) {
  pb::StoreMemoriesRequest req;
  req.mutable_scope()->set_user_id(user_id);
  req.mutable_scope()->set_heroine_id(heroine_id);
  req.set_request_id(request_id);
  for (const auto& f : facts) {
    auto* m = req.add_memories();
    m->set_content(f.content);
    m->set_subject(ToSubject(f.subject));
    m->set_speaker(ToSpeaker(f.speaker));
    m->set_importance(f.importance);
    m->set_slot(f.slot);
  }
  pb::StoreMemoriesResponse resp;
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx);
  CallStatus status = FromStatus(impl_->stub->StoreMemories(&ctx, req, &resp), ctx);
  if (status.ok && out != nullptr) {
    for (const auto& r : resp.results()) out->push_back({r.memory_id(), OutcomeName(r.outcome())});
  }
  return status;
}

CallStatus MemoryClient::StoreDialogue(const std::string& user_id, const std::string& heroine_id,
                                       const std::string& dialogue_id, const std::vector<Turn>& turns,
                                       const DialogueOptions& options, std::vector<Stored>* out,
                                       std::string* job_id) {
  pb::StoreDialogueRequest req;
  req.mutable_scope()->set_user_id(user_id);
  req.mutable_scope()->set_heroine_id(heroine_id);
  req.mutable_dialogue()->set_dialogue_id(dialogue_id);
  req.set_first_position(options.first_position);
  req.set_extract(options.extract);
  for (const auto& t : turns) {
    auto* turn = req.mutable_dialogue()->add_turns();
    turn->set_text(t.text);
    turn->set_speaker(ToSpeaker(t.speaker));
    turn->set_speaker_name(t.speaker_name);
    if (t.said_at_unix_ms != 0) {
      turn->mutable_said_at()->set_seconds(t.said_at_unix_ms / 1000);
      turn->mutable_said_at()->set_nanos(static_cast<int>(t.said_at_unix_ms % 1000) * 1000000);
    }
  }
  pb::StoreDialogueResponse resp;
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx);
  CallStatus status = FromStatus(impl_->stub->StoreDialogue(&ctx, req, &resp), ctx);
  if (status.ok && out != nullptr) {
    for (const auto& r : resp.turns()) out->push_back({r.memory_id(), OutcomeName(r.outcome())});
  }
  if (status.ok && job_id != nullptr) *job_id = resp.has_job() ? resp.job().job_id() : std::string();
  return status;
}

CallStatus MemoryClient::Search(const std::string& user_id, const std::string& heroine_id,
                                const std::string& query, int limit, std::vector<Hit>* out) {
  SearchOptions options;
  options.limit = limit;
  return Search(user_id, heroine_id, query, options, out);
}

CallStatus MemoryClient::Search(const std::string& user_id, const std::string& heroine_id, const std::string& query,
                                const SearchOptions& options, std::vector<Hit>* out, std::string* answered_tier) {
  pb::SearchMemoriesRequest req;
  req.mutable_scope()->set_user_id(user_id);
  req.mutable_scope()->set_heroine_id(heroine_id);
  req.set_query(query);
  req.set_limit(options.limit);
  req.set_hops(options.hops);
  req.set_deepen(options.deepen);
  pb::SearchMemoriesResponse resp;
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx);
  CallStatus status = FromStatus(impl_->stub->SearchMemories(&ctx, req, &resp), ctx);
  if (status.ok && out != nullptr) {
    for (const auto& r : resp.results()) {
      const auto& m = r.memory();
      const auto& s = r.scores();
      out->push_back({m.memory_id(), m.content(), m.subject_id(), m.importance(), s.final(),
                      s.recency(), s.importance(), s.relevance(), s.keyword(), r.via_memory_id(), r.hops()});
    }
  }
  if (status.ok && answered_tier != nullptr) {
    switch (resp.answered_tier()) {
      case pb::TIER_GIST: *answered_tier = "gist"; break;
      case pb::TIER_KNOWLEDGE: *answered_tier = "knowledge"; break;
      case pb::TIER_SOURCE: *answered_tier = "source"; break;
      default: answered_tier->clear();
    }
  }
  return status;
}

CallStatus MemoryClient::Expand(const std::string& user_id, const std::string& heroine_id,
                                const std::string& memory_id, Expansion* out) {
  pb::ExpandMemoryRequest req;
  req.mutable_scope()->set_user_id(user_id);
  req.mutable_scope()->set_heroine_id(heroine_id);
  req.set_memory_id(memory_id);
  pb::ExpandMemoryResponse resp;
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx);
  CallStatus status = FromStatus(impl_->stub->ExpandMemory(&ctx, req, &resp), ctx);
  if (status.ok && out != nullptr) {
    out->memory_id = resp.memory_id();
    out->depth = resp.depth();
    out->total_linked = resp.total_linked();
    for (int i = 0; i < resp.found_size() && i < resp.memories_size(); ++i) {
      const auto& link = resp.found(i);
      out->found.push_back({link.to_memory_id(), resp.memories(i).content(), link.depth(), link.via()});
    }
  }
  return status;
}

CallStatus MemoryClient::BuildContext(const std::string& user_id, const std::string& heroine_id,
                                      const std::string& utterance, const ContextOptions& options,
                                      ContextBlock* out) {
  pb::BuildContextRequest req;
  req.mutable_scope()->set_user_id(user_id);
  req.mutable_scope()->set_heroine_id(heroine_id);
  req.set_utterance(utterance);
  req.set_token_budget(options.token_budget);
  req.set_include_shared(options.include_shared);
  req.set_language(options.language);
  pb::BuildContextResponse resp;
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx);
  CallStatus status = FromStatus(impl_->stub->BuildContext(&ctx, req, &resp), ctx);
  if (status.ok && out != nullptr) {
    out->text = resp.text();
    out->tokens = resp.tokens();
    out->token_budget = resp.token_budget();
    out->left_out = resp.left_out_size();
    out->token_count_method = resp.token_count_method();
    out->sections.clear();
    for (const auto& s : resp.sections()) {
      ContextSection section{SectionName(s.kind()), s.text(), s.tokens(), {}};
      for (const auto& item : s.items()) section.memory_ids.push_back(item.memory().memory_id());
      out->sections.push_back(section);
    }
  }
  return status;
}

CallStatus MemoryClient::CreateSavePoint(const std::string& user_id, const std::string& save_id,
                                         std::int64_t* timeline_id) {
  pb::CreateSavePointRequest req;
  req.set_user_id(user_id);
  req.set_save_id(save_id);
  pb::CreateSavePointResponse resp;
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx);
  CallStatus status = FromStatus(impl_->stub->CreateSavePoint(&ctx, req, &resp), ctx);
  if (status.ok && timeline_id != nullptr) *timeline_id = resp.save_point().timeline_id();
  return status;
}

CallStatus MemoryClient::LoadSavePoint(const std::string& user_id, const std::string& save_id,
                                       std::int64_t* timeline_id) {
  pb::LoadSavePointRequest req;
  req.set_user_id(user_id);
  req.set_save_id(save_id);
  pb::LoadSavePointResponse resp;
  grpc::ClientContext ctx;
  impl_->Prepare(&ctx);
  CallStatus status = FromStatus(impl_->stub->LoadSavePoint(&ctx, req, &resp), ctx);
  if (status.ok && timeline_id != nullptr) *timeline_id = resp.timeline().timeline_id();
  return status;
}

}  // namespace npc_memory_client
