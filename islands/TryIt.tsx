/**
 * The Try it page's talk panel: plays the avatar of one session in a `<video>` and lets
 * the operator talk to it (microphone and typed text) through the SDK's browser client,
 * `AvatarPlayer` (client/browser.ts), over WebRTC for a `webrtc_sfu` session and MSE
 * otherwise. The media token never appears in the page: the
 * island asks `/admin/try/token` (a CSRF-protected POST) for one before connecting and
 * whenever the player refreshes it. The video starts muted (autoplay policies) until
 * the operator enables sound. The avatar's lines appear as captions, when heard.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { AvatarPlayer, type FreshToken } from "../client/browser.ts";

export interface TryItProps {
  sessionId: string;
  /** The console session's CSRF token, sent with every token request. */
  csrf: string;
  /** Where fresh media tokens come from (`/admin/try/token`). */
  tokenUrl: string;
  /** The microphone worklet as a file (the console's CSP forbids blob: scripts). */
  workletUrl: string;
  /** The session's transport: `webrtc_sfu` plays over WebRTC, else over MSE. */
  transport: string;
  /** `stream_metadata.ice_servers` of the session (WebRTC only). */
  iceServers: {
    urls: string | string[];
    username?: string;
    credential?: string;
  }[];
  [key: string]: unknown;
}

interface Line {
  key: string;
  role: "user" | "avatar" | "notice";
  text: string;
  final: boolean;
}

const STATE_TEXT: Record<string, string> = {
  idle: "Starting…",
  connecting: "Connecting…",
  open: "Connected",
  reconnecting: "Reconnecting…",
  ended: "Session over",
  closed: "Disconnected",
};

const ROLE_TEXT: Record<Line["role"], string> = {
  user: "You",
  avatar: "Avatar",
  notice: "Notice",
};

const NOTICES: Record<string, string> = {
  microphone_unavailable:
    "The microphone is not available (permission refused or no device); typed text still works.",
  autoplay_blocked: "The browser blocked playback: press Enable sound.",
  connect_failed: "Could not connect to the session.",
  reconnect_failed: "The connection was lost and could not be restored.",
  session_already_active: "Another tab took this session over.",
  invalid_session: "The session is over.",
};

/** Asks the console for a fresh media token of `sessionId`. */
async function requestToken(props: TryItProps): Promise<FreshToken> {
  const res = await fetch(props.tokenUrl, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      _csrf: props.csrf,
      session_id: props.sessionId,
    }),
    credentials: "same-origin",
    cache: "no-store",
  });
  if (!res.ok) {
    const body = await res.json().catch(() => null) as
      | { message?: string }
      | null;
    throw new Error(
      body?.message ?? `The console refused a media token (${res.status})`,
    );
  }
  return await res.json() as FreshToken;
}

