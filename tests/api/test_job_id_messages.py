"""A bad job id is named as a job id, not a memory id."""

from __future__ import annotations

import grpc
import pytest
from bad_request import violations
from npc_memory_client.v1 import extraction_pb2 as ex
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc


async def test_get_extraction_job_with_a_bad_id_names_a_job_id(ex_stub: svc_grpc.MemoryServiceAsyncStub) -> None:
    """GetExtractionJob(job_id="nope"): INVALID_ARGUMENT, job_id "is not a job id (a UUID)"."""
    with pytest.raises(grpc.aio.AioRpcError) as err:
        await ex_stub.GetExtractionJob(ex.GetExtractionJobRequest(user_id="player-1", job_id="nope"))
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert violations(err.value) == {"job_id": "is not a job id (a UUID)"}
