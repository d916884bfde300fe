// A fake backend for component tests: routes "METHOD /path" to handlers, records every request (method, path,
// query, headers, JSON body) so tests can assert exactly what was sent.
import { vi } from "vitest";

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Headers;
  body: unknown;
}

type Handler = (request: RecordedRequest) => { status?: number; body?: unknown } | undefined;

export function mockApi(routes: Record<string, Handler>) {
  const requests: RecordedRequest[] = [];
  const fetchMock = vi.fn(async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = input instanceof Request ? input : new Request(String(input), init);
    const url = new URL(request.url);
    const text = request.method === "GET" || request.method === "HEAD" ? "" : await request.text();
    const recorded: RecordedRequest = {
      method: request.method,
      path: url.pathname,
      query: url.searchParams,
      headers: request.headers,
      body: text ? JSON.parse(text) : undefined,
    };
    requests.push(recorded);
    const handler = routes[`${request.method} ${url.pathname}`];
    const answer = handler?.(recorded);
    if (!answer) {
      return new Response(JSON.stringify({ error: { code: "not_found", message: `no route ${request.method} ${url.pathname}` } }), {
        status: 404,
        headers: { "Content-Type": "application/json" },
      });
    }
    return new Response(answer.body === undefined ? null : JSON.stringify(answer.body), {
      status: answer.status ?? 200,
      headers: { "Content-Type": "application/json" },
    });
  });
  vi.stubGlobal("fetch", fetchMock);
  return { requests, fetchMock };
}
