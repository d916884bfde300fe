import { act, renderHook } from "@testing-library/react";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { useThrottled } from "./useThrottled";

describe("useThrottled", () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("follows the value at most once per interval, the newest at the interval's end, never losing the last", () => {
    const { result, rerender } = renderHook(({ value }) => useThrottled(value, 2000), { initialProps: { value: 1 } });
    expect(result.current).toBe(1);

    rerender({ value: 2 });
    rerender({ value: 3 });
    act(() => void vi.advanceTimersByTime(1999));
    expect(result.current).toBe(1); // held back within the interval
    act(() => void vi.advanceTimersByTime(1));
    expect(result.current).toBe(3); // the newest at its end; 2 is skipped

    act(() => void vi.advanceTimersByTime(5000));
    rerender({ value: 4 });
    expect(result.current).toBe(4); // after a quiet interval: at once

    rerender({ value: 5 });
    act(() => void vi.advanceTimersByTime(2000));
    expect(result.current).toBe(5); // the last change arrives without another one to push it
  });
});
