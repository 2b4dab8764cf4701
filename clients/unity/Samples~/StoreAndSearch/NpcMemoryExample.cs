// Attach to any GameObject, set Address to your npc-memory server, press Play: stores two Korean facts
// the player told Letia, then asks what she remembers about cats, and logs the answer.
using System;
using NpcMemory;
using NpcMemory.V1;
using UnityEngine;

public sealed class NpcMemoryExample : MonoBehaviour
{
    [SerializeField] string address = "http://localhost:50051";
    [SerializeField] string userId = "player-1";
    [SerializeField] string heroineId = "letia";

    NpcMemoryClient _memory;

    async void Start()
    {
        _memory = new NpcMemoryClient(address);
        try
        {
            var stored = await _memory.StoreAsync(userId, heroineId, new[]
            {
                NpcMemoryClient.Fact("고양이를 좋아함", importance: 7, slot: "favorite_animal"),
                NpcMemoryClient.Fact("매운 음식을 못 먹음"),
            }, requestId: Guid.NewGuid().ToString());
            foreach (var r in stored) Debug.Log($"stored {r.MemoryId}: {r.Outcome}");

            var hits = await _memory.SearchAsync(userId, heroineId, "고양이 좋아해?", limit: 3);
            foreach (var hit in hits)
                Debug.Log($"{hit.Scores.Final:F3}  {hit.Memory.Content}  (relevance {hit.Scores.Relevance:F2}, keyword {hit.Scores.Keyword:F2})");
        }
        catch (NpcMemoryException e)
        {
            Debug.LogError(e.Message);  // e.FieldViolations names each bad field of an invalid request
            foreach (var v in e.FieldViolations) Debug.LogError($"{v.Key}: {v.Value}");
        }
    }

    void OnDestroy() => _memory?.Dispose();
}
