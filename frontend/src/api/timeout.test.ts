// Tests of a request bounded in time: the answer when it comes in time, a timeout error naming the wait otherwise
// (even when the request ignores its signal), and the caller's own abort passed on.
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ApiError } from "./client";
import { withTimeout } from "./timeout";

describe("withTimeout", () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it("gives the answer that comes in time", async () => {
    await expect(withTimeout(undefined, 1000, async () => 42)).resolves.toBe(42);
  });

  it("ends a request that does not answer with a timeout error saying how long it waited", async () => {
    let seen: AbortSignal | null = null;
    const pending = withTimeout(undefined, 15_000, (signal) => {
      seen = signal;
      return new Promise<never>(() => undefined); // never answers, ignores its signal
    });
    const outcome = expect(pending).rejects.toMatchObject({ code: "timeout", status: 0, message: "no answer within 15 s" });
    await vi.advanceTimersByTimeAsync(15_000);
    await outcome;
    expect(seen!.aborted).toBe(true);
    await expect(pending).rejects.toBeInstanceOf(ApiError);
  });

  it("passes the caller's abort on, without calling it a timeout", async () => {
    const caller = new AbortController();
    const pending = withTimeout(caller.signal, 15_000, (signal) => new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(new Error("aborted")))));
    caller.abort();
    await expect(pending).rejects.not.toMatchObject({ code: "timeout" });
  });
});
