/**
 * Containment of the callbacks an engine connection runs from socket events and timers:
 * a throw (or an async callback's rejection) is handed to the connection, which fails
 * its own session, instead of reaching the event loop, where it would end the process.
 */
import type { EngineEvents } from "../ports/providers.ts";

/** The name of a thrown value, for a log line (its message may quote engine input). */
export function errorName(err: unknown): string {
  return err instanceof Error ? err.name : typeof err;
}

/**
 * `fn` made safe to call from an event handler: a throw, or a rejection of a promise it
 * returns (an async callback), goes to `onThrow` instead of the event loop.
 */
export function contained<A extends unknown[]>(
  fn: (...args: A) => unknown,
  onThrow: (err: unknown) => void,
): (...args: A) => void {
  return (...args) => {
    try {
      const out = fn(...args);
      if (out instanceof Promise) out.catch(onThrow);
    } catch (err) {
      onThrow(err);
    }
  };
}

/** `events` with every callback contained (`onFault` gets the callback's name). */
export function containEvents(
  events: EngineEvents,
  onFault: (where: string, err: unknown) => void,
): EngineEvents {
  const c = <A extends unknown[]>(
    where: keyof EngineEvents,
    fn: (...args: A) => unknown,
  ) => contained(fn, (err) => onFault(where, err));
  const bargeIn = events.onBargeIn;
  const cancel = events.onResponseCancel;
  return {
    onReady: c("onReady", (info) => events.onReady(info)),
    onResponseStart: c("onResponseStart", (id) => events.onResponseStart(id)),
    onAgentAudio: c(
      "onAgentAudio",
      (pcm, rate) => events.onAgentAudio(pcm, rate),
    ),
    onResponseEnd: c("onResponseEnd", (id) => events.onResponseEnd(id)),
    onTranscript: c("onTranscript", (t) => events.onTranscript(t)),
    onError: c("onError", (e) => events.onError(e)),
    onClose: c("onClose", (info) => events.onClose(info)),
    onBargeIn: bargeIn ? c("onBargeIn", () => bargeIn.call(events)) : undefined,
    onResponseCancel: cancel
      ? c("onResponseCancel", (id: string) => cancel.call(events, id))
      : undefined,
  };
}
