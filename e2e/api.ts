// The control plane's API as the specs call it, typed by the dashboard's generated types (frontend/src/api/schema.d.ts,
// from openapi.json): a route is named by its OpenAPI path ("/api/v1/clusters/{cluster_id}/topology"), its path and
// query parameters and its body are checked against the schema, and its answer comes back typed as the schema declares
// it — so a spec never types an API shape by hand, and one that drifts from the server fails the type check.
import { expect, type APIRequestContext, type APIResponse } from "@playwright/test";
import type { components, paths } from "../frontend/src/api/schema";

export type Schemas = components["schemas"];

type Method = "get" | "post" | "put" | "patch" | "delete";
/** The routes that answer `M`. */
export type PathOf<M extends Method> = { [P in keyof paths]: [NonNullable<paths[P][M]>] extends [never] ? never : P }[keyof paths];
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
type Responses<P extends keyof paths, M extends Method> = Operation<P, M> extends { responses: infer R } ? R : never;
type SuccessCode<P extends keyof paths, M extends Method> = Extract<keyof Responses<P, M>, 200 | 201 | 202 | 204>;
type JsonOf<R> = R extends { content: { "application/json": infer T } } ? T : undefined;
/** What route `P` answers to `M` on success, as the schema declares it. */
export type Answer<P extends keyof paths, M extends Method> = JsonOf<Responses<P, M>[SuccessCode<P, M>]>;
type Params<P extends keyof paths, M extends Method> = Operation<P, M> extends { parameters: infer Q } ? Q : never;
type PathParams<P extends keyof paths, M extends Method> = Params<P, M> extends { path: infer T } ? T : never;
type QueryParams<P extends keyof paths, M extends Method> = Params<P, M> extends { query?: infer T } ? T : never;
type Body<P extends keyof paths, M extends Method> = Operation<P, M> extends { requestBody?: { content: { "application/json": infer T } } } ? T : never;

/** A call's parameters: `path` fills the route's `{names}`, `query` its query string, `data` its JSON body (its fields
 * checked by name and type; a field the server defaults may be left out, though the generated type lists it as
 * required); the call fails the spec, with the API's answer, unless the status is `status` (200 unless said). */
export type Call<P extends keyof paths, M extends Method> = ([PathParams<P, M>] extends [never] ? { path?: undefined } : { path: PathParams<P, M> }) & {
  query?: QueryParams<P, M>;
  data?: Partial<Body<P, M>>;
  status?: SuccessCode<P, M>;
};

/** The route's URL: its `{names}` filled from `path`, then the query string (a list repeats its parameter). */
function url(route: string, path: Record<string, unknown> | undefined, query: Record<string, unknown> | undefined): string {
  const filled = route.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = path?.[name];
    if (value === undefined || value === null) throw new Error(`${route}: no value for {${name}}`);
    return encodeURIComponent(String(value));
  });
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(query ?? {})) {
    if (value === undefined || value === null) continue;
    for (const one of Array.isArray(value) ? value : [value]) search.append(name, String(one));
  }
  const text = search.toString();
  return text ? `${filled}?${text}` : filled;
}

async function call<M extends Method, P extends PathOf<M>>(context: APIRequestContext, method: M, route: P, options: Call<P, M>): Promise<Answer<P, M>> {
  const { path, query, data, status = 200 } = options as { path?: Record<string, unknown>; query?: Record<string, unknown>; data?: unknown; status?: number };
  const target = url(route, path, query);
  // A GET is sent again when the connection it went out on was reset: the API closes a keep-alive connection idle
  // for 5 s (uvicorn's default), and one the client picks up at that moment is reset before any answer. Only GETs:
  // the others change state, and which of them had reached the API is not known.
  const retries = method === "get" ? 2 : 0;
  const response: APIResponse = await context.fetch(target, { method: method.toUpperCase(), data, maxRetries: retries });
  expect(response.status(), `${method.toUpperCase()} ${target}: ${await response.text()}`).toBe(status);
  return (status === 204 ? undefined : await response.json()) as Answer<P, M>;
}

/** The typed calls over `context` (which carries the base URL and the token). */
export function typedApi(context: APIRequestContext) {
  type Rest<P extends keyof paths, M extends Method> = [PathParams<P, M>] extends [never] ? [options?: Call<P, M>] : [options: Call<P, M>];
  return {
    get: <P extends PathOf<"get">>(route: P, ...[options]: Rest<P, "get">) => call(context, "get", route, (options ?? {}) as Call<P, "get">),
    post: <P extends PathOf<"post">>(route: P, ...[options]: Rest<P, "post">) => call(context, "post", route, (options ?? {}) as Call<P, "post">),
    put: <P extends PathOf<"put">>(route: P, ...[options]: Rest<P, "put">) => call(context, "put", route, (options ?? {}) as Call<P, "put">),
    patch: <P extends PathOf<"patch">>(route: P, ...[options]: Rest<P, "patch">) => call(context, "patch", route, (options ?? {}) as Call<P, "patch">),
    delete: <P extends PathOf<"delete">>(route: P, ...[options]: Rest<P, "delete">) =>
      call(context, "delete", route, (options ?? {}) as Call<P, "delete">),
  };
}

export type TypedApi = ReturnType<typeof typedApi>;
