// A just-created token's secret, shown this once with a copy button: the API keeps only its keyed hash, so it cannot
// be shown again. "Done" hides it.
import { useState } from "react";
import type { TokenCreated } from "../../api/tokens";

export function NewTokenSecret({ token, onDone }: { token: TokenCreated; onDone: () => void }) {
  const [copied, setCopied] = useState<"yes" | "no" | null>(null);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(token.token);
      setCopied("yes");
    } catch {
      setCopied("no");
    }
  };
  return (
    <section className="notice" aria-label={`New token ${token.name}`}>
      <p>
        <strong>Token {token.name} created.</strong> Copy it now: it is shown only this once (only its keyed hash is kept).
      </p>
      <label>
        Secret of {token.name}{" "}
        <input readOnly className="mono" size={48} value={token.token} onFocus={(e) => e.target.select()} />
      </label>{" "}
      <button type="button" onClick={() => void copy()}>
        Copy
      </button>{" "}
      <button type="button" onClick={onDone}>
        Done
      </button>
      {copied ? (
        <p role="status" className="small">
          {copied === "yes" ? "Copied to the clipboard." : "The browser refused the clipboard: select the secret and copy it."}
        </p>
      ) : null}
    </section>
  );
}
