/**
 * A fake ECEP v1 engine (docs/engine-protocol.md) on real wss. It refuses upgrades
 * without `x-engine-key: <key>`, answers `session.start` with `session.ready`, and
 * answers `user.text` by its content: `fail` → a non-fatal error mid-turn, `fatal` → a
 * fatal error, `long` → a response that only ends on `interrupt`, `bye` → the engine
 * ends the conversation (closes its socket with 1000), `speak` → 0.6 s of an audible
 * tone, `speak long` → 1.8 s of tone in a response that only ends on `interrupt`,
 * `speak cancel` → 1.8 s of tone, then after 600 ms its own `response.cancel` (barge-in
 * it detected), `speak 5s` → 5 s of tone sent within 0.5 s (ten times real time) with
 * agent transcripts "one", "two", "three" before its audio at 0, 1 and 2.5 s, anything
 * else → a response with agent audio and an agent transcript. `session.end` closes the socket
 * unless `stubborn`. `hang` → that connection goes silent: it stays open and answers
 * nothing more, `session.end` included (an engine that hung).
 */
import { type FakeWs, type Json, startFakeWs } from "./fake_ws.ts";

export interface EcepFakeOptions {
  key: string;
  agentRate?: number;
  stubborn?: boolean;
}

const audio = (samples: number) => new Uint8Array(samples * 2);

/** `seconds` of a 440 Hz tone at `rate`, as PCM16LE frames of 100 ms. */
function toneFrames(seconds: number, rate: number): Uint8Array[] {
  const n = Math.round(seconds * rate);
  const bytes = new Uint8Array(n * 2);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < n; i++) {
    view.setInt16(
      i * 2,
      Math.round(12000 * Math.sin(2 * Math.PI * 440 * i / rate)),
      true,
    );
  }
  const frames: Uint8Array[] = [];
  const step = Math.round(rate / 10) * 2;
  for (let i = 0; i < bytes.length; i += step) {
    frames.push(bytes.subarray(i, i + step));
  }
  return frames;
}

/** Starts the fake; connect to `.url`. */
export function startEcepFake(options: EcepFakeOptions): FakeWs {
  let open: string | null = null;
  let n = 0;
  const hung = new WeakSet<object>();
  return startFakeWs("/engine", {
    refuse: (req) =>
      req.headers.get("x-engine-key") === options.key
        ? undefined
        : new Response("unauthorized", { status: 401 }),
    onJson(peer, msg: Json) {
      if (hung.has(peer)) return;
      switch (msg.type) {
        case "session.start":
          peer.send({
            type: "session.ready",
            agent_audio: {
              encoding: "pcm_s16le",
              sample_rate: options.agentRate ?? 16000,
            },
          });
          return;
        case "user.text": {
          if (msg.text === "bye") {
            peer.close(1000, "conversation over");
            return;
          }
          if (msg.text === "hang") {
            hung.add(peer);
            return;
          }
          const id = `resp-${++n}`;
          peer.send({ type: "response.start", response_id: id });
          if (msg.text === "fail") {
            peer.send({
              type: "error",
              message: "text-to-speech backend failed",
              fatal: false,
            });
            peer.send({ type: "response.end", response_id: id });
          } else if (msg.text === "fatal") {
            peer.send({
              type: "error",
              message: "engine crashed",
              fatal: true,
            });
          } else if (msg.text === "long") {
            open = id;
            peer.send(audio(800));
          } else if (msg.text === "speak 5s") {
            const frames = toneFrames(5, options.agentRate ?? 16000);
            const texts = new Map([[0, "one"], [10, "two"], [25, "three"]]);
            let i = 0;
            const next = () => {
              if (i === frames.length) {
                peer.send({ type: "response.end", response_id: id });
                return;
              }
              const text = texts.get(i);
              if (text) {
                peer.send({
                  type: "transcript",
                  role: "agent",
                  text,
                  final: true,
                });
              }
              peer.send(frames[i++]);
              setTimeout(next, 10);
            };
            next();
          } else if (
            typeof msg.text === "string" && msg.text.startsWith("speak")
          ) {
            const rate = options.agentRate ?? 16000;
            const long = msg.text !== "speak";
            for (const f of toneFrames(long ? 1.8 : 0.6, rate)) peer.send(f);
            if (msg.text === "speak long") open = id;
            else if (msg.text === "speak cancel") {
              setTimeout(() => {
                peer.send({ type: "response.cancel", response_id: id });
                peer.send({ type: "response.end", response_id: id });
              }, 600);
            } else peer.send({ type: "response.end", response_id: id });
          } else {
            peer.send({
              type: "transcript",
              role: "agent",
              text: `you said ${msg.text}`,
              final: true,
            });
            peer.send(audio(800));
            peer.send(audio(800));
            peer.send({ type: "response.end", response_id: id });
          }
          return;
        }
        case "interrupt":
          if (open) {
            peer.send(audio(800)); // in flight: the adapter drops it
            peer.send({ type: "response.end", response_id: open });
            open = null;
          }
          return;
        case "session.end":
          if (!options.stubborn) peer.close(1000, "bye");
          return;
      }
    },
  });
}
