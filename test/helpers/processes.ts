import { readdirSync, readFileSync } from "node:fs";

/** Processes as Linux shows them in /proc: for tests of what runs under what. */

/** A process's parent, from /proc/<pid>/stat (Linux); undefined once it is gone. */
function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The fields after the command name, which is in parentheses and may hold spaces.
    return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
  } catch {
    return undefined;
  }
}

export const commandLine = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").replaceAll("\0", " ");
  } catch {
    return "";
  }
};

/** A zombie has exited: only its parent's wait is missing. */
export const alive = (pid: number) => {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return false;
  }
};

/** The processes started under `root`, its children's children too. */
export function descendants(root: number): number[] {
  const pids = readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number);
  const found: number[] = [];
  const under = new Set([root]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const pid of pids) {
      const parent = parentOf(pid);
      if (parent !== undefined && under.has(parent) && !under.has(pid)) {
        under.add(pid);
        found.push(pid);
        grew = true;
      }
    }
  }
  return found;
}
