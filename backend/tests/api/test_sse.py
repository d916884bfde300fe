"""One event stream's writes (`services/stream_hub.py`'s Listener), against a client socket that takes data or stops
taking it: a write goes out within the call while the socket takes it; behind a send that has to wait, what comes
next waits in order, at most `backlog_max` events — the oldest dropped and counted, the newest kept —; the end goes
out after everything written before it; a closed stream sends nothing more."""

from __future__ import annotations

import asyncio

from starlette.types import Message

from ferry_control.services.stream_hub import Listener


class ClientSocket:
    """The ASGI `send` of one response: takes each message at once, or — while `stalled` — only once it is resumed."""

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self._resumed: asyncio.Future[None] | None = None

    def stall(self) -> None:
        self._resumed = asyncio.get_running_loop().create_future()

    def resume(self) -> None:
        assert self._resumed is not None
        self._resumed.set_result(None)
        self._resumed = None

    async def send(self, message: Message) -> None:
        if self._resumed is not None:
            await self._resumed
        self.messages.append(message)

    @property
    def body(self) -> bytes:
        return b"".join(message["body"] for message in self.messages)


def listener(client: ClientSocket, backlog_max: int = 3) -> tuple[Listener, list[int]]:
    dropped: list[int] = []
    return Listener(client.send, cluster_id=1, token_id=1, backlog_max=backlog_max, dropped=dropped.append), dropped


async def settle(client: ClientSocket, messages: int) -> None:
    async with asyncio.timeout(30):
        while len(client.messages) < messages:
            await asyncio.sleep(0)


async def test_a_write_to_a_socket_that_takes_it_is_sent_within_the_call() -> None:
    client = ClientSocket()
    stream, _ = listener(client)
    stream.write(b"one", 1)
    assert client.messages == [{"type": "http.response.body", "body": b"one", "more_body": True}]


async def test_behind_a_waiting_send_the_oldest_events_are_dropped_and_counted_the_newest_kept() -> None:
    client = ClientSocket()
    stream, dropped = listener(client, backlog_max=3)
    client.stall()
    stream.write(b"a", 1)  # in flight, waiting on the socket
    for chunk in (b"b", b"c", b"d", b"e", b"f"):
        stream.write(chunk, 1)
    assert client.messages == [] and sum(dropped) == 2, "b and c gave way to d, e, f"
    client.resume()
    await settle(client, 2)
    assert [m["body"] for m in client.messages] == [b"a", b"def"], "in order, what waited sent in one piece"
    assert all(m["more_body"] for m in client.messages)


async def test_a_batch_larger_than_the_backlog_is_kept_whole_when_it_is_the_newest() -> None:
    client = ClientSocket()
    stream, dropped = listener(client, backlog_max=3)
    client.stall()
    stream.write(b"first", 1)
    stream.write(b"small", 1)
    stream.write(b"big batch", 10)
    assert dropped == [1], "the older small batch went; the newest stays even past the limit"
    client.resume()
    await settle(client, 2)
    assert client.body == b"firstbig batch"


async def test_the_end_goes_after_what_was_written_before_it_and_nothing_after() -> None:
    client = ClientSocket()
    stream, _ = listener(client)
    client.stall()
    stream.write(b"event", 1)
    stream.write(b"event2", 1)
    stream.end(b"last")
    stream.write(b"too late", 1)
    client.resume()
    await settle(client, 3)
    await asyncio.sleep(0)
    assert [(m["body"], m["more_body"]) for m in client.messages] == [
        (b"event", True), (b"event2", True), (b"last", False)
    ]  # fmt: skip
    assert stream.ended


async def test_closing_cancels_a_waiting_send_and_stops_every_later_write() -> None:
    client = ClientSocket()
    stream, _ = listener(client)
    client.stall()
    stream.write(b"stuck", 1)
    await stream.close()
    stream.write(b"after", 1)
    assert client.messages == [] and stream.ended


async def test_a_send_the_server_refuses_ends_the_stream() -> None:
    refused: list[Message] = []

    async def send(message: Message) -> None:
        refused.append(message)
        raise OSError("connection reset")

    stream = Listener(send, cluster_id=1, token_id=1, backlog_max=3, dropped=lambda _: None)
    stream.write(b"one", 1)
    stream.write(b"two", 1)
    assert stream.ended and len(refused) == 1, "nothing more is tried once the server refused"
