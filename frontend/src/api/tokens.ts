// API tokens (admin only): the list, creation (the answer holds the secret, the only time it is ever given) and
// revocation; each change refreshes the list.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "./client";
import { queryKeys } from "./queryKeys";

export type Token = Schemas["TokenRead"];
export type TokenCreated = Schemas["TokenCreated"];
export type TokenCreate = Schemas["TokenCreate"];

export function useTokens() {
  return useQuery({ queryKey: queryKeys.tokens(), queryFn: () => unwrap(api.GET("/api/v1/tokens")) });
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
