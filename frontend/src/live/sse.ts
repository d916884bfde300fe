// Server-sent events over fetch: the browser's EventSource cannot send the bearer token, so the stream is read
// from a fetch body and parsed here (the text/event-stream format: `event:`, `data:`, `id:` lines, a blank line
// ends an event, `:` lines are comments such as keep-alive pings).

export interface SseEvent {
  event: string;
  data: string;
  id: string | null;
}

/** A push parser: feed it text chunks as they arrive; it calls `onEvent` for each whole event. */
export function createSseParser(onEvent: (event: SseEvent) => void): (chunk: string) => void {
  let buffer = "";
  let eventType = "";
  let data: string[] = [];
  let id: string | null = null;

  const line = (text: string) => {
    if (text === "") {
      if (data.length > 0) onEvent({ event: eventType || "message", data: data.join("\n"), id });
      eventType = "";
      data = [];
      return;
    }
    if (text.startsWith(":")) return;
    const colon = text.indexOf(":");
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? "" : text.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") eventType = value;
    else if (field === "data") data.push(value);
    else if (field === "id") id = value;
  };

  let lastWasCr = false;
  return (chunk: string) => {
    // "\r\n" may arrive split over two chunks: its "\r" already ended the line.
    const text = lastWasCr && chunk.startsWith("\n") ? chunk.slice(1) : chunk;
    if (text === "") return;
    lastWasCr = text.endsWith("\r");
    buffer += text;
    const parts = buffer.split(/\r\n|\r|\n/);
    buffer = parts.pop() ?? "";
    parts.forEach(line);
  };
}

export interface StreamHandlers {
  onOpen: () => void;
  onEvent: (event: SseEvent) => void;
}

/** Reads an event stream until it ends or `signal` aborts; rejects when it cannot be opened or breaks. */
export async function readEventStream(
  url: string,
  headers: Record<string, string>,
  handlers: StreamHandlers,
  signal: AbortSignal,
): Promise<void> {
  const response = await globalThis.fetch(url, {
    headers: { ...headers, Accept: "text/event-stream" },
    signal,
    cache: "no-store",
  });
  if (!response.ok || !response.body) throw new Error(`event stream answered ${response.status}`);
  handlers.onOpen();
  const parse = createSseParser(handlers.onEvent);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    parse(decoder.decode(value, { stream: true }));
  }
}
