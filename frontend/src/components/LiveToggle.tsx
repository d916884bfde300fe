// Live or paused, kept in the URL (?live=paused): the hook for a view's state, and the button with its status.
import { useUrlChoice } from "../lib/useUrlState";

/** Whether the view follows live data, and how to change it (stored as ?live=on|paused). */
export function useLiveChoice(): [boolean, (live: boolean) => void] {
  const [choice, setChoice] = useUrlChoice("live", ["on", "paused"] as const, "on");
  return [choice === "on", (live: boolean) => setChoice(live ? "on" : "paused")];
}

export function LiveToggle({ live, onChange }: { live: boolean; onChange: (live: boolean) => void }) {
  return (
    <>
      <button type="button" aria-pressed={!live} onClick={() => onChange(!live)}>
        {live ? "Pause" : "Resume live"}
      </button>
      <span role="status" className="small">
        {live ? "● live (every 2 s)" : "❚❚ paused"}
      </span>
    </>
  );
}
