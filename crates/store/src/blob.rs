use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use hmac::{Hmac, Mac};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::prefix::PrefixStore;
use object_store::signer::Signer as _;
use object_store::{
    Attribute, Attributes, GetOptions, GetRange, ObjectStore, PutMultipartOptions, PutOptions,
    PutPayload,
};
use sha2::Sha256;

/// Errors of the blob store.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("blob not found")]
    NotFound,
    #[error("range not satisfiable")]
    BadRange,
    #[error("invalid blob key")]
    BadKey,
    #[error("object store: {0}")]
    Store(#[from] object_store::Error),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    #[error("storage configuration: {0}")]
    Config(String),
    /// A read ended before the blob's size: the connection broke.
    #[error("a read of {expected} bytes ended after {got}")]
    Truncated { expected: u64, got: u64 },
}

impl BlobError {
    /// The store failed for now rather than refused: its requests failed
    /// after their retries (unreachable, timing out, answering 5xx), or a
    /// disk is full. A fault that passes, unlike a missing blob or a bad
    /// key.
    pub fn is_unavailable(&self) -> bool {
        match self {
            BlobError::Store(object_store::Error::Generic { .. }) => true,
            BlobError::Io(e) => e.kind() == std::io::ErrorKind::StorageFull,
            BlobError::Truncated { .. } => true,
            _ => false,
        }
    }
}

/// A byte range requested by an HTTP `Range` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlobRange {
    /// `bytes=a-b` (inclusive).
    Bounded(u64, u64),
    /// `bytes=a-`.
    From(u64),
    /// `bytes=-n`: the last n bytes.
    Suffix(u64),
}

impl BlobRange {
    /// Parses a single-range `Range` header value. Multi-range requests are
    /// answered with the whole file (allowed by RFC 9110), hence `None`.
    pub fn parse(header: &str) -> Option<BlobRange> {
        let spec = header.trim().strip_prefix("bytes=")?;
        if spec.contains(',') {
            return None;
        }
        let (a, b) = spec.split_once('-')?;
        let (a, b) = (a.trim(), b.trim());
        match (a.is_empty(), b.is_empty()) {
            (true, false) => b.parse().ok().map(BlobRange::Suffix),
            (false, true) => a.parse().ok().map(BlobRange::From),
            (false, false) => Some(BlobRange::Bounded(a.parse().ok()?, b.parse().ok()?)),
            (true, true) => None,
        }
    }

    /// The half-open byte range within a blob of `size` bytes, if satisfiable.
    pub fn resolve(self, size: u64) -> Option<Range<u64>> {
        let r = match self {
            // A last byte past the end means the end (RFC 9110 14.1.2).
            BlobRange::Bounded(a, b) if a <= b => a..b.saturating_add(1).min(size),
            BlobRange::Bounded(..) => return None,
            BlobRange::From(a) => a..size,
            BlobRange::Suffix(n) if n > 0 => size.saturating_sub(n)..size,
            BlobRange::Suffix(_) => return None,
        };
        (r.start < size && r.start < r.end).then_some(r)
    }
}

/// A blob's bytes (possibly a range of them) as a stream.
pub struct BlobRead {
    pub size: u64,
    pub range: Range<u64>,
    pub stream: BoxStream<'static, Result<Bytes, BlobError>>,
}

/// Where job outputs live: a local directory by default, any `object_store`
/// backend for scale-out. Keys are relative paths such as
/// `jobs/job_x/output.mp3`.
#[derive(Clone)]
pub struct BlobStore {
    store: Arc<dyn ObjectStore>,
    /// The directory of a local store: its blobs are plain files, linked
    /// into a job's scratch directory for the tools to read.
    root: Option<PathBuf>,
    /// An S3 store, which can hand out presigned URLs of its objects.
    s3: Option<S3>,
}

/// An S3 bucket and the prefix this deployment's keys live under.
#[derive(Clone)]
struct S3 {
    bucket: Arc<AmazonS3>,
    prefix: Option<ObjectPath>,
}

