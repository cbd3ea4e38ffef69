// Live sessions from the browser: a WebSocket to this server opened with a
// single-use token (a browser cannot set headers on a WebSocket, so the
// signed-in key mints a token with POST /v1/tokens and the socket carries
// only that), and the microphone as 16-bit PCM.

import { api, withQuery } from "./api";

/** Opens the live session at `path` (a session of `kind`) with `query`. */
export async function openSession(
  kind: "stt.realtime" | "tts.realtime",
  path: string,
  query: Record<string, string | number | boolean | undefined>,
): Promise<WebSocket> {
  const { token } = await api<{ token: string }>("/v1/tokens", { method: "POST", body: { kind } });
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const socket = new WebSocket(`${scheme}//${location.host}${withQuery(path, { ...query, token })}`);
  socket.binaryType = "arraybuffer";
  await new Promise<void>((resolve, reject) => {
    socket.onopen = () => resolve();
    socket.onerror = () => reject(new Error("The live session could not be opened."));
  });
  return socket;
}

/** Why a session closed, in words, from its close code (docs/api.md). */
export function closedBecause(code: number, reason: string): string {
  switch (code) {
    case 1000:
    case 1005:
      return "";
    case 4402:
      return "The credits ran out, so the session ended. What was used is charged.";
    case 4408:
      return reason || "The session ended: nothing was received for a while.";
    case 1012:
      return "The server's worker went away. Start again to reconnect.";
    case 1013:
      return "The server fell behind. Try again in a moment.";
    default:
      return reason || `The session ended (code ${code}).`;
  }
}

/** The microphone, as 16-bit mono PCM frames at `rate`, each to `send`;
 * the returned function stops it. */
export async function microphone(rate: number, send: (pcm: ArrayBuffer) => void): Promise<() => void> {
  const stream = await navigator.mediaDevices.getUserMedia({ audio: { channelCount: 1, echoCancellation: true, noiseSuppression: true } });
  const context = new AudioContext();
  const source = context.createMediaStreamSource(stream);
  // A processor node needs no module file (which the page's policy would
  // have to allow); 4096 frames is about 0.1 s.
  const node = context.createScriptProcessor(4096, 1, 1);
  const step = context.sampleRate / rate;
  let carry = 0;
  node.onaudioprocess = (e) => {
    const input = e.inputBuffer.getChannelData(0);
    const out = new Int16Array(Math.floor((input.length - carry) / step) + 1);
    let n = 0;
    for (let t = carry; t < input.length; t += step) {
      // The mean over each output sample's span of input.
      const from = Math.floor(t);
      const to = Math.min(input.length, Math.floor(t + step));
      let sum = 0;
      for (let i = from; i < to; i++) sum += input[i];
      const v = Math.max(-1, Math.min(1, sum / Math.max(1, to - from)));
      out[n++] = v < 0 ? v * 0x8000 : v * 0x7fff;
      carry = t + step - input.length;
    }
    if (n) send(out.slice(0, n).buffer);
  };
  source.connect(node);
  node.connect(context.destination);
  return () => {
    node.disconnect();
    source.disconnect();
    stream.getTracks().forEach((t) => t.stop());
    void context.close();
  };
}

/** Plays 16-bit mono PCM at `rate` as it arrives, each piece after the last. */
export class PcmPlayer {
  private context = new AudioContext();
  private next = 0;
  constructor(private rate: number) {}

  play(bytes: ArrayBuffer): void {
    const samples = new Int16Array(bytes, 0, Math.floor(bytes.byteLength / 2));
    if (!samples.length) return;
    const buffer = this.context.createBuffer(1, samples.length, this.rate);
    const channel = buffer.getChannelData(0);
    for (let i = 0; i < samples.length; i++) channel[i] = samples[i] / 0x8000;
    const node = this.context.createBufferSource();
    node.buffer = buffer;
    node.connect(this.context.destination);
    this.next = Math.max(this.next, this.context.currentTime + 0.05);
    node.start(this.next);
    this.next += buffer.duration;
  }

  stop(): void {
    void this.context.close();
  }
}
