// npc-memory: a thin Unity-friendly wrapper over the generated MemoryService client
// (Runtime/Generated, from proto/npc_memory/v1 by clients/generate), on Grpc.Net.Client with
// YetAnotherHttpHandler for HTTP/2. Hand-written; not compiled in the npc-memory repository (no
// .NET SDK or NuGet there): see README.md.
using System;
using System.Collections.Generic;
using System.Threading;
using System.Threading.Tasks;
using Cysharp.Net.Http;
using Grpc.Core;
using Grpc.Net.Client;
using NpcMemory.V1;

namespace NpcMemory
{
    /// <summary>Stores and searches one player's memories with each heroine. Thread-safe; keep one per server.</summary>
    public sealed class NpcMemoryClient : IDisposable
    {
        readonly GrpcChannel _channel;
        readonly TimeSpan _timeout;
        readonly int _attempts;

        /// <summary>The generated client, for the RPCs this wrapper does not cover (Get, List, History, ...).</summary>
        public MemoryService.MemoryServiceClient Raw { get; }

        /// <param name="address">"http://host:50051" (plaintext HTTP/2) or "https://host".</param>
        /// <param name="timeout">Deadline of each call, retries included. Default 5 s.</param>
        /// <param name="attempts">Tries of an idempotent call (Search, keyed Store) on UNAVAILABLE.</param>
        public NpcMemoryClient(string address, TimeSpan? timeout = null, int attempts = 3)
        {
            var handler = new YetAnotherHttpHandler { Http2Only = address.StartsWith("http://", StringComparison.OrdinalIgnoreCase) };
            _channel = GrpcChannel.ForAddress(address, new GrpcChannelOptions { HttpHandler = handler, DisposeHttpClient = true });
            Raw = new MemoryService.MemoryServiceClient(_channel);
            _timeout = timeout ?? TimeSpan.FromSeconds(5);
            _attempts = Math.Max(1, attempts);
        }

        /// <summary>One fact to store. Importance 1-10 (0 = 5); a slot makes a newer fact replace the older one.</summary>
        public static MemoryInput Fact(string content, int importance = 0, Subject subject = Subject.User,
            Speaker speaker = Speaker.User, string slot = "", ContentType contentType = ContentType.Fact)
        {
            return new MemoryInput
            {
                Content = content, Importance = importance, Subject = subject, Speaker = speaker, Slot = slot ?? "",
                ContentType = contentType,
            };
        }

        /// <summary>Stores facts in one transaction. With a requestId a repeat writes nothing and is retried safely.</summary>
        public async Task<IReadOnlyList<StoreResult>> StoreAsync(string userId, string heroineId,
            IEnumerable<MemoryInput> facts, string requestId = "", CancellationToken cancellationToken = default)
        {
            var request = new StoreMemoriesRequest { Scope = MakeScope(userId, heroineId), RequestId = requestId ?? "" };
            request.Memories.Add(facts);
            var response = await Call(
                deadline => Raw.StoreMemoriesAsync(request, deadline: deadline, cancellationToken: cancellationToken).ResponseAsync,
                idempotent: !string.IsNullOrEmpty(requestId), cancellationToken).ConfigureAwait(false);
            return response.Results;
        }

        /// <summary>One line of a dialogue. speakerName: the name the game shows ("민수"); saidAt: when it was said.</summary>
        public static DialogueTurn Turn(string text, Speaker speaker = Speaker.User, string speakerName = "",
            DateTime? saidAt = null)
        {
            var turn = new DialogueTurn { Text = text, Speaker = speaker, SpeakerName = speakerName ?? "" };
            if (saidAt.HasValue)
            {
                turn.SaidAt = Google.Protobuf.WellKnownTypes.Timestamp.FromDateTime(saidAt.Value.ToUniversalTime());
            }
            return turn;
        }

        /// <summary>Stores a dialogue's turns in one transaction: each a source memory embedded with its context,
        /// linked to the turn before it. A game streaming lines sends firstPosition = the turns it sent before; a
        /// turn resent at its place comes back Duplicate with the stored id, so the call is retried safely.
        /// extract also queues the dialogue's extraction job (Job in the response).</summary>
        public async Task<StoreDialogueResponse> StoreDialogueAsync(string userId, string heroineId, string dialogueId,
            IEnumerable<DialogueTurn> turns, int firstPosition = 0, bool extract = false,
            CancellationToken cancellationToken = default)
        {
            var request = new StoreDialogueRequest
            {
                Scope = MakeScope(userId, heroineId), Dialogue = new Dialogue { DialogueId = dialogueId },
                FirstPosition = firstPosition, Extract = extract,
            };
            request.Dialogue.Turns.Add(turns);
            return await Call(
                deadline => Raw.StoreDialogueAsync(request, deadline: deadline, cancellationToken: cancellationToken).ResponseAsync,
                idempotent: true, cancellationToken).ConfigureAwait(false);
        }

