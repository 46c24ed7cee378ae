import { useRef } from "preact/hooks";
import { type ServerMessage, socketUrl } from "./api.ts";
import { signOut } from "./session.ts";

export type Link = "connecting" | "live" | "reconnecting";

/** Close codes after which a new socket would be refused: the session is over. */
const SESSION_OVER = new Set([4001, 4003, 4004]);

/**
 * A socket that reconnects by itself, waiting a little longer after each failure (up to 10 s),
 * and reports whether it is live. The server sends a fresh snapshot or state on each connect.
 */
export function liveSocket(
  path: "/ws/agent" | "/ws/supervisor",
  onMessage: (message: ServerMessage) => void,
  onLink: (link: Link) => void,
): () => void {
  let socket: WebSocket | undefined;
  let retry: ReturnType<typeof setTimeout> | undefined;
  let failures = 0;
  let stopped = false;

  const open = () => {
    onLink(failures ? "reconnecting" : "connecting");
    socket = new WebSocket(socketUrl(path));
    socket.onopen = () => {
      failures = 0;
      onLink("live");
    };
    socket.onmessage = (event) => {
      try {
        onMessage(JSON.parse(String(event.data)) as ServerMessage);
      } catch {}
    };
    socket.onclose = (event) => {
      if (stopped) return;
      if (SESSION_OVER.has(event.code)) {
        void signOut(false);
        return;
      }
      failures++;
      onLink("reconnecting");
      retry = setTimeout(open, Math.min(10_000, 500 * 2 ** Math.min(failures, 5)));
    };
  };
  open();
  return () => {
    stopped = true;
    clearTimeout(retry);
    socket?.close();
  };
}

/**
 * The socket tells every change in order, and the answer to the page's own request can land
 * after a later change it told. `told()` counts a change the socket told; `asking()` is called
 * as a request starts and returns whether its answer is still the news (nothing told since).
 */
export function useToldInOrder() {
  const count = useRef(0);
  return {
    told: () => {
      count.current += 1;
    },
    asking: () => {
      const before = count.current;
      return () => count.current === before;
    },
  };
}
