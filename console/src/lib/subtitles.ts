// Transcripts as files a person downloads: SRT, WebVTT and plain text,
// made from the segments with the speaker names as the person set them.

export interface Segment {
  start: number;
  end: number;
  text: string;
  speaker?: string | null;
}

function stamp(t: number, comma: boolean): string {
  const ms = Math.round(t * 1000);
  const h = Math.floor(ms / 3600000);
  const m = Math.floor((ms % 3600000) / 60000);
  const s = Math.floor((ms % 60000) / 1000);
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${pad(h)}:${pad(m)}:${pad(s)}${comma ? "," : "."}${pad(ms % 1000, 3)}`;
}

export function srt(segments: Segment[], name: (id: string) => string): string {
  return segments
    .map((s, i) => `${i + 1}\n${stamp(s.start, true)} --> ${stamp(s.end, true)}\n${s.speaker ? `[${name(s.speaker)}] ` : ""}${s.text.trim()}\n`)
    .join("\n");
}

export function vtt(segments: Segment[], name: (id: string) => string): string {
  const cues = segments.map((s) => `${stamp(s.start, false)} --> ${stamp(s.end, false)}\n${s.speaker ? `<v ${name(s.speaker).replace(/[<>]/g, "")}>` : ""}${s.text.trim()}\n`);
  return `WEBVTT\n\n${cues.join("\n")}`;
}

export function plain(segments: Segment[], name: (id: string) => string): string {
  const lines: string[] = [];
  let last: string | null | undefined;
  for (const s of segments) {
    if (s.speaker && s.speaker !== last) lines.push(`${name(s.speaker)}: ${s.text.trim()}`);
    else if (lines.length && s.speaker) lines[lines.length - 1] += ` ${s.text.trim()}`;
    else lines.push(s.text.trim());
    last = s.speaker;
  }
  return `${lines.join("\n")}\n`;
}

/** A link's address for text made here (revoked by the caller when done). */
export const textUrl = (text: string, type: string): string => URL.createObjectURL(new Blob([text], { type }));
