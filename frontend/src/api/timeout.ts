// A request bounded in time: aborted after `ms` (or when the caller's signal aborts), a timeout reported as an
// ApiError with code `timeout` that says how long it waited, rather than a request left pending.
import { ApiError } from "./client";

export async function withTimeout<T>(signal: AbortSignal | undefined, ms: number, run: (bounded: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, ms);
  const forward = () => controller.abort();
  signal?.addEventListener("abort", forward);
  try {
    const answer = run(controller.signal);
    answer.catch(() => undefined); // when the time ran out first, its late failure is no one's
    // A fetch that ignores the signal still ends here when the time is up.
    const expired = new Promise<never>((_, reject) => controller.signal.addEventListener("abort", () => reject(controller.signal.reason)));
    return await Promise.race([answer, expired]);
  } catch (error) {
    if (timedOut) throw new ApiError(0, "timeout", `no answer within ${ms / 1000} s`);
    throw error;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", forward);
  }
}
