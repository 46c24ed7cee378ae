/**
 * A progress bar on stderr for a long run: redrawn in place on a terminal at most ten times a
 * second, or one line per tenth of the way when stderr is a file or a pipe.
 */
export function progressBar(label: string, stream: NodeJS.WriteStream = process.stderr) {
  const width = 30;
  const started = performance.now();
  let drawnAt = 0;
  let lastTenth = -1;
  return {
    update(fraction: number, detail = "") {
      const done = Math.min(1, Math.max(0, fraction));
      const now = performance.now();
      if (stream.isTTY) {
        if (now - drawnAt < 100 && done < 1) return;
        drawnAt = now;
        const filled = Math.round(done * width);
        const bar = `${"#".repeat(filled)}${"-".repeat(width - filled)}`;
        const seconds = ((now - started) / 1000).toFixed(0);
        stream.write(
          `\r${label} [${bar}] ${(done * 100).toFixed(0).padStart(3)}% ${seconds}s ${detail}\x1b[K`,
        );
        return;
      }
      const tenth = Math.floor(done * 10);
      if (tenth === lastTenth) return;
      lastTenth = tenth;
      stream.write(`${label} ${tenth * 10}% ${((now - started) / 1000).toFixed(0)}s ${detail}\n`);
    },
    finish() {
      if (stream.isTTY) stream.write("\n");
    },
  };
}
