/**
 * Drawing the avatar on a canvas: opaque frames with a 2D context, and the transparent
 * background's stacked-alpha frames (DECISIONS 6: the coded picture twice the avatar's
 * height, colour on top with the background black, the alpha as luma below) composited
 * with WebGL into a canvas with an alpha channel, so the page behind shows through.
 * Used by WebCodecs playback for every frame, and by the `<video>` paths (MSE, WebRTC)
 * for a transparent avatar: the hidden video's frames are drawn as they are presented.
 */

/** Draws one decoded picture (a `VideoFrame` or a playing `<video>`). */
export interface PictureCanvas {
  draw(source: VideoFrame | HTMLVideoElement): void;
  close(): void;
}

/** A 2D canvas of the picture's size. */
export function opaqueCanvas(
  canvas: HTMLCanvasElement,
  width: number,
  height: number,
): PictureCanvas {
  canvas.width = width;
  canvas.height = height;
  const ctx = canvas.getContext("2d", { alpha: false });
  if (!ctx) throw new Error("This browser gives no 2D canvas");
  return {
    draw: (s) => ctx.drawImage(s, 0, 0, width, height),
    close: () => {},
  };
}

const VERTEX = `
attribute vec2 p;
varying vec2 uv;
void main() {
  uv = vec2((p.x + 1.0) * 0.5, (1.0 - p.y) * 0.5);
  gl_Position = vec4(p, 0.0, 1.0);
}`;

/*
 * The colour half is premultiplied (drawn over black). The alpha half is coded as full
 * range luma, but browsers convert every pixel with the BT.601 limited-range matrix,
 * which maps luma 16..235 to 0..1 (and clips beyond): that value is used as alpha as is,
 * so coded 0..16 is fully transparent and 235..255 fully opaque.
 */
const FRAGMENT = `
precision mediump float;
uniform sampler2D t;
varying vec2 uv;
void main() {
  vec3 rgb = texture2D(t, vec2(uv.x, uv.y * 0.5)).rgb;
  float a = texture2D(t, vec2(uv.x, 0.5 + uv.y * 0.5)).g;
  gl_FragColor = vec4(min(rgb, vec3(a)), a);
}`;

/**
 * A WebGL canvas showing stacked-alpha pictures of `width`×`codedHeight` as
 * `width`×`codedHeight / 2` with transparency. Throws when WebGL is unavailable.
 */
export function stackedAlphaCanvas(
  canvas: HTMLCanvasElement,
  width: number,
  codedHeight: number,
): PictureCanvas {
  canvas.width = width;
  canvas.height = codedHeight >> 1;
  const gl = canvas.getContext("webgl", {
    alpha: true,
    premultipliedAlpha: true,
    antialias: false,
    preserveDrawingBuffer: true,
  });
  if (!gl) throw new Error("This browser gives no WebGL canvas");
  const program = gl.createProgram()!;
  for (
    const [type, src] of [[gl.VERTEX_SHADER, VERTEX], [
      gl.FRAGMENT_SHADER,
      FRAGMENT,
    ]] as const
  ) {
    const s = gl.createShader(type)!;
    gl.shaderSource(s, src);
    gl.compileShader(s);
    if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) {
      throw new Error(`shader: ${gl.getShaderInfoLog(s)}`);
    }
    gl.attachShader(program, s);
  }
  gl.linkProgram(program);
  gl.useProgram(program);
  const buf = gl.createBuffer();
  gl.bindBuffer(gl.ARRAY_BUFFER, buf);
  gl.bufferData(
    gl.ARRAY_BUFFER,
    new Float32Array([-1, -1, 1, -1, -1, 1, 1, 1]),
    gl.STATIC_DRAW,
  );
  const p = gl.getAttribLocation(program, "p");
  gl.enableVertexAttribArray(p);
  gl.vertexAttribPointer(p, 2, gl.FLOAT, false, 0, 0);
  const tex = gl.createTexture();
  gl.bindTexture(gl.TEXTURE_2D, tex);
  // One texel per canvas pixel: nearest keeps the two halves from bleeding together.
  for (const k of [gl.TEXTURE_MIN_FILTER, gl.TEXTURE_MAG_FILTER]) {
    gl.texParameteri(gl.TEXTURE_2D, k, gl.NEAREST);
  }
  for (const k of [gl.TEXTURE_WRAP_S, gl.TEXTURE_WRAP_T]) {
    gl.texParameteri(gl.TEXTURE_2D, k, gl.CLAMP_TO_EDGE);
  }
  gl.viewport(0, 0, canvas.width, canvas.height);
  return {
    draw(source) {
      gl.texImage2D(
        gl.TEXTURE_2D,
        0,
        gl.RGBA,
        gl.RGBA,
        gl.UNSIGNED_BYTE,
        source,
      );
      gl.drawArrays(gl.TRIANGLE_STRIP, 0, 4);
    },
    close() {
      gl.deleteTexture(tex);
      gl.deleteBuffer(buf);
      gl.deleteProgram(program);
    },
  };
}

/**
 * Stacked-alpha pictures composited on the CPU into a 2D canvas, where WebGL is not
 * available (e.g. headless Firefox): the picture drawn into a scratch canvas, each
 * pixel's colour un-premultiplied by the alpha read from the bottom half.
 */