export default function TryIt(props: TryItProps) {
  const video = useRef<HTMLVideoElement>(null);
  const player = useRef<AvatarPlayer | null>(null);
  const [state, setState] = useState("idle");
  const [status, setStatus] = useState<string | null>(null);
  const [lines, setLines] = useState<Line[]>([]);
  const [micMuted, setMicMuted] = useState(false);
  const [sound, setSound] = useState(false);
  const [text, setText] = useState("");

  const addLine = (line: Line) =>
    setLines((all) => {
      const i = all.findIndex((l) => l.key === line.key);
      if (i < 0) return [...all, line];
      const next = all.slice();
      next[i] = line;
      return next;
    });
  const notice = (message: string) =>
    addLine({
      key: `notice-${crypto.randomUUID()}`,
      role: "notice",
      text: message,
      final: true,
    });

  useEffect(() => {
    let stopped = false;
    let p: AvatarPlayer | null = null;
    (async () => {
      try {
        const first = await requestToken(props);
        if (stopped) return;
        p = new AvatarPlayer({
          sessionId: props.sessionId,
          token: first.client_token,
          expiresAt: first.expires_at,
          wsBaseUrl: location.origin.replace(/^http/, "ws"),
          video: video.current!,
          refreshToken: () => requestToken(props),
          workletUrl: props.workletUrl,
          transport: props.transport === "webrtc_sfu"
            ? "webrtc_sfu"
            : "websocket_fmp4",
          iceServers: props.iceServers,
          // The `<video>` paths: the page starts muted and "Enable sound" unmutes it.
          decoder: "video",
        });
        player.current = p;
        p.on("state", (d) => {
          setState(d.state);
          setStatus(d.status);
        });
        // Captions: the avatar's text shows when it is heard, in step with the mouth.
        p.on("caption", (d) =>
          addLine({
            key: `${d.role}-${d.turn_id}`,
            role: d.role,
            text: d.heard ? d.text : `${d.text} (cut off, not heard)`,
            final: d.final,
          }));
        p.on("error", (d) => {
          // Media hiccups are handled by the player itself; say what the operator can act on.
          const known = NOTICES[d.code];
          if (known || d.fatal) {
            notice(known ?? `${d.code}${d.message ? `: ${d.message}` : ""}`);
          }
        });
        await p.connect();
      } catch (err) {
        if (!stopped) {
          setState("closed");
          notice(err instanceof Error ? err.message : String(err));
        }
      }
    })();
    return () => {
      stopped = true;
      p?.close();
      player.current = null;
    };
  }, [props.sessionId]);

  const open = state === "open";
  const act = (fn: (p: AvatarPlayer) => void) => {
    const p = player.current;
    if (!p) return;
    try {
      fn(p);
    } catch (err) {
      notice(err instanceof Error ? err.message : String(err));
    }
  };

  function send(e: Event) {
    e.preventDefault();
    const value = text.trim();
    if (!value) return;
    act((p) => {
      p.sendText(value);
      setText("");
    });
  }

  function toggleMic() {
    act((p) => {
      if (p.muted) p.unmute();
      else p.mute();
      setMicMuted(p.muted);
    });
  }

  function enableSound() {
    const v = video.current;
    if (!v) return;
    v.muted = false;
    setSound(true);
    player.current?.play().catch(() => {});
  }

  const stateText = STATE_TEXT[state] ?? state;
  return (
    <div class="try-talk">
      <div class="try-stage">
        <video
          ref={video}
          class="try-video"
          muted
          playsInline
          aria-label="The avatar"
        />
        {!sound && (
          <button
            type="button"
            class="btn btn-secondary try-sound"
            onClick={enableSound}
          >
            Enable sound
          </button>
        )}
      </div>
      <p class="try-status" role="status" aria-live="polite">
        <span class={`dot try-dot-${state}`} aria-hidden="true" />
        <span data-testid="try-state">{stateText}</span>
        {status && (
          <span class="muted">
            session <span data-testid="try-status">{status}</span>
          </span>
        )}
      </p>
      <div class="row try-controls">
        <button
          type="button"
          class="btn btn-secondary"
          onClick={toggleMic}
          disabled={!open}
          aria-pressed={micMuted}
        >
          {micMuted ? "Unmute mic" : "Mute mic"}
        </button>
        <button
          type="button"
          class="btn btn-secondary"
          onClick={() => act((p) => p.interrupt())}
          disabled={!open}
        >
          Interrupt
        </button>
      </div>
      <form class="try-say" onSubmit={send}>
        <label for="try-text" class="visually-hidden">Message</label>
        <input
          id="try-text"
          value={text}
          onInput={(e) => setText((e.target as HTMLInputElement).value)}
          placeholder="Type a message to the avatar"
          maxLength={4000}
          autocomplete="off"
          disabled={!open}
        />
        <button type="submit" class="btn btn-primary" disabled={!open}>
          Send
        </button>
      </form>
      <section class="try-log" aria-labelledby="try-log-title">
        <h2 id="try-log-title">Transcript</h2>
        {lines.length === 0
          ? (
            <p class="muted try-empty">
              Speak, or type a message: what you say and what the avatar answers
              appear here.
            </p>
          )
          : (
            <ol class="try-transcript" aria-live="polite">
              {lines.map((l) => (
                <li
                  key={l.key}
                  data-role={l.role}
                  class={l.final ? undefined : "try-partial"}
                >
                  <span class="try-role">{ROLE_TEXT[l.role]}</span>
                  <span class="try-text">{l.text}</span>
                </li>
              ))}
            </ol>
          )}
      </section>
    </div>
  );
}
