"""The memory inspector's pages: find a player, a player's heroines and memories, one memory, search, context.

Each page asks the service over the loopback channel with the caller's key, so the interceptor refuses what the
key may not see; only the two lists no RPC gives (a player's heroines, the recent players) are read from the
engine here, after the same key rule (``Caller.may_read``). Edits are offered, and accepted, only for an admin key
on a server that allows them, and only when the form says the person confirmed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import grpc
import jinja2
from google.protobuf import field_mask_pb2
from google.protobuf.timestamp_pb2 import Timestamp
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from npc_memory_client.v1 import context_pb2 as ctx_pb
from npc_memory_client.v1 import memory_pb2 as pb
from npc_memory_client.v1 import memory_service_pb2 as svc
from npc_memory_client.v1 import memory_service_pb2_grpc as svc_grpc
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from npc_memory.api.http import views
from npc_memory.api.http.loopback import call_metadata
from npc_memory.api.http.session import COOKIE, COOKIE_SECONDS, Caller, caller_of
from npc_memory.config.http import HttpConfig
from npc_memory.engine import MemoryEngine
from npc_memory.ops.keys import KeyRing
from npc_memory.store.players import heroines_of, recent_players

TEMPLATES = Path(__file__).parent / "templates"
RECENT_PLAYERS = 50
"""Players listed on the front page."""
RECENT_SCAN = 500
"""Recent players read before a namespaced key's filter picks the ones it may see."""
PAGE_SIZE = 200
"""Memories listed per heroine on a player's page."""
CALL_SECONDS = 30.0
"""Deadline of each call a page makes."""
_HTTP_STATUS = {grpc.StatusCode.INVALID_ARGUMENT: 400, grpc.StatusCode.NOT_FOUND: 404,
                grpc.StatusCode.PERMISSION_DENIED: 403, grpc.StatusCode.UNAUTHENTICATED: 401,
                grpc.StatusCode.FAILED_PRECONDITION: 409, grpc.StatusCode.UNAVAILABLE: 503}


