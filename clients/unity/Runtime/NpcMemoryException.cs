// npc-memory: a failed call, with the bad fields of an INVALID_ARGUMENT read from the
// google.rpc.Status trailer (grpc-status-details-bin). Hand-written; see README.md.
using System;
using System.Collections.Generic;
using System.Linq;
using Google.Protobuf;
using Grpc.Core;

namespace NpcMemory
{
    /// <summary>A call to npc-memory failed. <see cref="FieldViolations"/> names each bad request field.</summary>
    public sealed class NpcMemoryException : Exception
    {
        /// <summary>The gRPC status code (InvalidArgument, NotFound, Unavailable, DeadlineExceeded, ...).</summary>
        public StatusCode Code { get; }

        /// <summary>Bad fields by proto path (e.g. "memories[0].content") with what is wrong with each.</summary>
        public IReadOnlyDictionary<string, string> FieldViolations { get; }

        /// <summary>The server's id for the failed call (its x-request-id trailer), which its log lines carry;
        /// empty when no server answered with one.</summary>
        public string RequestId { get; }

        public NpcMemoryException(RpcException inner)
            : base(Describe(inner, out var violations), inner)
        {
            Code = inner.StatusCode;
            FieldViolations = violations;
            RequestId = (inner.Trailers ?? Metadata.Empty).FirstOrDefault(entry => entry.Key == "x-request-id")?.Value ?? "";
        }

        static string Describe(RpcException e, out IReadOnlyDictionary<string, string> violations)
        {
            var found = new Dictionary<string, string>();
            byte[] details = null;
            foreach (var entry in e.Trailers ?? Metadata.Empty)
                if (entry.Key == "grpc-status-details-bin") details = entry.ValueBytes;
            if (details != null)
            {
                // google.rpc.Status{3: Any{1: type_url, 2: value}}; BadRequest{1: FieldViolation{1: field, 2: description}}
                foreach (var any in Fields(details, 3))
                {
                    if (!Utf8(First(any, 1)).EndsWith("/google.rpc.BadRequest", StringComparison.Ordinal)) continue;
                    foreach (var v in Fields(First(any, 2), 1)) found[Utf8(First(v, 1))] = Utf8(First(v, 2));
                }
            }
            violations = found;
            var named = string.Join("; ", found.Select(kv => kv.Key + ": " + kv.Value));
            return $"{e.StatusCode}: {e.Status.Detail}" + (named.Length > 0 ? $" ({named})" : "");
        }

        // Length-delimited fields `number` of a message, read without its generated class
        // (google.rpc types are not in Google.Protobuf).
        static List<byte[]> Fields(byte[] message, int number)
        {
            var result = new List<byte[]>();
            var input = new CodedInputStream(message ?? Array.Empty<byte>());
            uint tag;
            while ((tag = input.ReadTag()) != 0)
            {
                if (WireFormat.GetTagFieldNumber(tag) == number
                    && WireFormat.GetTagWireType(tag) == WireFormat.WireType.LengthDelimited)
                    result.Add(input.ReadBytes().ToByteArray());
                else
                    input.SkipLastField();
            }
            return result;
        }

        static byte[] First(byte[] message, int number) => Fields(message, number).FirstOrDefault() ?? Array.Empty<byte>();

        static string Utf8(byte[] bytes) => System.Text.Encoding.UTF8.GetString(bytes);
    }
}
