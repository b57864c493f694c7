/**
 * Opening the media socket (docs/media-protocol.md) for the browser client
 * (client/browser.ts): binary frames as `ArrayBuffer`s, and what happens once it is
 * open handed to the player.
 */

/** What the player does with a socket once it opened. */
export interface SocketHandlers {
  /** It opened: the player takes it (true), or closes it at once (false). */
  open(ws: WebSocket): boolean;
  text(ws: WebSocket, data: string): void;
  binary(ws: WebSocket, data: ArrayBuffer): void;
  /** A socket the player took closed, with its code. */
  closed(ws: WebSocket, code: number): void;
}

/**
 * Opens a socket to `url`; resolves once it is open and taken, rejects when it closes
 * before it opened (which is how a browser sees a refused upgrade, a 401 included).
 */
export function openMediaSocket(
  url: string,
  h: SocketHandlers,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.binaryType = "arraybuffer";
    let opened = false;
    ws.onopen = () => {
      if (!h.open(ws)) return ws.close(1000);
      opened = true;
      resolve();
    };
    ws.onmessage = (e) => {
      if (typeof e.data === "string") h.text(ws, e.data);
      else h.binary(ws, e.data as ArrayBuffer);
    };
    ws.onclose = (e) => {
      if (!opened) {
        reject(
          new Error(`The media socket closed before it opened (${e.code})`),
        );
      } else h.closed(ws, e.code);
    };
  });
}
