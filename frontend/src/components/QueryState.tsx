// What a view shows while its data loads or when it failed (with the API's own message), so every view says
// why it is empty.
import type { ReactNode } from "react";
import { ApiError } from "../api/client";

export function ErrorMessage({ error }: { error: unknown }) {
  const text =
    error instanceof ApiError
      ? `${error.message} (${error.status === 0 ? "no answer" : `HTTP ${error.status}`}, ${error.code})`
      : error instanceof Error
        ? error.message
        : String(error);
  return (
    <p role="alert" className="error">
      <span aria-hidden="true">✕ </span>
      {text}
    </p>
  );
}

export function QueryState({
  isPending,
  error,
  children,
  what,
}: {
  isPending: boolean;
  error: unknown;
  children: ReactNode;
  what: string;
}) {
  if (error) return <ErrorMessage error={error} />;
  if (isPending) return <p className="muted" role="status">Loading {what}…</p>;
  return <>{children}</>;
}
