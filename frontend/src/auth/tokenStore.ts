// Where the API token lives: sessionStorage (gone when the tab closes, never sent anywhere but our API).
const KEY = "ferry.apiToken";

export function readToken(): string | null {
  try {
    return window.sessionStorage.getItem(KEY);
  } catch {
    return null;
  }
}

export function writeToken(token: string | null): void {
  try {
    if (token) window.sessionStorage.setItem(KEY, token);
    else window.sessionStorage.removeItem(KEY);
  } catch {
    // Storage refused (private mode): the token lives for this page only.
  }
}
