// Tests of the event-stream parser: fields, multi-line data, comments, CRLF split across chunks.
import { describe, expect, it } from "vitest";
import { createSseParser, type SseEvent } from "./sse";

function parseAll(chunks: string[]): SseEvent[] {
  const events: SseEvent[] = [];
  const feed = createSseParser((e) => events.push(e));
  chunks.forEach(feed);
  return events;
}

describe("createSseParser", () => {
  it("parses named events with JSON data, as sse-starlette sends them (CRLF)", () => {
    const events = parseAll(['event: subscribed\r\ndata: {"cluster_id": 1}\r\n\r\n', "event: position\r\ndata: {}\r\n\r\n"]);
    expect(events).toEqual([
      { event: "subscribed", data: '{"cluster_id": 1}', id: null },
      { event: "position", data: "{}", id: null },
    ]);
  });

  it("joins data lines, ignores comments, defaults the event name", () => {
    expect(parseAll([": ping\n\ndata: a\ndata: b\nid: 7\n\n"])).toEqual([{ event: "message", data: "a\nb", id: "7" }]);
  });

  it("handles any split of the bytes, including inside CRLF", () => {
    const text = 'event: health\r\ndata: {"x":1}\r\n\r\n';
    for (let cut = 1; cut < text.length; cut++) {
      expect(parseAll([text.slice(0, cut), text.slice(cut)])).toEqual([{ event: "health", data: '{"x":1}', id: null }]);
    }
  });

  it("waits for the blank line before dispatching", () => {
    expect(parseAll(["event: link\ndata: {}\n"])).toEqual([]);
  });
});
