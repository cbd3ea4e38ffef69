//! Wake-ups across processes. On PostgreSQL the queue announces itself
//! with `NOTIFY`: a job queued (channel `mediagen_queued`, payload its
//! kind) and a job finished (channel `mediagen_finished`, payload its id),
//! and a streamed job's chunk written (channel `mediagen_chunk`, payload
//! its id), sent inside the transaction that made the change, so a listener hears
//! it exactly when the change is visible. Workers and synchronous waits
//! listen; their polling stays as the fallback for notifications missed
//! while a listener reconnects. SQLite has one process, so nothing to relay.

use std::time::Duration;

use sqlx::postgres::PgListener;

use crate::db::{Backend, Db, StoreError};

const QUEUED: &str = "mediagen_queued";
const FINISHED: &str = "mediagen_finished";
const CHUNK: &str = "mediagen_chunk";

/// What another process announced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wakeup {
    /// A job of this kind was queued (new, or back after a failed attempt).
    Queued(String),
    /// This job reached a final status.
    Finished(String),
    /// This streamed job wrote a chunk of its output.
    Chunk(String),
}

impl Db {
    /// Announces (on PostgreSQL) that a job of `kind` was queued. Inside a
    /// transaction the notification is sent when it commits.
    pub(crate) async fn announce_queued<'c, E>(&self, on: E, kind: &str) -> Result<(), StoreError>
    where
        E: sqlx::Executor<'c, Database = sqlx::Any>,
    {
        self.announce(on, QUEUED, kind).await
    }

    /// Announces (on PostgreSQL) that job `id` finished.
    pub(crate) async fn announce_finished<'c, E>(&self, on: E, id: &str) -> Result<(), StoreError>
    where
        E: sqlx::Executor<'c, Database = sqlx::Any>,
    {
        self.announce(on, FINISHED, id).await
    }

    /// Announces (on PostgreSQL) that streamed job `id` wrote a chunk.
    pub(crate) async fn announce_chunk<'c, E>(&self, on: E, id: &str) -> Result<(), StoreError>
    where
        E: sqlx::Executor<'c, Database = sqlx::Any>,
    {
        self.announce(on, CHUNK, id).await
    }

    async fn announce<'c, E>(&self, on: E, channel: &str, payload: &str) -> Result<(), StoreError>
    where
        E: sqlx::Executor<'c, Database = sqlx::Any>,
    {
        if self.backend == Backend::Postgres {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(channel)
                .bind(payload)
                .execute(on)
                .await?;
        }
        Ok(())
    }

    /// On PostgreSQL, starts a task that hears the announcements of every
    /// process and hands each to `deliver`; it reconnects by itself after
    /// a lost connection. `None` on SQLite (one process: nothing to hear).
    pub async fn listen(
        &self,
        deliver: impl Fn(Wakeup) + Send + 'static,
    ) -> Result<Option<tokio::task::JoinHandle<()>>, StoreError> {
        let Some(url) = self
            .url
            .clone()
            .filter(|_| self.backend == Backend::Postgres)
        else {
            return Ok(None);
        };
        let mut listener = PgListener::connect(&url).await?;
        listener.listen_all([QUEUED, FINISHED, CHUNK]).await?;
        Ok(Some(tokio::spawn(async move {
            loop {
                match listener.try_recv().await {
                    Ok(Some(n)) => match n.channel() {
                        QUEUED => deliver(Wakeup::Queued(n.payload().to_owned())),
                        FINISHED => deliver(Wakeup::Finished(n.payload().to_owned())),
                        CHUNK => deliver(Wakeup::Chunk(n.payload().to_owned())),
                        _ => {}
                    },
                    // The connection was lost and is re-established on the
                    // next call; what was sent meanwhile is caught by polling.
                    Ok(None) => tracing::warn!("wake-up listener reconnecting"),
                    Err(e) => {
                        tracing::warn!(error = %e, "wake-up listener failed; retrying");
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                }
            }
        })))
    }
}
