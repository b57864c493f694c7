// The React example: the customer backend (examples/backend.ts) creates the session and
// refreshes its token; the page plays the avatar with @live-avatar/react.
import { type FormEvent, useState } from "react";
import { AvatarView, useAvatarSession } from "@live-avatar/react";

async function post<T>(path: string, body?: unknown): Promise<T> {
  const res = await fetch(path, {
    method: "POST",
    headers: body ? { "content-type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) throw new Error(`${path} answered ${res.status}`);
  return await res.json() as T;
}

const sessionPath = (id: string, what: "token" | "end") =>
  `/api/avatar/sessions/${encodeURIComponent(id)}/${what}`;

export function App() {
  const session = useAvatarSession({
    createSession: () => post("/api/avatar/sessions", { bg_id: "studio" }),
    refreshToken: (id) => post(sessionPath(id, "token")),
    endSession: (id) => post(sessionPath(id, "end")),
  });
  const [text, setText] = useState("");
  const [failure, setFailure] = useState("");
  const heard = session.captions.filter((c) => c.role === "avatar" && c.heard);
  const caption = heard[heard.length - 1]?.text ?? "";

  const send = (e: FormEvent) => {
    e.preventDefault();
    if (!session.player || !text.trim()) return;
    session.player.sendText(text.trim());
    setText("");
  };

  return (
    <main style={{ maxWidth: 512, margin: "0 auto", fontFamily: "sans-serif" }}>
      <AvatarView session={session} style={{ aspectRatio: "1" }} />
      <p id="caption" aria-live="polite">{caption}</p>
      <p>
        <span id="state">{session.state}</span> ·{" "}
        <span id="speaking" data-speaking={String(session.speaking)}>
          {session.speaking ? "speaking" : "quiet"}
        </span>
        {session.stats && (
          <span id="decoder">· {session.stats.decoder ?? "…"}</span>
        )}
      </p>
      {(session.error || failure) && (
        <p role="alert">{session.error?.code ?? failure}</p>
      )}
      <button
        type="button"
        disabled={session.state !== "idle" && session.state !== "closed" &&
          session.state !== "ended"}
        onClick={() =>
          session.start().catch((err) => setFailure(String(err)))}
      >
        Start
      </button>
      <button type="button" onClick={() => session.setMuted(!session.muted)}>
        {session.muted ? "Unmute" : "Mute"}
      </button>
      <button type="button" onClick={() => session.stop()}>End</button>
      <form onSubmit={send}>
        <input
          aria-label="Message"
          value={text}
          onChange={(e) => setText(e.target.value)}
        />
        <button type="submit">Send</button>
      </form>
    </main>
  );
}
