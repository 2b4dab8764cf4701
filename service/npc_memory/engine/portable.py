"""Moving players between databases: export one player (or all) as JSON Lines, import such a file whole.

The format is domain/portable.py's; the SQL store/portable.py's. An import reads and checks every line and writes in
one transaction: a file that cannot be loaded whole writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

from npc_memory.domain import portable
from npc_memory.domain.portable import END, HEADER, MEMORY, Record
from npc_memory.errors import FieldViolation, InvalidArgumentError
from npc_memory.store import portable as store
from npc_memory.store.pool import Connection, Database

FLUSH_RECORDS = 5_000
"""An import writes the players read so far once this many records wait (always at a player's end)."""


@dataclass(frozen=True)
class Moved:
    """What an export wrote or an import loaded: the players with at least one record, and the records."""

    players: int
    records: int


async def export_players(
    db: Database, user_id: str | None, write: Callable[[str], object],
    on_players: Callable[[int], object] | None = None, on_player: Callable[[], object] | None = None,
) -> Moved:
    """Write one player's records (``user_id``) or every player's (None) as lines to ``write``, in one snapshot.

    ``on_players`` hears how many players will be written, ``on_player`` each one done (a progress bar).
    """
    records = 0
    async with store.snapshot(db) as snap:
        header = await snap.header()
        players = [user_id] if user_id is not None else await snap.players()
        if on_players is not None:
            on_players(len(players))
        write(header.encode(datetime.now(UTC)) + "\n")
        written = 0
        for player in players:
            before = records
            async for line in snap.lines(player):
                write(line + "\n")
                records += 1
            written += records > before
            if on_player is not None:
                on_player()
    write(portable.end_line(records) + "\n")
    return Moved(written, records)


def _bad(line: int, field: str, description: str) -> InvalidArgumentError:
    return InvalidArgumentError([FieldViolation(f"line {line}: {field}", description)])


class _Batch:
    """The records of whole players waiting to be written."""

    def __init__(self) -> None:
        self.players: list[str] = []
        self.records: list[Record] = []

    def by_kind(self) -> dict[str, list[Record]]:
        grouped: dict[str, list[Record]] = {}
        for record in self.records:
            grouped.setdefault(record.kind.name, []).append(record)
        return grouped


def _lines(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            raise _bad(number, "(line)", "is empty: every line of the file is one record")
        yield number, text


async def import_players(db: Database, lines: Iterable[str], replace: bool = False) -> Moved:
    """Load an export into the database in one transaction, or nothing (InvalidArgumentError naming line and field).

    A player the database already holds is refused (FailedPreconditionError) unless ``replace``, which erases what
    it holds of each of the file's players first, in the same transaction.
    """
    numbered = _lines(lines)
    first = next(numbered, None)
    if first is None:
        raise _bad(1, "(line)", "the file is empty")
    header = portable.read_header(portable.parse_line(first[1], first[0]), first[0])
    players = 0
    records = 0
    ended = 0
    last = first[0]
    async with db.transaction() as conn:
        batch, seen, current = _Batch(), set[str](), None
        settings_checked = False
        for number, text in numbered:
            last = number
            obj = portable.parse_line(text, number)
            if ended:
                raise _bad(number, "kind", f"nothing may follow the '{END}' line (line {ended})")
            if obj["kind"] == END:
                portable.read_end(obj, number, records)
                ended = number
                continue
            if obj["kind"] == HEADER:
                raise _bad(number, "kind", "a second header: files cannot be joined by appending them")
            record = portable.read_record(obj, number)
            if record.kind is MEMORY:
                portable.check_vector(record, header)
                if not settings_checked:
                    await store.check_settings(conn, header)
                    settings_checked = True
            user = record.values[0]
            if user != current:
                if user in seen:
                    raise _bad(number, "user_id", f"player {user!r}'s records must come together, as an export "
                               "writes them")
                if len(batch.records) >= FLUSH_RECORDS:
                    await _flush(conn, batch, replace)
                    batch = _Batch()
                seen.add(user)
                batch.players.append(user)
                current = user
                players += 1
            batch.records.append(record)
            records += 1
        if not ended:
            raise _bad(last + 1, "(line)", f"the file ends without its '{END}' line: it was cut off")
        await _flush(conn, batch, replace)
        await store.after_load(conn)
    return Moved(players, records)


async def _flush(conn: Connection, batch: _Batch, replace: bool) -> None:
    if batch.players:
        portable.check_references(batch.records)
        await store.load(conn, batch.players, batch.by_kind(), replace)

