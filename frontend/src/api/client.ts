// The typed API client: openapi-fetch over the generated `paths`, with the bearer token added to every request and
// every non-2xx answer turned into an ApiError carrying the backend's `{"error": {"code", "message"}}`.
import createClient, { type Middleware } from "openapi-fetch";
import type { components, paths } from "./schema";

export type Schemas = components["schemas"];
export type Role = Schemas["Role"];

/** An error answer from the API (or a network failure, status 0). */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

type TokenSource = () => string | null;
type UnauthorizedListener = () => void;

let tokenSource: TokenSource = () => null;
const unauthorizedListeners = new Set<UnauthorizedListener>();

/** Where the client reads the bearer token from (the auth store sets it). */
export function setTokenSource(source: TokenSource): void {
  tokenSource = source;
}

/** Called on every 401 answer: the token is unknown or revoked, so the page signs out. */
export function onUnauthorized(listener: UnauthorizedListener): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

export function authHeaders(): Record<string, string> {
  const token = tokenSource();
  return token ? { Authorization: `Bearer ${token}` } : {};
}

const auth: Middleware = {
  onRequest({ request }) {
    const token = tokenSource();
    if (token) request.headers.set("Authorization", `Bearer ${token}`);
    return request;
  },
  onResponse({ response }) {
    if (response.status === 401) unauthorizedListeners.forEach((listener) => listener());
    return response;
  },
};

function origin(): string {
  return typeof window !== "undefined" ? window.location.origin : "http://localhost";
}

/** The one client. `fetch` is looked up at call time so tests can replace `globalThis.fetch`. */
export const api = createClient<paths>({
  baseUrl: origin(),
  fetch: (request: Request) => globalThis.fetch(request),
});
api.use(auth);

/** Reads an error body `{"error": {"code", "message"}}`, whatever the answer held. */
export function toApiError(status: number, body: unknown): ApiError {
  const detail = (body as { error?: { code?: unknown; message?: unknown } } | undefined)?.error;
  const code = typeof detail?.code === "string" ? detail.code : `http_${status}`;
  const message = typeof detail?.message === "string" ? detail.message : `the API answered ${status}`;
  return new ApiError(status, code, message);
}

interface FetchResult<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The answer's data, or an ApiError thrown (for TanStack Query). */
export async function unwrap<T>(call: Promise<FetchResult<T>>): Promise<T> {
  let result: FetchResult<T>;
  try {
    result = await call;
  } catch (e) {
    throw new ApiError(0, "network", `the API could not be reached: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (!result.response.ok) throw toApiError(result.response.status, result.error);
  return result.data as T;
}
