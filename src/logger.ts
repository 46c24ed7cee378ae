/** A structured logger writing one JSON line per entry. Secrets are never passed to it. */
export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

const LEVELS = ["debug", "info", "warn", "error"] as const;
type Level = (typeof LEVELS)[number];

const serialise = (value: unknown) =>
  value instanceof Error ? { name: value.name, message: value.message, stack: value.stack } : value;

export function createLogger(
  minimum: Level = "info",
  write = (line: string) => console.log(line),
): Logger {
  const floor = LEVELS.indexOf(minimum);
  const log =
    (level: Level) =>
    (message: string, fields: Record<string, unknown> = {}) => {
      if (LEVELS.indexOf(level) < floor) return;
      const entry: Record<string, unknown> = { time: new Date().toISOString(), level, message };
      for (const [key, value] of Object.entries(fields)) entry[key] = serialise(value);
      write(JSON.stringify(entry));
    };
  return { debug: log("debug"), info: log("info"), warn: log("warn"), error: log("error") };
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