export function stackedAlphaCanvas2d(
  canvas: HTMLCanvasElement,
  width: number,
  codedHeight: number,
): PictureCanvas {
  const height = codedHeight >> 1;
  canvas.width = width;
  canvas.height = height;
  const ctx = canvas.getContext("2d");
  const scratch = document.createElement("canvas");
  scratch.width = width;
  scratch.height = codedHeight;
  const sctx = scratch.getContext("2d", { willReadFrequently: true });
  if (!ctx || !sctx) throw new Error("This browser gives no 2D canvas");
  const out = ctx.createImageData(width, height);
  const o = out.data;
  return {
    draw(source) {
      sctx.drawImage(source, 0, 0, width, codedHeight);
      const px = sctx.getImageData(0, 0, width, codedHeight).data;
      const n = width * height * 4;
      for (let i = 0; i < n; i += 4) {
        const a = px[n + i + 1];
        const k = a > 0 ? 255 / a : 0;
        o[i] = Math.min(255, px[i] * k);
        o[i + 1] = Math.min(255, px[i + 1] * k);
        o[i + 2] = Math.min(255, px[i + 2] * k);
        o[i + 3] = a;
      }
      ctx.putImageData(out, 0, 0);
    },
    close: () => {},
  };
}

/** A stacked-alpha canvas: WebGL, else the CPU compositor. */
export function alphaCanvas(
  canvas: HTMLCanvasElement,
  width: number,
  codedHeight: number,
): PictureCanvas {
  try {
    return stackedAlphaCanvas(canvas, width, codedHeight);
  } catch {
    return stackedAlphaCanvas2d(canvas, width, codedHeight);
  }
}

/** The canvas for a picture of `width`×`height` (coded; stacked when `alpha`). */
export function pictureCanvas(
  canvas: HTMLCanvasElement,
  alpha: boolean,
  width: number,
  height: number,
): PictureCanvas {
  return alpha
    ? alphaCanvas(canvas, width, height)
    : opaqueCanvas(canvas, width, height);
}

type VideoWithFrames = HTMLVideoElement & {
  requestVideoFrameCallback?: (cb: () => void) => number;
  cancelVideoFrameCallback?: (id: number) => void;
};

/**
 * Draws a (hidden) `<video>`'s frames onto a stacked-alpha canvas as they are
 * presented: the MSE and WebRTC paths of a transparent avatar.
 */
export class VideoCompositor {
  #pic: PictureCanvas | null = null;
  #size = "";
  #handle = 0;
  #stopped = false;

  constructor(
    private readonly video: HTMLVideoElement,
    private readonly canvas: HTMLCanvasElement,
  ) {
    this.#next();
  }

  #next(): void {
    if (this.#stopped) return;
    const v = this.video as VideoWithFrames;
    const cb = () => {
      this.#draw();
      this.#next();
    };
    this.#handle = typeof v.requestVideoFrameCallback === "function"
      ? v.requestVideoFrameCallback(cb)
      : requestAnimationFrame(cb);
  }

  #draw(): void {
    const v = this.video;
    if (v.videoWidth === 0 || v.videoHeight === 0) return;
    const size = `${v.videoWidth}x${v.videoHeight}`;
    if (size !== this.#size) {
      this.#pic?.close();
      this.#pic = alphaCanvas(this.canvas, v.videoWidth, v.videoHeight);
      this.#size = size;
    }
    this.#pic!.draw(v);
  }

  stop(): void {
    this.#stopped = true;
    const v = this.video as VideoWithFrames;
    if (typeof v.cancelVideoFrameCallback === "function") {
      v.cancelVideoFrameCallback(this.#handle);
    } else cancelAnimationFrame(this.#handle);
    this.#pic?.close();
    this.#pic = null;
  }
}

/**
 * Where the avatar shows: the `<video>`, or a canvas in its place — the page's, or one
 * put after the video with its classes and `avatar-canvas` — once something draws
 * there (WebCodecs, a transparent avatar), the video then hidden (it may still play).
 */
export class AvatarSurface {
  #canvas: HTMLCanvasElement | null = null;
  #own = false;
  #compositor: VideoCompositor | null = null;

  constructor(
    private readonly video: HTMLVideoElement,
    private readonly given?: HTMLCanvasElement,
  ) {}

  /** The canvas, shown in place of the video. */
  canvas(): HTMLCanvasElement {
    if (this.#canvas) return this.#canvas;
    let canvas = this.given;
    if (!canvas) {
      canvas = document.createElement("canvas");
      canvas.className = `${this.video.className} avatar-canvas`.trim();
      this.video.after(canvas);
      this.#own = true;
    }
    canvas.hidden = false;
    this.video.hidden = true;
    this.#canvas = canvas;
    return canvas;
  }

  /** A `<video>` path of a transparent avatar: its frames drawn onto the canvas. */
  composite(): void {
    this.#compositor ??= new VideoCompositor(this.video, this.canvas());
  }

  /** Stops drawing, removes a canvas of its own and shows the video again. */
  close(): void {
    this.#compositor?.stop();
    this.#compositor = null;
    if (this.#canvas) {
      if (this.#own) this.#canvas.remove();
      this.video.hidden = false;
    }
    this.#canvas = null;
  }
}
