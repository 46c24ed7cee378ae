import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";

/**
 * Debian's headless baresip on loopback as a lead or an agent's phone: audio from `ausine`
 * (a 440 Hz tone), played into `aubridge` (no sound device), calls scripted over `ctrl_tcp`.
 */

export const BARESIP = "/usr/bin/baresip";
export const baresipInstalled = () => Bun.file(BARESIP).size > 0;

export interface BaresipAccount {
  user: string;
  /** `auto` answers at once; `manual` rings until told (or cancelled). */
  answer: "auto" | "manual";
}

export interface BaresipEvent {
  type: string;
  accountaor?: string;
  id?: string;
  param?: string;
}

export class Baresip {
  private output = "";
  private ctrl: Socket | undefined;
  private buffer = "";
  readonly events: BaresipEvent[] = [];
  private listeners: ((event: BaresipEvent) => void)[] = [];

  private constructor(
    private readonly process: Subprocess<"ignore", "pipe", "pipe">,
    private readonly dir: string,
    readonly sipPort: number,
    private readonly ctrlPort: number,
  ) {}

  static async start(o: {
    sipPort: number;
    ctrlPort: number;
    rtpPorts: [number, number];
    accounts: BaresipAccount[];
    /** A WAV the phone says once answered (`aufile`), instead of a 440 Hz tone. */
    says?: string;
    /** A directory where the phone records what it hears (`sndfile`: `dump-…-dec.wav`). */
    recordsTo?: string;
  }): Promise<Baresip> {
    const dir = mkdtempSync(join(tmpdir(), "baresip-"));
    writeFileSync(
      join(dir, "config"),
      [
        "poll_method epoll",
        `sip_listen 127.0.0.1:${o.sipPort}`,
        "sip_transports udp",
        "net_interface 127.0.0.1",
        "audio_player aubridge,nil",
        "audio_alert aubridge,nil",
        o.says ? `audio_source aufile,${o.says}` : "audio_source ausine,440",
        // ausine makes 48 kHz stereo only; baresip resamples it to the 8 kHz of PCMU.
        // aufile reads the file at its own rate (8 kHz mono here).
        ...(o.says
          ? ["ausrc_srate 8000", "ausrc_channels 1"]
          : ["ausrc_srate 48000", "ausrc_channels 2"]),
        "auplay_srate 48000",
        `rtp_ports ${o.rtpPorts[0]}-${o.rtpPorts[1]}`,
        "module_path /usr/lib/baresip/modules",
        "module g711.so",
        "module aubridge.so",
        "module ausine.so",
        "module aufile.so",
        ...(o.recordsTo ? ["module sndfile.so", `snd_path ${o.recordsTo}`] : []),
        "module_app account.so",
        "module_app menu.so",
        "module_app ctrl_tcp.so",
        `ctrl_tcp_listen 127.0.0.1:${o.ctrlPort}`,
        "",
      ].join("\n"),
    );
    writeFileSync(
      join(dir, "accounts"),
      o.accounts
        .map((a) => `<sip:${a.user}@127.0.0.1:${o.sipPort}>;regint=0;answermode=${a.answer}\n`)
        .join(""),
    );
    const child = Bun.spawn([BARESIP, "-f", dir], {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    const phone = new Baresip(child, dir, o.sipPort, o.ctrlPort);
    void phone.read(child.stdout);
    void phone.read(child.stderr);
    const deadline = Date.now() + 10_000;
    while (!phone.output.includes("baresip is ready.")) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`baresip did not start:\n${phone.output}`);
      await Bun.sleep(50);
    }
    await phone.connectCtrl();
    return phone;
  }

  private async read(stream: ReadableStream<Uint8Array>) {
    const decoder = new TextDecoder();
    for await (const chunk of stream) this.output += decoder.decode(chunk);
  }

  private connectCtrl(): Promise<void> {
    return new Promise((resolve, reject) => {
      const socket = connect(this.ctrlPort, "127.0.0.1", () => resolve());
      socket.on("error", reject);
      socket.on("data", (data) => {
        this.buffer += data.toString("utf8");
        // Netstrings: `<length>:<json>,`
        for (;;) {
          const colon = this.buffer.indexOf(":");
          if (colon < 0) break;
          const length = Number(this.buffer.slice(0, colon));
          if (this.buffer.length < colon + 1 + length + 1) break;
          const body = this.buffer.slice(colon + 1, colon + 1 + length);
          this.buffer = this.buffer.slice(colon + 2 + length);
          try {
            const message = JSON.parse(body) as BaresipEvent & { event?: boolean };
            if (message.event) {
              this.events.push(message);
              for (const listener of this.listeners) listener(message);
            }
          } catch {}
        }
      });
      this.ctrl = socket;
    });
  }

  /** Runs a menu command (`hangup`, `accept`, …) over ctrl_tcp. */
  command(command: string, params = ""): void {
    const body = JSON.stringify({ command, params, token: String(Date.now()) });
    this.ctrl?.write(`${Buffer.byteLength(body)}:${body},`);
  }

  onEvent(listener: (event: BaresipEvent) => void): void {
    this.listeners.push(listener);
  }

  /** The `address:port`s it said it receives RTP from, in order. */
  rtpSources(): { address: string; port: number }[] {
    return [
      ...this.output.matchAll(
        /incoming rtp for 'audio' established, receiving from ([\d.]+):(\d+)/g,
      ),
    ].map((m) => ({ address: m[1] as string, port: Number(m[2]) }));
  }

  /** The highest transmit and receive audio bit rates its call status line showed. */
  audioBitrates(): { a: number; b: number } {
    let a = 0;
    let b = 0;
    for (const match of this.output.matchAll(/audio=(\d+)\/(\d+)/g)) {
      a = Math.max(a, Number(match[1]));
      b = Math.max(b, Number(match[2]));
    }
    return { a, b };
  }

  log(): string {
    return this.output;
  }

  async stop(): Promise<void> {
    this.ctrl?.destroy();
    this.process.kill();
    await this.process.exited;
    rmSync(this.dir, { recursive: true, force: true });
  }
}
