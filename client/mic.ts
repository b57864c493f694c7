/**
 * Microphone capture for the browser client: `getUserMedia` → AudioWorklet (mono Float32
 * blocks) → `PcmFramer` (resampled PCM16LE frames at the declared rate).
 */
import {
  PCM_WORKLET_PROCESSOR,
  PCM_WORKLET_SOURCE,
  PcmFramer,
} from "./pcm-worklet.ts";

export interface MicrophoneOptions {
  /** Rate the frames are produced at (what `audio.config` declares). */
  sampleRate: number;
  /** Length of one frame, ms. */
  frameMs: number;
  /** URL of the worklet module; default a Blob URL of `PCM_WORKLET_SOURCE`. */
  workletUrl?: string;
}

/** A running capture; frames go to the callback given to `start`. */
export class Microphone {
  private constructor(
    readonly sampleRate: number,
    private readonly ctx: AudioContext,
    private readonly stream: MediaStream,
    private readonly node: AudioWorkletNode,
  ) {}

  /** Asks for the microphone and starts capturing. Rejects when it is unavailable. */
  static async start(
    options: MicrophoneOptions,
    onFrames: (frames: Uint8Array[]) => void,
  ): Promise<Microphone> {
    const stream = await navigator.mediaDevices.getUserMedia({
      audio: {
        channelCount: 1,
        echoCancellation: true,
        noiseSuppression: true,
        autoGainControl: true,
      },
    });
    const ctx = new AudioContext();
    try {
      const blobUrl = options.workletUrl ? null : URL.createObjectURL(
        new Blob([PCM_WORKLET_SOURCE], { type: "text/javascript" }),
      );
      try {
        await ctx.audioWorklet.addModule(options.workletUrl ?? blobUrl!);
      } finally {
        if (blobUrl) URL.revokeObjectURL(blobUrl);
      }
      const framer = new PcmFramer(
        ctx.sampleRate,
        options.sampleRate,
        options.frameMs,
      );
      const node = new AudioWorkletNode(ctx, PCM_WORKLET_PROCESSOR, {
        processorOptions: {
          chunkSamples: Math.round(ctx.sampleRate * options.frameMs / 1000),
        },
      });
      node.port.onmessage = (e: MessageEvent<Float32Array>) => {
        const frames = framer.push(e.data);
        if (frames.length > 0) onFrames(frames);
      };
      // Started before the worklet runs: a state change of a context whose worklet
      // posts from its render thread deadlocked WebKitGTK's page (its main thread in
      // GStreamer's state change, the worklet waiting for the main thread).
      if (ctx.state !== "running") await ctx.resume();
      ctx.createMediaStreamSource(stream).connect(node);
      // Connected to the output (it writes silence) so the graph keeps pulling it.
      node.connect(ctx.destination);
      return new Microphone(options.sampleRate, ctx, stream, node);
    } catch (err) {
      stream.getTracks().forEach((t) => t.stop());
      void ctx.close();
      throw err;
    }
  }

  /** Disabled tracks capture silence (the browser's indicator stays on). */
  set enabled(on: boolean) {
    this.stream.getAudioTracks().forEach((t) => t.enabled = on);
  }

  /**
   * Resumes a context the browser suspended or interrupted (after a sleeping tab); a
   * running one is left alone (a takeover asked every time, and each resume is a
   * state change).
   */
  resume(): void {
    const state = this.ctx.state as string;
    if (state !== "running" && state !== "closed") void this.ctx.resume();
  }

  /** Ends the capture: the worklet stops before its context closes. */
  stop(): void {
    this.stream.getTracks().forEach((t) => t.stop());
    this.node.port.onmessage = null;
    this.node.disconnect();
    void this.ctx.close();
  }
}
