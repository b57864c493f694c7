/**
 * The playback clock of WebRTC playback (./webrtc.ts): `media_time_ms` there is the
 * sender's wall clock when the encoder took the audio, and the audio plays later by
 * the network's and the receiver's delay — `Date.now()` less that lag is what is heard
 * now. The receiver's jitter-buffer delay (`playoutDelayMs`) is the lag while audio
 * flows evenly; after a stall upstream (a loaded server's encoder) the audio arrives in
 * a burst and plays out at real time behind it, hundreds of ms later than that says.
 * So each speech start measures the lag: from its `avatar.speaking` until its audio is
 * heard — the received audio's energy (`totalAudioEnergy`) rising to the audible level
 * after silence — the clock holds before the speech's time, then goes on with the lag
 * measured (its end and captions follow it). Where the browser reports no audio
 * energy, or no onset comes within `ONSET_SLACK_MS` past the lag expected, the clock
 * goes on with the lag it had.
 */

/** How often the received audio's energy is read while a speech start is awaited (ms). */
export const ENERGY_POLL_MS = 20;
/** The audible level (RMS, 1 = full scale): -40 dBFS, as the server's `avatar.speaking`. */
export const AUDIBLE_RMS = 0.01;
/** How long past its expected time a speech start's onset is awaited (ms). */
export const ONSET_SLACK_MS = 800;
/** A lag measured above this is not a speech start's (ms). */
export const MAX_LAG_MS = 5_000;

/** The received audio's total energy and when it was read (epoch ms). */
export interface RtcEnergy {
  energy: number;
  at: number;
}

export interface RtcClockSource {
  /** The receiver's jitter-buffer delay now (ms). */
  playoutDelayMs(): number;
  /**
   * The received audio's total energy (`totalAudioEnergy`, seconds × level²) and when
   * it was read; null when the browser reports none.
   */
  audioEnergy(): Promise<RtcEnergy | null>;
}

export class RtcClock {
  /** The lag measured at the last speech start (ms); null before one. */
  #lag: number | null = null;
  /** A speech start awaited: its time, and the previous energy read. */
  #awaiting: {
    mediaTimeMs: number;
    last: RtcEnergy | null;
    silent: boolean;
  } | null = null;

  /** `onHeard`: a held clock moved on (what was due may fire now). */
  constructor(
    private readonly source: RtcClockSource,
    private readonly onHeard: () => void,
    private readonly wallNow: () => number = Date.now,
  ) {}

  /** The lag in use (ms): the last speech start's, else the jitter buffer's delay. */
  get lagMs(): number {
    return this.#lag ?? this.source.playoutDelayMs();
  }

  /** Where playback is, in `media_time_ms` units: held short of an awaited speech. */
  now(): number {
    const t = this.wallNow() - this.lagMs;
    const a = this.#awaiting;
    return a ? Math.min(t, a.mediaTimeMs - 1) : t;
  }

  /** An `avatar.speaking` start at `mediaTimeMs` came: its onset sets the lag. */
  speechStarts(mediaTimeMs: number): void {
    // This start is awaited while `#awaiting` is this object: a newer start or a
    // reset replaces it, and its polls stop.
    const a = { mediaTimeMs, last: null as RtcEnergy | null, silent: false };
    this.#awaiting = a;
    const deadline = mediaTimeMs + this.lagMs + ONSET_SLACK_MS;
    const poll = async () => {
      if (this.#awaiting !== a) return;
      const read = await this.source.audioEnergy().catch(() => null);
      if (this.#awaiting !== a) return;
      if (!read) return this.#release(null);
      const last = a.last;
      a.last = read;
      if (last && read.at > last.at) {
        const level = Math.sqrt(
          Math.max(0, read.energy - last.energy) / ((read.at - last.at) / 1000),
        );
        if (level < AUDIBLE_RMS) a.silent = true;
        else if (a.silent) {
          const lag = read.at - a.mediaTimeMs;
          return this.#release(lag >= 0 && lag <= MAX_LAG_MS ? lag : null);
        }
      }
      if (this.wallNow() >= deadline) return this.#release(null);
      setTimeout(poll, ENERGY_POLL_MS);
    };
    void poll();
  }

  /** A new stream or PeerConnection: nothing awaited, the lag measured again. */
  reset(): void {
    this.#awaiting = null;
    this.#lag = null;
  }

  #release(lag: number | null): void {
    if (lag !== null) this.#lag = lag;
    this.#awaiting = null;
    this.onHeard();
  }
}