        /// <summary>The heroine's memories that matter for the query, best first, each with its scores.</summary>
        /// <param name="hops">1 or 2: also the memories linked to the results (marked by Hops and ViaMemoryId).</param>
        /// <param name="deepen">Search gists first, then knowledge, then sources while too few are relevant.</param>
        public async Task<IReadOnlyList<ScoredMemory>> SearchAsync(string userId, string heroineId, string query,
            int limit = 5, int hops = 0, bool deepen = false, CancellationToken cancellationToken = default)
        {
            var request = new SearchMemoriesRequest
            {
                Scope = MakeScope(userId, heroineId), Query = query, Limit = limit, Hops = hops, Deepen = deepen,
            };
            var response = await Call(
                deadline => Raw.SearchMemoriesAsync(request, deadline: deadline, cancellationToken: cancellationToken).ResponseAsync,
                idempotent: true, cancellationToken).ConfigureAwait(false);
            return response.Results;
        }

        /// <summary>The heroine's context block for what the player just said, within a token budget: what she
        /// remembers that matters now, ready for her system prompt (Text), with its sections and what was left out.</summary>
        /// <param name="tokenBudget">0 means the server's default (400).</param>
        /// <param name="language">"ko" (default) or "en": the section titles' language.</param>
        public async Task<BuildContextResponse> BuildContextAsync(string userId, string heroineId, string utterance = "",
            int tokenBudget = 0, string language = "", bool includeShared = false,
            CancellationToken cancellationToken = default)
        {
            var request = new BuildContextRequest
            {
                Scope = MakeScope(userId, heroineId), Utterance = utterance ?? "", TokenBudget = tokenBudget,
                Language = language ?? "", IncludeShared = includeShared,
            };
            return await Call(
                deadline => Raw.BuildContextAsync(request, deadline: deadline, cancellationToken: cancellationToken).ResponseAsync,
                idempotent: true, cancellationToken).ConfigureAwait(false);
        }

        /// <summary>Goes one depth further from a memory (empty: the scope's last expanded one), linking what it finds.</summary>
        public async Task<ExpandMemoryResponse> ExpandAsync(string userId, string heroineId, string memoryId = "",
            CancellationToken cancellationToken = default)
        {
            var request = new ExpandMemoryRequest { Scope = MakeScope(userId, heroineId), MemoryId = memoryId ?? "" };
            return await Call(
                deadline => Raw.ExpandMemoryAsync(request, deadline: deadline, cancellationToken: cancellationToken).ResponseAsync,
                idempotent: false, cancellationToken).ConfigureAwait(false);
        }

        /// <summary>Marks the player's memory (every heroine) in a save slot; returns the timeline saved.</summary>
        public async Task<long> CreateSavePointAsync(string userId, string saveId, CancellationToken cancellationToken = default)
        {
            var request = new CreateSavePointRequest { UserId = userId, SaveId = saveId };
            var response = await Call(
                deadline => Raw.CreateSavePointAsync(request, deadline: deadline, cancellationToken: cancellationToken).ResponseAsync,
                idempotent: false, cancellationToken).ConfigureAwait(false);
            return response.SavePoint.TimelineId;
        }

        /// <summary>From now on the player's memory is as it was at the save; returns the new live timeline.</summary>
        public async Task<long> LoadSavePointAsync(string userId, string saveId, CancellationToken cancellationToken = default)
        {
            var request = new LoadSavePointRequest { UserId = userId, SaveId = saveId };
            var response = await Call(
                deadline => Raw.LoadSavePointAsync(request, deadline: deadline, cancellationToken: cancellationToken).ResponseAsync,
                idempotent: false, cancellationToken).ConfigureAwait(false);
            return response.Timeline.TimelineId;
        }

        static Scope MakeScope(string userId, string heroineId) => new Scope { UserId = userId, HeroineId = heroineId };

        async Task<T> Call<T>(Func<DateTime, Task<T>> send, bool idempotent, CancellationToken cancellationToken)
        {
            var deadline = DateTime.UtcNow + _timeout;
            for (var attempt = 1; ; attempt++)
            {
                try
                {
                    return await send(deadline).ConfigureAwait(false);
                }
                catch (RpcException e) when (idempotent && e.StatusCode == StatusCode.Unavailable && attempt < _attempts
                                             && DateTime.UtcNow < deadline)
                {
                    await Task.Delay(TimeSpan.FromMilliseconds(100 << attempt), cancellationToken).ConfigureAwait(false);
                }
                catch (RpcException e)
                {
                    throw new NpcMemoryException(e);
                }
            }
        }

        /// <summary>Closes the channel.</summary>
        public void Dispose() => _channel.Dispose();
    }
}
