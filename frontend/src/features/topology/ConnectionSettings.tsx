// A connection's settings in the connections table: the compact line, and every setting in a details element.
import type { Schemas } from "../../api/client";
import { settingsLine, settingsList } from "./connectionSettings";

export function ConnectionSettings({ settings }: { settings: Schemas["LinkSettingsRead"] | null | undefined }) {
  const line = settingsLine(settings);
  if (!settings || line === null) return <span className="muted">not reported</span>;
  return (
    <details>
      <summary>{line}</summary>
      <dl className="small">
        {settingsList(settings).map(([name, value]) => (
          <div key={name}>
            <dt>{name}</dt>
            <dd className="mono">{value}</dd>
          </div>
        ))}
      </dl>
    </details>
  );
}
