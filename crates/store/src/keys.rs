use mediagen_core::keys::{hash_key, hashes_match, ApiKeySecret};
use mediagen_core::{time::now_ms, Level};
use mediagen_core::{AccountId, KeyId};
use sqlx::any::AnyRow;
use sqlx::Row;

use crate::db::{Backend, Db, StoreError};

/// A stored key, without its secret.
#[derive(Debug, Clone)]
pub struct KeyRecord {
    pub id: KeyId,
    pub account_id: AccountId,
    pub name: String,
    pub level: Level,
    pub prefix: String,
    pub created_at: i64,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

/// What authentication learns from a key.
#[derive(Debug, Clone)]
pub struct AuthKey {
    pub key_id: KeyId,
    pub account_id: AccountId,
    pub level: Level,
    pub is_operator: bool,
    pub expires_at: Option<i64>,
    pub revoked_at: Option<i64>,
}

fn level_of(s: &str) -> Result<Level, StoreError> {
    Level::parse(s).ok_or_else(|| StoreError::Corrupt(format!("unknown key level {s}")))
}

fn key_from_row(row: &AnyRow) -> Result<KeyRecord, StoreError> {
    Ok(KeyRecord {
        id: KeyId::from_stored(row.try_get("id")?),
        account_id: AccountId::from_stored(row.try_get("account_id")?),
        name: row.try_get("name")?,
        level: level_of(&row.try_get::<String, _>("level")?)?,
        prefix: row.try_get("prefix")?,
        created_at: row.try_get("created_at")?,
        expires_at: row.try_get("expires_at")?,
        revoked_at: row.try_get("revoked_at")?,
    })
}

/// A key's row joined with its account's `is_operator`.
pub(crate) fn auth_key_from_row(row: &AnyRow) -> Result<AuthKey, StoreError> {
    Ok(AuthKey {
        key_id: KeyId::from_stored(row.try_get("id")?),
        account_id: AccountId::from_stored(row.try_get("account_id")?),
        level: level_of(&row.try_get::<String, _>("level")?)?,
        is_operator: row.try_get::<i64, _>("is_operator")? != 0,
        expires_at: row.try_get("expires_at")?,
        revoked_at: row.try_get("revoked_at")?,
    })
}

const KEY_COLS: &str = "id, account_id, name, level, prefix, created_at, expires_at, revoked_at";

impl Db {
    /// A transaction that counts and adds rows of `account` under a cap:
    /// on PostgreSQL the account's row is locked first, so that two such
    /// transactions of one account run one after the other (SQLite's
    /// writes already do).
    pub(crate) async fn begin_for(
        &self,
        account: &AccountId,
    ) -> Result<sqlx::Transaction<'_, sqlx::Any>, StoreError> {
        let mut tx = self.pool.begin().await?;
        if self.backend == Backend::Postgres {
            sqlx::query("SELECT id FROM accounts WHERE id = $1 FOR UPDATE")
                .bind(account.as_str())
                .execute(&mut *tx)
                .await?;
        }
        Ok(tx)
    }

    /// Creates a key and returns it with its secret, which is not stored.
    pub async fn create_key(
        &self,
        account_id: &AccountId,
        name: &str,
        level: Level,
        expires_at: Option<i64>,
    ) -> Result<(KeyRecord, ApiKeySecret), StoreError> {
        self.create_key_within(account_id, name, level, expires_at, i64::MAX)
            .await?
            .ok_or_else(|| StoreError::Corrupt("the key was not inserted".into()))
    }

    /// Creates a key unless the account already holds `cap` live keys (not
    /// revoked, not expired): `None` then. The count and the insert are one
    /// statement (and, on PostgreSQL, the account's row is locked first), so
    /// concurrent requests cannot pass the cap together.
    pub async fn create_key_within(
        &self,
        account_id: &AccountId,
        name: &str,
        level: Level,
        expires_at: Option<i64>,
        cap: i64,
    ) -> Result<Option<(KeyRecord, ApiKeySecret)>, StoreError> {
        let secret = ApiKeySecret::generate();
        let record = KeyRecord {
            id: KeyId::random(),
            account_id: account_id.to_owned(),
            name: name.to_owned(),
            level,
            prefix: secret.display_prefix(),
            created_at: now_ms(),
            expires_at,
            revoked_at: None,
        };
        let mut tx = self.begin_for(account_id).await?;
        let inserted = sqlx::query(
            "INSERT INTO api_keys (id, account_id, name, level, key_hash, prefix, created_at, expires_at) \
             SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE (SELECT COUNT(*) FROM api_keys \
               WHERE account_id = $2 AND (revoked_at IS NULL OR revoked_at > $7) \
               AND (expires_at IS NULL OR expires_at > $7)) < $9",
        )
        .bind(record.id.as_str())
        .bind(account_id.as_str())
        .bind(name)
        .bind(level.as_str())
        .bind(hash_key(secret.expose()))
        .bind(&record.prefix)
        .bind(record.created_at)
        .bind(expires_at)
        .bind(cap)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        Ok((inserted == 1).then_some((record, secret)))
    }

    /// Looks a key up by its secret. The row is found through the unique hash
    /// index; the hashes are then compared in constant time.
    pub async fn find_key(&self, secret: &str) -> Result<Option<AuthKey>, StoreError> {
        let hash = hash_key(secret);
        let row = sqlx::query(
            "SELECT k.id, k.account_id, k.level, k.key_hash, k.expires_at, k.revoked_at, a.is_operator \
             FROM api_keys k JOIN accounts a ON a.id = k.account_id WHERE k.key_hash = $1",
        )
        .bind(&hash)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let stored: String = row.try_get("key_hash")?;
        if !hashes_match(&stored, &hash) {
            return Ok(None);
        }
        Ok(Some(auth_key_from_row(&row)?))
    }

    /// Keys of one account, newest first, with the total count.
    pub async fn list_keys(
        &self,
        account_id: &AccountId,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<KeyRecord>, u64), StoreError> {
        self.account_page(
            "api_keys",
            KEY_COLS,
            account_id,
            limit,
            offset,
            key_from_row,
        )
        .await
    }

    /// One key of one account.
    pub async fn key(
        &self,
        account_id: &AccountId,
        key_id: &KeyId,
    ) -> Result<Option<KeyRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {KEY_COLS} FROM api_keys WHERE account_id = $1 AND id = $2"
        ))
        .bind(account_id.as_str())
        .bind(key_id.as_str())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(key_from_row).transpose()
    }

    /// Revokes a key of the account at `at` (now, or a future time for a
    /// grace period during rotation). Revocation is final: a key revoked (or
    /// scheduled) before keeps the earlier time, so a later call can only
    /// bring it forward, never restore the key. Returns the key, or `None`
    /// if the account has no such key.
    pub async fn revoke_key(
        &self,
        account_id: &AccountId,
        key_id: &KeyId,
        at: i64,
    ) -> Result<Option<KeyRecord>, StoreError> {
        sqlx::query(
            "UPDATE api_keys SET revoked_at = $3 WHERE account_id = $1 AND id = $2 \
             AND (revoked_at IS NULL OR revoked_at > $3)",
        )
        .bind(account_id.as_str())
        .bind(key_id.as_str())
        .bind(at)
        .execute(&self.pool)
        .await?;
        self.key(account_id, key_id).await
    }
}
