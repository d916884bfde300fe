// API tokens (admin only): the list (by state, searched, newest first, a page at a time), creation (the answer holds
// the secret, the only time it is ever given) and revocation; each change refreshes the list.
import { useInfiniteQuery, useMutation, useQueryClient } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "./client";
import { queryKeys } from "./queryKeys";

export type Token = Schemas["TokenRead"];
export type TokenCreated = Schemas["TokenCreated"];
export type TokenCreate = Schemas["TokenCreate"];

export type TokenState = "active" | "expired" | "revoked" | "all";
export const TOKEN_PAGE = 100;

/** Tokens in `state` whose name or first characters contain `search`, newest first; `fetchNextPage` pages back. */
export function useTokens(state: TokenState, search: string) {
  return useInfiniteQuery({
    queryKey: queryKeys.tokens({ state, search }),
    queryFn: ({ pageParam }) =>
      unwrap(
        api.GET("/api/v1/tokens", {
          params: { query: { state, q: search || undefined, limit: TOKEN_PAGE, before_id: pageParam } },
        }),
      ),
    initialPageParam: undefined as number | undefined,
    getNextPageParam: (last) => (last.length === TOKEN_PAGE ? last[last.length - 1]!.id : undefined),
  });
}

export function useCreateToken() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (body: TokenCreate) => unwrap(api.POST("/api/v1/tokens", { body })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.tokens() }),
  });
}

export function useRevokeToken() {
  const queryClient = useQueryClient();
  return useMutation({
    mutationFn: (tokenId: number) =>
      unwrap(api.POST("/api/v1/tokens/{token_id}/revoke", { params: { path: { token_id: tokenId } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: queryKeys.tokens() }),
  });
}
