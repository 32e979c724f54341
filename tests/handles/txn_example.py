"""A second kind of handle: a transaction you begin, stage writes in, then commit or roll back.

The staged writes live in the handle. ``commit`` closes the transaction as
"committed" and, once that close has committed (``on_commit``), applies them to a
plain dict (the "database"), so concurrent commits apply them once; ``rollback`` closes it as
"rolled back" without applying anything. Either way, later use of the id says so.
"""

from __future__ import annotations

from pydantic import BaseModel

from handles import Handle, HandleKind, HandleManager, HandleTools, Lifetime, Server
from stores import MemoryStore


class Staged(BaseModel):
    writes: dict[str, str] = {}


txn = HandleKind(
    "transaction",
    "txn",
    Staged,
    Lifetime(idle=300),
    id_param="txn_id",
    create_tool="begin_transaction",
    close_tool="rollback",
)


def build_server(database: dict[str, str], manager: HandleManager | None = None) -> Server:
    server = Server("txn-example")
    tools = HandleTools(server, manager or HandleManager(MemoryStore(), [txn]))

    @tools.creates(txn)
    async def begin_transaction() -> Staged:
        """Begin a transaction: stage writes in it, then commit or roll back."""
        return Staged()

    @tools.edits(txn)
    async def stage(state: Staged, key: str, value: str) -> Staged:
        """Stage a write of value to key; nothing changes until commit."""
        state.writes[key] = value
        return state

    async def apply(writes: dict[str, str]) -> None:
        database.update(writes)  # once per transaction: only after its close committed

    @tools.closes(txn, reason="committed", on_commit=apply)
    async def commit(state: Staged) -> dict[str, str]:
        """Apply every staged write at once and end the transaction."""
        return state.writes

    @tools.closes(txn, reason="rolled back")
    async def rollback(txn_id: str) -> str:
        """Discard the staged writes and end the transaction."""
        return f"Rolled back {txn_id}; nothing was written."

    @tools.lists(txn)
    async def list_transactions(open_txns: list[Handle[Staged]]) -> list[str]:
        """Your open transactions' ids, oldest first."""
        return [handle.id for handle in open_txns]

    return server
