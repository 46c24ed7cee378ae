import { createSocket, type Socket } from "node:dgram";

/** A bound RTP port the node offers a lead until the bridge takes the media elsewhere. */
export interface MediaSink {
  port: number;
  /** The bound socket: the lead's media is read and sent on it. */
  socket: Socket;
  close(): void;
}

/**
 * Hands out even RTP ports of `EDGE_RTP_PORTS` and binds them, so that a lead's early RTP
 * lands on an open socket (read, or dropped) instead of drawing ICMP errors.
 */
export class RtpPorts {
  private next: number;
  private readonly used = new Set<number>();

  constructor(
    private readonly address: string,
    private readonly min: number,
    private readonly max: number,
  ) {
    this.next = min + (min % 2);
  }

  get inUse(): number {
    return this.used.size;
  }

  async open(): Promise<MediaSink> {
    const span = Math.floor((this.max - this.min + 1) / 2);
    for (let tried = 0; tried < span; tried++) {
      const port = this.next;
      this.next = port + 2 > this.max ? this.min + (this.min % 2) : port + 2;
      if (this.used.has(port)) continue;
      const socket = await bind(this.address, port);
      if (!socket) continue;
      this.used.add(port);
      socket.on("message", () => {});
      let open = true;
      return {
        port,
        socket,
        close: () => {
          if (!open) return;
          open = false;
          this.used.delete(port);
          socket.close();
        },
      };
    }
    throw new Error(`no free RTP port in ${this.min}-${this.max}`);
  }
}

function bind(address: string, port: number): Promise<Socket | undefined> {
  return new Promise((resolve) => {
    const socket = createSocket("udp4");
    socket.once("error", () => {
      socket.close();
      resolve(undefined);
    });
    socket.bind(port, address, () => resolve(socket));
  });
}