impl BlobStore {
    /// The store `url` names: empty, a path or `file:///dir` is a local
    /// directory (empty: `default_dir`); `s3://bucket/prefix` is an S3
    /// bucket (any S3-compatible service), configured by the standard
    /// `AWS_*` variables (`AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY`, `AWS_REGION`, `AWS_ALLOW_HTTP`, …) and then
    /// by `options` (the same keys in lower case, `aws_endpoint` …). A
    /// request to S3 is retried with backoff for at most `retry` before it
    /// fails ([`BlobError::is_unavailable`]).
    pub fn open(
        url: &str,
        default_dir: &Path,
        options: &std::collections::BTreeMap<String, String>,
        retry: std::time::Duration,
    ) -> Result<Self, BlobError> {
        if url.is_empty() {
            return Self::local(default_dir);
        }
        if let Some(dir) = url.strip_prefix("file://") {
            return Self::local(Path::new(dir));
        }
        let Some(rest) = url.strip_prefix("s3://") else {
            if url.contains("://") {
                return Err(BlobError::Config(
                    "storage_url must be a directory, file:///dir or s3://bucket/prefix".into(),
                ));
            }
            return Self::local(Path::new(url));
        };
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(BlobError::Config("storage_url names no bucket".into()));
        }
        let mut builder = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            // Retried for `retry` whatever fails: the count would otherwise
            // end it first (ten quick retries of a refused connection take
            // about 3 s).
            .with_retry(object_store::RetryConfig {
                retry_timeout: retry,
                max_retries: 1000,
                ..Default::default()
            });
        for (key, value) in options {
            let key = key
                .to_ascii_lowercase()
                .parse()
                .map_err(|_| BlobError::Config(format!("unknown storage option `{key}`")))?;
            builder = builder.with_config(key, value);
        }
        let bucket = Arc::new(builder.build()?);
        let prefix = prefix.trim_matches('/');
        let prefix = if prefix.is_empty() {
            None
        } else {
            Some(Self::path(prefix)?)
        };
        let whole: Arc<dyn ObjectStore> = bucket.clone();
        let store: Arc<dyn ObjectStore> = match &prefix {
            Some(p) => Arc::new(PrefixStore::new(whole, p.clone())),
            None => whole,
        };
        Ok(Self {
            store,
            root: None,
            s3: Some(S3 { bucket, prefix }),
        })
    }

    /// A URL at which the store itself serves `key` for `ttl` (an S3
    /// presigned GET), or `None` for a store that cannot make one.
    pub async fn presigned_url(
        &self,
        key: &str,
        ttl: std::time::Duration,
    ) -> Result<Option<String>, BlobError> {
        let Some(s3) = &self.s3 else {
            return Ok(None);
        };
        let path = Self::path(key)?;
        let full: ObjectPath = match &s3.prefix {
            Some(prefix) => prefix.parts().chain(path.parts()).collect(),
            None => path,
        };
        let url = s3.bucket.signed_url(http::Method::GET, &full, ttl).await?;
        Ok(Some(url.to_string()))
    }

    /// The keys stored under `prefix` (a directory of keys such as
    /// `jobs/job_x`), for sweeps and checks.
    pub async fn list(&self, prefix: &str) -> Result<Vec<String>, BlobError> {
        use futures::TryStreamExt;
        let prefix = Self::path(prefix)?;
        let metas: Vec<_> = self.store.list(Some(&prefix)).try_collect().await?;
        Ok(metas.into_iter().map(|m| m.location.to_string()).collect())
    }

    /// What a put records with the object: its content type, so that a
    /// presigned URL serves it as such (a local store keeps none).
    fn attributes(&self, key: &str) -> Attributes {
        let mut attributes = Attributes::new();
        if self.s3.is_some() {
            attributes.insert(Attribute::ContentType, content_type_for(key).into());
        }
        attributes
    }

    /// A store rooted at a local directory (created when missing).
    pub fn local(dir: &Path) -> Result<Self, BlobError> {
        std::fs::create_dir_all(dir)?;
        let fs = LocalFileSystem::new_with_prefix(dir)?.with_automatic_cleanup(true);
        Ok(Self {
            store: Arc::new(fs),
            root: Some(std::fs::canonicalize(dir)?),
            s3: None,
        })
    }

    /// Wraps any object store (S3, GCS, in-memory for tests).
    pub fn from_store(store: Arc<dyn ObjectStore>) -> Self {
        Self {
            store,
            root: None,
            s3: None,
        }
    }

    /// The file holding a blob on a local store.
    fn local_path(&self, key: &str) -> Result<Option<PathBuf>, BlobError> {
        let path = Self::path(key)?;
        Ok(self.root.as_ref().map(|root| root.join(path.as_ref())))
    }

    fn path(key: &str) -> Result<ObjectPath, BlobError> {
        if key.is_empty()
            || key
                .split('/')
                .any(|p| p.is_empty() || p == "." || p == "..")
        {
            return Err(BlobError::BadKey);
        }
        ObjectPath::parse(key).map_err(|_| BlobError::BadKey)
    }

    /// Stores `bytes` under `key`, replacing what was there.
    pub async fn put(&self, key: &str, bytes: Bytes) -> Result<(), BlobError> {
        let opts = PutOptions {
            attributes: self.attributes(key),
            ..PutOptions::default()
        };
        self.store
            .put_opts(&Self::path(key)?, PutPayload::from(bytes), opts)
            .await?;
        Ok(())
    }

    /// Stores a local file under `key` in parts, so memory use stays bounded
    /// whatever the file's size.
    /// On a local store the file is copied beside its place (by the kernel,
    /// `copy_file_range`) and renamed, so readers never see a partial blob.
    pub async fn put_file(&self, key: &str, file: &Path) -> Result<(), BlobError> {
        use tokio::io::AsyncReadExt;
        if let Some(dest) = self.local_path(key)? {
            let dir = dest.parent().ok_or(BlobError::BadKey)?;
            tokio::fs::create_dir_all(dir).await?;
            let name = dest.file_name().ok_or(BlobError::BadKey)?.to_string_lossy();
            let nonce: u64 = rand::random();
            let part = dir.join(format!(".{name}.{nonce:016x}.part"));
            let moved = match tokio::fs::copy(file, &part).await {
                Ok(_) => tokio::fs::rename(&part, &dest).await,
                Err(e) => Err(e),
            };
            if let Err(e) = moved {
                let _ = tokio::fs::remove_file(&part).await;
                return Err(e.into());
            }
            return Ok(());
        }
        let opts = PutMultipartOptions {
            attributes: self.attributes(key),
            ..PutMultipartOptions::default()
        };
        let upload = self
            .store
            .put_multipart_opts(&Self::path(key)?, opts)
            .await?;
        let mut writer = object_store::WriteMultipart::new_with_chunk_size(upload, 8 * 1024 * 1024);
        let mut f = tokio::fs::File::open(file).await?;
        let mut buf = vec![0u8; 1024 * 1024];
        loop {
            let n = f.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            writer.wait_for_capacity(4).await?;
            writer.write(&buf[..n]);
        }
        writer.finish().await?;
        Ok(())
    }

    /// Reads a blob, or a range of it.
    pub async fn get(&self, key: &str, range: Option<BlobRange>) -> Result<BlobRead, BlobError> {
        let path = Self::path(key)?;
        let meta = self.store.head(&path).await.map_err(not_found)?;
        let size = meta.size;
        let range = match range {
            Some(r) => r.resolve(size).ok_or(BlobError::BadRange)?,
            None => 0..size,
        };
        let opts = GetOptions {
            range: (range != (0..size)).then(|| GetRange::Bounded(range.clone())),
            ..GetOptions::default()
        };
        let result = self.store.get_opts(&path, opts).await.map_err(not_found)?;
        let stream = result
            .into_stream()
            .map(|r| r.map_err(BlobError::from))
            .boxed();
        Ok(BlobRead {
            size,
            range,
            stream,
        })
    }

    /// The blob's bytes at `scratch` (a path in the job's own directory),
    /// for tools that read files: the tools run in that directory, which
    /// holds only the job's inputs. On a local store the blob's file is
    /// linked there (hard link, or a symbolic link across file systems: to
    /// be read, never written); other stores download it.
    pub async fn readable_file(&self, key: &str, scratch: &Path) -> Result<PathBuf, BlobError> {
        match self.local_path(key)? {
            Some(path) => {
                match tokio::fs::metadata(&path).await {
                    Ok(m) if m.is_file() => {}
                    _ => return Err(BlobError::NotFound),
                }
                if tokio::fs::hard_link(&path, scratch).await.is_err() {
                    tokio::fs::symlink(&path, scratch).await?;
                }
            }
            None => self.download_to(key, scratch).await?,
        }
        Ok(scratch.to_owned())
    }

    /// Copies a blob into a local file, streaming (bounded memory).
    pub async fn download_to(&self, key: &str, dest: &Path) -> Result<(), BlobError> {
        use tokio::io::AsyncWriteExt;
        let mut read = self.get(key, None).await?;
        let mut file = tokio::fs::File::create(dest).await?;
        let mut got = 0u64;
        while let Some(chunk) = read.stream.next().await {
            let chunk = chunk?;
            got += chunk.len() as u64;
            file.write_all(&chunk).await?;
        }
        file.flush().await?;
        // Never a short copy passed off as the blob.
        let expected = read.range.end - read.range.start;
        if got != expected {
            return Err(BlobError::Truncated { expected, got });
        }
        Ok(())
    }

    /// True when a blob is stored under `key`.
    pub async fn exists(&self, key: &str) -> Result<bool, BlobError> {
        match self.store.head(&Self::path(key)?).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Reads a whole blob into memory (small blobs only).
    pub async fn get_bytes(&self, key: &str) -> Result<Bytes, BlobError> {
        let result = self.store.get(&Self::path(key)?).await.map_err(not_found)?;
        Ok(result.bytes().await?)
    }

    /// Deletes a blob; deleting a missing blob is not an error.
    pub async fn delete(&self, key: &str) -> Result<(), BlobError> {
        match self.store.delete(&Self::path(key)?).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

fn not_found(e: object_store::Error) -> BlobError {
    match e {
        object_store::Error::NotFound { .. } => BlobError::NotFound,
        e => BlobError::Store(e),
    }
}

/// Content type served for a blob, from its extension.
pub fn content_type_for(key: &str) -> &'static str {
    match key.rsplit('.').next().unwrap_or("") {
        "mp3" => "audio/mpeg",
        "wav" => "audio/wav",
        "ogg" | "opus" => "audio/ogg",
        "flac" => "audio/flac",
        "pcm" => "audio/L16",
        "m4a" | "aac" => "audio/mp4",
        "mp4" => "video/mp4",
        "webm" => "video/webm",
        "mov" => "video/quicktime",
        "mkv" => "video/x-matroska",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "webp" => "image/webp",
        "json" => "application/json",
        "srt" => "application/x-subrip",
        "vtt" => "text/vtt",
        "txt" => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Why a signed URL was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignedUrlError {
    #[error("invalid signature")]
    Invalid,
    #[error("expired")]
    Expired,
}

/// Signs blob URLs with HMAC-SHA256 over `key` and the expiry time, so a URL
/// cannot be altered to reach another blob or to live longer.
#[derive(Clone)]
pub struct Signer {
    secret: Arc<Vec<u8>>,
}

impl Signer {
    pub fn new(secret: &[u8]) -> Self {
        Self {
            secret: Arc::new(secret.to_vec()),
        }
    }

    fn mac(&self, key: &str, expires: i64) -> Hmac<Sha256> {
        let mut mac =
            Hmac::<Sha256>::new_from_slice(&self.secret).expect("hmac takes any key length");
        mac.update(key.as_bytes());
        mac.update(b"\n");
        mac.update(expires.to_string().as_bytes());
        mac
    }

    /// Hex signature of `key` valid until `expires` (Unix seconds).
    pub fn sign(&self, key: &str, expires: i64) -> String {
        hex::encode(self.mac(key, expires).finalize().into_bytes())
    }

    /// Checks a signature (in constant time), then the expiry.
    pub fn verify(
        &self,
        key: &str,
        expires: i64,
        signature: &str,
        now: i64,
    ) -> Result<(), SignedUrlError> {
        let sig = hex::decode(signature).map_err(|_| SignedUrlError::Invalid)?;
        self.mac(key, expires)
            .verify_slice(&sig)
            .map_err(|_| SignedUrlError::Invalid)?;
        if now > expires {
            return Err(SignedUrlError::Expired);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RETRY: std::time::Duration = std::time::Duration::from_secs(1);

    /// A last byte beyond the file (even u64::MAX) means its end.
    #[test]
    fn ranges_past_the_end_are_clamped() {
        let r = BlobRange::parse("bytes=0-18446744073709551615").unwrap();
        assert_eq!(r.resolve(100), Some(0..100));
        assert_eq!(
            BlobRange::parse("bytes=90-1000").unwrap().resolve(100),
            Some(90..100)
        );
        assert_eq!(
            BlobRange::parse("bytes=100-200").unwrap().resolve(100),
            None
        );
    }

    #[test]
    fn storage_urls_name_a_directory_or_a_bucket() {
        let dir = tempfile::tempdir().unwrap();
        let none = std::collections::BTreeMap::new();
        let local = BlobStore::open("", dir.path(), &none, RETRY).unwrap();
        assert!(local.root.is_some() && local.s3.is_none());
        let url = format!("file://{}", dir.path().join("x").display());
        assert!(BlobStore::open(&url, dir.path(), &none, RETRY)
            .unwrap()
            .root
            .is_some());
        for bad in ["gs://bucket", "s3://", "s3:///prefix"] {
            assert!(
                matches!(
                    BlobStore::open(bad, dir.path(), &none, RETRY),
                    Err(BlobError::Config(_))
                ),
                "{bad}"
            );
        }
        let typo = [("aws_endpont".to_owned(), "http://x".to_owned())].into();
        assert!(matches!(
            BlobStore::open("s3://b/p", dir.path(), &typo, RETRY),
            Err(BlobError::Config(_))
        ));
        let s3 = BlobStore::open("s3://b/p/q", dir.path(), &none, RETRY).unwrap();
        assert_eq!(s3.s3.unwrap().prefix.unwrap().as_ref(), "p/q");
    }

    #[test]
    fn ranges_parse_and_resolve() {
        assert_eq!(
            BlobRange::parse("bytes=0-9").unwrap().resolve(100),
            Some(0..10)
        );
        assert_eq!(
            BlobRange::parse("bytes=90-").unwrap().resolve(100),
            Some(90..100)
        );
        assert_eq!(
            BlobRange::parse("bytes=-10").unwrap().resolve(100),
            Some(90..100)
        );
        assert_eq!(
            BlobRange::parse("bytes=50-500").unwrap().resolve(100),
            Some(50..100)
        );
        assert_eq!(BlobRange::parse("bytes=100-").unwrap().resolve(100), None);
        assert_eq!(BlobRange::parse("bytes=9-1").unwrap().resolve(100), None);
        assert_eq!(BlobRange::parse("bytes=0-1,5-6"), None);
        assert_eq!(BlobRange::parse("items=0-1"), None);
    }

    #[test]
    fn signatures_detect_tampering_and_expiry() {
        let s = Signer::new(b"secret");
        let sig = s.sign("jobs/a/out.mp3", 1000);
        assert_eq!(s.verify("jobs/a/out.mp3", 1000, &sig, 999), Ok(()));
        assert_eq!(
            s.verify("jobs/b/out.mp3", 1000, &sig, 999),
            Err(SignedUrlError::Invalid)
        );
        assert_eq!(
            s.verify("jobs/a/out.mp3", 2000, &sig, 999),
            Err(SignedUrlError::Invalid)
        );
        assert_eq!(
            s.verify("jobs/a/out.mp3", 1000, &sig, 1001),
            Err(SignedUrlError::Expired)
        );
        assert_eq!(
            s.verify("jobs/a/out.mp3", 1000, "zz", 0),
            Err(SignedUrlError::Invalid)
        );
    }

    #[tokio::test]
    async fn local_store_round_trip_with_range() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::local(dir.path()).unwrap();
        store
            .put("jobs/j1/out.txt", Bytes::from_static(b"0123456789"))
            .await
            .unwrap();
        let read = store
            .get("jobs/j1/out.txt", Some(BlobRange::Bounded(2, 4)))
            .await
            .unwrap();
        assert_eq!((read.size, read.range.clone()), (10, 2..5));
        let chunks: Vec<_> = read.stream.collect().await;
        let bytes: Vec<u8> = chunks
            .into_iter()
            .flat_map(|c| c.unwrap().to_vec())
            .collect();
        assert_eq!(bytes, b"234");
        assert!(matches!(
            store.get("jobs/none", None).await,
            Err(BlobError::NotFound)
        ));
        assert!(matches!(
            store.get("../etc/passwd", None).await,
            Err(BlobError::BadKey)
        ));
    }

    /// Files go into a local store whole (copied, then renamed) and are
    /// linked into the scratch path; other stores download there.
    #[tokio::test]
    async fn files_are_linked_into_the_scratch_path() {
        let dir = tempfile::tempdir().unwrap();
        let store = BlobStore::local(&dir.path().join("blobs")).unwrap();
        let src = dir.path().join("out.mp4");
        std::fs::write(&src, b"picture").unwrap();
        store.put_file("jobs/j1/out.mp4", &src).await.unwrap();
        std::fs::write(&src, b"changed later").unwrap();
        let scratch = dir.path().join("scratch");
        let path = store
            .readable_file("jobs/j1/out.mp4", &scratch)
            .await
            .unwrap();
        assert_eq!(path, scratch);
        assert_eq!(std::fs::read(&path).unwrap(), b"picture");
        assert_eq!(store.get_bytes("jobs/j1/out.mp4").await.unwrap().len(), 7);
        let stored = std::fs::canonicalize(dir.path())
            .unwrap()
            .join("blobs/jobs/j1");
        let leftovers: Vec<_> = std::fs::read_dir(stored).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no partial files remain");
        std::fs::remove_file(&scratch).unwrap();
        assert!(matches!(
            store.readable_file("jobs/j1/none.mp4", &scratch).await,
            Err(BlobError::NotFound)
        ));

        let memory = BlobStore::from_store(Arc::new(object_store::memory::InMemory::new()));
        memory.put_file("jobs/j2/out.mp4", &src).await.unwrap();
        let path = memory
            .readable_file("jobs/j2/out.mp4", &scratch)
            .await
            .unwrap();
        assert_eq!(path, scratch);
        assert_eq!(std::fs::read(&scratch).unwrap(), b"changed later");
    }
}
