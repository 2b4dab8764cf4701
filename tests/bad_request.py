"""Reading a google.rpc.BadRequest out of a failed call (shared by the gRPC input tests)."""

from __future__ import annotations

import grpc
from google.rpc import error_details_pb2
from grpc_status import rpc_status


def violations(err: grpc.aio.AioRpcError) -> dict[str, str]:
    """The BadRequest field violations of a failed call, field → description (empty without details)."""
    status = rpc_status.from_call(err)
    out: dict[str, str] = {}
    for detail in status.details if status is not None else []:
        bad = error_details_pb2.BadRequest()
        assert detail.Unpack(bad)
        out.update({v.field: v.description for v in bad.field_violations})
    return out
