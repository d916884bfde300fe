// Drag-to-zoom over a time chart: press, drag across and release over the plot; the instants under the two ends
// (read from the plot area's position on screen) become the new range. A drag shorter than a few pixels is a click
// and zooms nothing; the band being dragged is returned for drawing.
import { useRef, useState, type MouseEvent } from "react";

const DRAG_MIN_PX = 6;

export interface DragZoom {
  ref: React.RefObject<HTMLDivElement | null>;
  handlers: {
    onMouseDown: (event: MouseEvent) => void;
    onMouseMove: (event: MouseEvent) => void;
    onMouseUp: (event: MouseEvent) => void;
    onMouseLeave: () => void;
  };
  /** The band being dragged, in pixels from the wrapper's left edge; null when not dragging. */
  band: { left: number; width: number } | null;
}

export function useDragZoom(sinceMs: number, untilMs: number, onZoom: (sinceMs: number, untilMs: number) => void): DragZoom {
  const ref = useRef<HTMLDivElement | null>(null);
  const [drag, setDrag] = useState<{ startX: number; x: number } | null>(null);

  const plotArea = () => (ref.current?.querySelector(".recharts-cartesian-grid") ?? ref.current)?.getBoundingClientRect();
  const timeAt = (clientX: number): number | null => {
    const area = plotArea();
    if (!area || area.width <= 0) return null;
    const fraction = Math.min(Math.max((clientX - area.left) / area.width, 0), 1);
    return sinceMs + fraction * (untilMs - sinceMs);
  };

  const handlers = {
    onMouseDown: (event: MouseEvent) => {
      if (event.button !== 0) return;
      event.preventDefault(); // no text selection while dragging
      setDrag({ startX: event.clientX, x: event.clientX });
    },
    onMouseMove: (event: MouseEvent) => {
      if (drag) setDrag({ ...drag, x: event.clientX });
    },
    onMouseUp: (event: MouseEvent) => {
      if (!drag) return;
      setDrag(null);
      if (Math.abs(event.clientX - drag.startX) < DRAG_MIN_PX) return;
      const a = timeAt(drag.startX);
      const b = timeAt(event.clientX);
      if (a == null || b == null || a === b) return;
      onZoom(Math.min(a, b), Math.max(a, b));
    },
    onMouseLeave: () => setDrag(null),
  };

  let band: DragZoom["band"] = null;
  if (drag && Math.abs(drag.x - drag.startX) >= DRAG_MIN_PX) {
    const left = ref.current?.getBoundingClientRect().left ?? 0;
    band = { left: Math.min(drag.startX, drag.x) - left, width: Math.abs(drag.x - drag.startX) };
  }
  return { ref, handlers, band };
}
