// Where the signed-in session lives: localStorage, shared by every tab of this origin, as the token and the expiry
// the API gave for it (GET /api/v1/me). A session past its expiry is forgotten when read; clearing it (sign-out, a
// 401) reaches every other tab through the `storage` event. Why localStorage: docs/security.md "The dashboard's
// session".
const KEY = "ferry.session";
/** Where earlier versions kept the token (this tab only): removed when seen. */
const LEGACY_KEY = "ferry.apiToken";

export interface StoredSession {
  token: string;
  /** ISO 8601, or null for a token that does not expire. */
  expiresAt: string | null;
}

function parse(raw: string | null, now: number): StoredSession | null {
  if (!raw) return null;
  try {
    const value = JSON.parse(raw) as Partial<StoredSession>;
    if (typeof value.token !== "string" || !value.token) return null;
    const expiresAt = typeof value.expiresAt === "string" ? value.expiresAt : null;
    if (expiresAt !== null && !(Date.parse(expiresAt) > now)) return null;
    return { token: value.token, expiresAt };
  } catch {
    return null;
  }
}

/** The kept session, or null when there is none or it has expired (an expired one is removed). */
export function readSession(now: number = Date.now()): StoredSession | null {
  try {
    window.sessionStorage.removeItem(LEGACY_KEY);
    const raw = window.localStorage.getItem(KEY);
    const session = parse(raw, now);
    if (raw !== null && session === null) window.localStorage.removeItem(KEY);
    return session;
  } catch {
    return null;
  }
}

/** Keeps `session` for every tab, or forgets it everywhere (null). */
export function writeSession(session: StoredSession | null): void {
  try {
    if (session) window.localStorage.setItem(KEY, JSON.stringify(session));
    else window.localStorage.removeItem(KEY);
  } catch {
    // Storage refused (private mode): the session lives for this page only.
  }
}

/** Calls `listener` with the session another tab kept (null: it signed out); returns the unsubscribe. */
export function onSessionChangedElsewhere(listener: (session: StoredSession | null) => void): () => void {
  const handle = (event: StorageEvent) => {
    // key null: another tab cleared the whole storage.
    if ((event.storageArea && event.storageArea !== window.localStorage) || (event.key !== KEY && event.key !== null)) return;
    listener(parse(event.key === null ? null : event.newValue, Date.now()));
  };
  window.addEventListener("storage", handle);
  return () => window.removeEventListener("storage", handle);
}
