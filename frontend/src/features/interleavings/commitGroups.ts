// Commit groups and a picked GTID in the interleavings view (pure functions). A group is the transactions a
// master committed together (the same commit_id in the master's binlog, two or more of them); replicas keep the
// master's grouping, so each lane marks the group's members it holds, a bracket joining the ones that sit side by
// side. Without a known master each lane's own commit_id groups are shown.
import type { Lane, LaneBlock } from "./align";
import { presenceOf } from "./presence";

export interface CommitGroup {
  /** `server:commit_id` of the master lane that committed it. */
  id: string;
  size: number;
}

/** Where a block sits in a run of its group's members side by side in its lane. */
export type GroupPlace = "start" | "middle" | "end" | "alone";

export interface GroupMark extends CommitGroup {
  place: GroupPlace;
}

function groupsOf(lane: Lane): Map<string, CommitGroup> {
  const members = new Map<number, string[]>();
  for (const block of lane.blocks) {
    if (block.commitId == null) continue;
    const list = members.get(block.commitId) ?? [];
    list.push(block.gtid);
    members.set(block.commitId, list);
  }
  const byGtid = new Map<string, CommitGroup>();
  for (const [commitId, gtids] of members) {
    if (gtids.length < 2) continue;
    const group = { id: `${lane.serverId}:${commitId}`, size: gtids.length };
    for (const gtid of gtids) byGtid.set(gtid, group);
  }
  return byGtid;
}

/** Each lane's marks, one per block in the lane's (column) order (null: not in a group of two or more). */
export function commitGroupMarks(lanes: readonly Lane[], masterServerIds: readonly number[]): Map<number, (GroupMark | null)[]> {
  const masters = lanes.filter((lane) => masterServerIds.includes(lane.serverId));
  const shared = new Map<string, CommitGroup>();
  for (const lane of masters) for (const [gtid, group] of groupsOf(lane)) shared.set(gtid, group);
  const marks = new Map<number, (GroupMark | null)[]>();
  for (const lane of lanes) {
    const groupOf = masters.length > 0 ? shared : groupsOf(lane);
    const groups = lane.blocks.map((block) => groupOf.get(block.gtid) ?? null);
    marks.set(
      lane.serverId,
      groups.map((group, i) => {
        if (!group) return null;
        // Joined only to a member in the very next column (a gap between them is another server's transaction).
        const column = lane.blocks[i]!.column;
        const before = groups[i - 1]?.id === group.id && lane.blocks[i - 1]!.column === column - 1;
        const after = groups[i + 1]?.id === group.id && lane.blocks[i + 1]!.column === column + 1;
        const place: GroupPlace = before && after ? "middle" : before ? "end" : after ? "start" : "alone";
        return { ...group, place };
      }),
    );
  }
  return marks;
}

export const GTID_PATTERN = /^\d+-\d+-\d+$/;

/** Where a picked GTID sits in a lane, in words: its place, or why it is not there (presence.ts). */
export function pickedPlace(lane: Parameters<typeof presenceOf>[0], gtid: string): { found: LaneBlock | null; text: string } {
  const presence = presenceOf(lane, gtid);
  return { found: presence.kind === "here" ? presence.block : null, text: presence.text };
}