class FormError(Exception):
    """A field of a page's form that cannot become a request; the page says which."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


class Inspector:
    """The pages, over a channel to the service and the engine's two lists."""

    def __init__(self, channel: grpc.aio.Channel, engine: MemoryEngine, keys: KeyRing, settings: HttpConfig,
                 secure_cookie: bool) -> None:
        self._stub = svc_grpc.MemoryServiceStub(channel)
        self._engine = engine
        self._keys = keys
        self._settings = settings
        self._secure = secure_cookie
        env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True)
        self.templates = Jinja2Templates(env=env)
        self.templates.env.filters["shown"] = views.shown
        self.templates.env.filters["q"] = lambda s: quote(str(s), safe="")

    def routes(self) -> list[Route]:
        """The inspector's routes."""
        return [
            Route("/", self.home), Route("/login", self.login, methods=["GET", "POST"]),
            Route("/logout", self.logout, methods=["POST"]), Route("/players", self.find),
            Route("/players/{user_id}", self.player),
            Route("/players/{user_id}/forget", self.forget, methods=["POST"]),
            Route("/players/{user_id}/heroines/{heroine_id}/memories/{memory_id}", self.memory),
            Route("/players/{user_id}/heroines/{heroine_id}/memories/{memory_id}/invalidate", self.invalidate,
                  methods=["POST"]),
            Route("/players/{user_id}/heroines/{heroine_id}/memories/{memory_id}/importance", self.importance,
                  methods=["POST"]),
            Route("/players/{user_id}/heroines/{heroine_id}/search", self.search),
            Route("/players/{user_id}/heroines/{heroine_id}/context", self.context),
        ]

    # -- rendering and calling --------------------------------------------------------------------------------

    def page(self, request: Request, name: str, caller: Caller | None, status: int = 200, **values: Any) -> Response:
        """A template rendered for the caller."""
        values.update(caller=caller, edits=caller.may_edit(self._settings.allow_edits) if caller else False,
                      keys_enabled=self._keys.enabled)
        response: Response = self.templates.TemplateResponse(request, name, values, status_code=status)
        return response

    def _signed_in(self, request: Request) -> Caller | None:
        return caller_of(request, self._keys)

    def _to_login(self, request: Request) -> Response:
        return RedirectResponse(f"/login?next={quote(request.url.path, safe='/')}", status_code=303)

    def refused(self, request: Request, error: grpc.aio.AioRpcError) -> Response:
        """The page for a call the service refused: its code, message and the fields at fault."""
        violations: list[tuple[str, str]] = []
        status = rpc_status.from_call(error)
        for detail in status.details if status else ():
            bad = error_details_pb2.BadRequest()
            if detail.Unpack(bad):
                violations += [(v.field, v.description) for v in bad.field_violations]
        return self.page(request, "error.html", self._signed_in(request), _HTTP_STATUS.get(error.code(), 500),
                         code=error.code().name, message=error.details() or "", violations=violations)

    def form_refused(self, request: Request, error: FormError) -> Response:
        """The page for a form field that is not a valid value."""
        return self.page(request, "error.html", self._signed_in(request), 400, code="INVALID_ARGUMENT",
                         message=str(error), violations=[(error.field, str(error))])

    def _meta(self, caller: Caller) -> tuple[tuple[str, str], ...]:
        return call_metadata(caller.key)

    # -- pages ------------------------------------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        """The sign-in form; a known key sets the cookie and goes on to the page asked for."""
        target = request.query_params.get("next", "/")
        if not target.startswith("/") or target.startswith("//"):
            target = "/"
        if request.method == "GET":
            return self.page(request, "login.html", None, next=target, failed=False)
        form = await request.form()
        key = str(form.get("key", "")).strip()
        if not self._keys.enabled or not key or self._keys.find(key) is None:
            return self.page(request, "login.html", None, 401, next=target, failed=self._keys.enabled)
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(COOKIE, key, max_age=COOKIE_SECONDS, httponly=True, samesite="strict",
                            secure=self._secure, path="/")
        return response

    async def logout(self, request: Request) -> Response:
        """Forget the signed-in key."""
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    async def home(self, request: Request) -> Response:
        """Find a player: a box for a user id and the players written to most recently that the key may see."""
        caller = self._signed_in(request)
        if caller is None:
            return self._to_login(request)
        players = [p for p in await recent_players(self._engine.db, RECENT_SCAN) if caller.may_read(p.user_id)]
        return self.page(request, "home.html", caller, players=players[:RECENT_PLAYERS])

    async def find(self, request: Request) -> Response:
        """The find box's answer: that player's page."""
        user_id = request.query_params.get("user_id", "").strip()
        return RedirectResponse(f"/players/{quote(user_id, safe='')}" if user_id else "/", status_code=303)

    async def player(self, request: Request) -> Response:
        """A player's page: per heroine the memories, and the save points and timelines on a line."""
        caller = self._signed_in(request)
        if caller is None:
            return self._to_login(request)
        user_id = request.path_params["user_id"]
        # The save points call goes first: the interceptor refuses a key outside the player's namespace there.
        saves = await self._stub.ListSavePoints(svc.ListSavePointsRequest(user_id=user_id),
                                                metadata=self._meta(caller), timeout=CALL_SECONDS)
        heroines = await heroines_of(self._engine.db, user_id) if caller.may_read(user_id) else []
        sections = []
        for tally in heroines:
            listing = await self._stub.ListMemories(svc.ListMemoriesRequest(
                scope=pb.Scope(user_id=user_id, heroine_id=tally.name), page_size=PAGE_SIZE,
                include_invalidated=True, include_shared=True,
            ), metadata=self._meta(caller), timeout=CALL_SECONDS)
            sections.append((tally, [views.memory_row(m) for m in listing.memories],
                             bool(listing.next_page_token)))
        return self.page(request, "player.html", caller, user_id=user_id, sections=sections,
                         saves=saves, save_dots=views.save_line(saves), width=views.TIMELINE_WIDTH)

    async def memory(self, request: Request) -> Response:
        """One memory: its fields, its versions on a time line and its links as a graph."""
        caller = self._signed_in(request)
        if caller is None:
            return self._to_login(request)
        user_id, heroine_id, memory_id = (request.path_params[k] for k in ("user_id", "heroine_id", "memory_id"))
        scope = pb.Scope(user_id=user_id, heroine_id=heroine_id)
        meta = self._meta(caller)
        got = await self._stub.GetMemory(svc.GetMemoryRequest(scope=scope, memory_id=memory_id), metadata=meta,
                                         timeout=CALL_SECONDS)
        history = await self._stub.GetMemoryHistory(svc.GetMemoryHistoryRequest(
            scope=scope, memory_id=memory_id, page_size=100), metadata=meta, timeout=CALL_SECONDS)
        links = await self._stub.ListLinks(svc.ListLinksRequest(scope=scope, memory_id=memory_id), metadata=meta,
                                           timeout=CALL_SECONDS)
        row = views.memory_row(got.memory)
        versions = [views.memory_row(m) for m in history.memories]
        linked = {lk.from_memory_id for lk in (*links.parents, *links.related)} | {
            lk.to_memory_id for lk in (*links.children, *links.related)}
        contents: dict[str, str] = {}
        for other in sorted(linked - {memory_id}):
            try:
                found = await self._stub.GetMemory(svc.GetMemoryRequest(scope=scope, memory_id=other),
                                                   metadata=meta, timeout=CALL_SECONDS)
                contents[other] = found.memory.content
            except grpc.aio.AioRpcError as error:
                if error.code() != grpc.StatusCode.NOT_FOUND:
                    raise
        nodes, edges = views.link_graph(row, links, contents, user_id)
        return self.page(request, "memory.html", caller, user_id=user_id, heroine_id=heroine_id, m=row,
                         versions=versions, history_dots=views.history_line(versions, user_id),
                         nodes=nodes, edges=edges, width=views.TIMELINE_WIDTH,
                         graph_width=views.GRAPH_WIDTH, graph_height=views.GRAPH_HEIGHT)

    async def search(self, request: Request) -> Response:
        """The search playground: the request's knobs, and each result's four component scores as bars."""
        caller = self._signed_in(request)
        if caller is None:
            return self._to_login(request)
        user_id, heroine_id = request.path_params["user_id"], request.path_params["heroine_id"]
        q = request.query_params
        found = None
        weights = None
        answered = ""
        if "query" in q:
            search_request = svc.SearchMemoriesRequest(
                scope=pb.Scope(user_id=user_id, heroine_id=heroine_id), query=q["query"],
                limit=_integer(q, "limit", 10), hops=_integer(q, "hops", 0), deepen="deepen" in q,
                include_shared="include_shared" in q, include_invalidated="include_invalidated" in q)
            if "custom_weights" in q:
                weights = pb.Weights(recency=_number(q, "w_recency"), importance=_number(q, "w_importance"),
                                     relevance=_number(q, "w_relevance"), keyword=_number(q, "w_keyword"))
                search_request.weights.CopyFrom(weights)
            _moment(q, "as_of", search_request.as_of)
            _moment(q, "now", search_request.now)
            response = await self._stub.SearchMemories(search_request, metadata=self._meta(caller),
                                                       timeout=CALL_SECONDS)
            found = views.results(response, weights)
            if response.answered_tier:
                answered = pb.Tier.Name(response.answered_tier).removeprefix("TIER_").lower()
        defaults = self._engine.search_settings.weights_for(heroine_id)
        return self.page(request, "search.html", caller, user_id=user_id, heroine_id=heroine_id, q=q,
                         results=found, answered=answered, defaults=defaults)

    async def context(self, request: Request) -> Response:
        """The context preview: BuildContext's block as the heroine's prompt sees it, and its token count."""
        caller = self._signed_in(request)
        if caller is None:
            return self._to_login(request)
        user_id, heroine_id = request.path_params["user_id"], request.path_params["heroine_id"]
        q = request.query_params
        preview = None
        if "budget" in q:
            context_request = ctx_pb.BuildContextRequest(
                scope=pb.Scope(user_id=user_id, heroine_id=heroine_id), utterance=q.get("utterance", ""),
                token_budget=_integer(q, "budget", 0), include_shared="include_shared" in q,
                language=q.get("language", ""))
            _moment(q, "now", context_request.now)
            response = await self._stub.BuildContext(context_request, metadata=self._meta(caller),
                                                     timeout=CALL_SECONDS)
            preview = views.context_preview(response)
        return self.page(request, "context.html", caller, user_id=user_id, heroine_id=heroine_id, q=q,
                         preview=preview)

    # -- edits ------------------------------------------------------------------------------------------------

    async def _editor(self, request: Request) -> tuple[Caller, FormData] | Response:
        """The caller and the form of an edit, or the page refusing it (not signed in, read-only, unconfirmed)."""
        caller = self._signed_in(request)
        if caller is None:
            return self._to_login(request)
        if not caller.may_edit(self._settings.allow_edits):
            why = ("this server does not allow edits from the inspector (http_allow_edits)"
                   if not self._settings.allow_edits else f"key {caller.name!r} is read-only here: edits need an "
                   "admin key")
            return self.page(request, "error.html", caller, 403, code="PERMISSION_DENIED", message=why,
                             violations=[])
        form = await request.form()
        if form.get("confirmed") != "yes":
            return self.page(request, "error.html", caller, 400, code="INVALID_ARGUMENT",
                             message="the edit was not confirmed", violations=[("confirmed", "must be yes")])
        return caller, form

    async def _edit_memory(self, request: Request, action: str) -> Response:
        """An edit of one memory (``invalidate`` or ``importance``), then back to the memory's page."""
        edit = await self._editor(request)
        if isinstance(edit, Response):
            return edit
        caller, form = edit
        scope = pb.Scope(user_id=request.path_params["user_id"], heroine_id=request.path_params["heroine_id"])
        memory_id = request.path_params["memory_id"]
        meta = self._meta(caller)
        if action == "invalidate":
            await self._stub.InvalidateMemory(svc.InvalidateMemoryRequest(scope=scope, memory_id=memory_id),
                                              metadata=meta, timeout=CALL_SECONDS)
        else:
            await self._stub.UpdateMemory(svc.UpdateMemoryRequest(
                scope=scope, memory_id=memory_id, importance=_integer(form, "importance", 0),
                update_mask=field_mask_pb2.FieldMask(paths=["importance"])), metadata=meta, timeout=CALL_SECONDS)
        return RedirectResponse(request.url.path.removesuffix("/" + action), status_code=303)

    async def invalidate(self, request: Request) -> Response:
        """Close a memory now (business time)."""
        return await self._edit_memory(request, "invalidate")

    async def importance(self, request: Request) -> Response:
        """Change a memory's importance in place."""
        return await self._edit_memory(request, "importance")

    async def forget(self, request: Request) -> Response:
        """Erase a player (ForgetPlayer: admin keys only, on the service too)."""
        edit = await self._editor(request)
        if isinstance(edit, Response):
            return edit
        caller, _form = edit
        user_id = request.path_params["user_id"]
        response = await self._stub.ForgetPlayer(svc.ForgetPlayerRequest(user_id=user_id),
                                                 metadata=self._meta(caller), timeout=CALL_SECONDS)
        return self.page(request, "forgotten.html", caller, user_id=user_id, deleted=response.deleted_memories)


def _integer(values: Any, name: str, default: int) -> int:
    raw = str(values.get(name, "") or "").strip()
    if not raw:
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise FormError(name, "must be a whole number") from exc


def _number(values: Any, name: str) -> float:
    raw = str(values.get(name, "") or "").strip()
    try:
        return float(raw)
    except ValueError as exc:
        raise FormError(name, "must be a number") from exc


def _moment(values: Any, name: str, into: Timestamp) -> None:
    """Set ``into`` from a form's ``YYYY-MM-DDTHH:MM[:SS]`` (read as UTC); leave it unset when the field is empty."""
    raw = str(values.get(name, "") or "").strip()
    if not raw:
        return
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError as exc:
        raise FormError(name, "must be a date and time, e.g. 2026-05-01T18:30") from exc
    into.FromDatetime(moment if moment.tzinfo else moment.replace(tzinfo=UTC))
