// The API's objects as the console reads them (docs/api.md is the
// reference; only the fields the pages use are named here).

export interface Page<T> {
  data: T[];
  pagination: { page: number; limit: number; total: number; hasMore: boolean };
}

export interface Account {
  id: string;
  name: string;
  credits: { balance: number; reserved: number; used: number };
  limits: { requestsPerMinute: number; requestsPerHour: number; maxConcurrentJobs: number };
  key: { id: string; level: "read" | "write" | "admin" };
  createdAt: string;
}

export interface Voice {
  id: string;
  name: string;
  language: string;
  languages: string[];
  gender: string;
  accent: string | null;
  engine: string;
  engineVoice: string | null;
  quality: string;
  sampleRate: number;
  description: string;
  previewUrl: string | null;
  category: "premade" | "cloned";
  labels: string[];
}

export type JobStatus = "queued" | "processing" | "completed" | "failed" | "cancelled";

export interface Job {
  id: string;
  kind: string;
  status: JobStatus;
  progress: number;
  result: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
  credits: number;
  attempts: number;
  createdAt: string;
  updatedAt: string;
  summary: string | null;
  fileId: string | null;
}

export interface LedgerEntry {
  id: number;
  entry: "grant" | "reserve" | "capture" | "release" | string;
  amount: number;
  balanceAfter: number;
  jobId: string | null;
  note: string | null;
  createdAt: string;
}

export interface ApiKey {
  id: string;
  name: string;
  level: "read" | "write" | "admin";
  prefix: string;
  status: "active" | "expired" | "revoked";
  createdAt: string;
  expiresAt: string | null;
  revokedAt: string | null;
}
