//! Single-use session tokens: minted by a key, they open one live session
//! of one kind, once, before they expire, acting for that key (its
//! account, its level) while it is still valid.

use mediagen_core::keys::{generate_token, hash_key};
use mediagen_core::time::now_ms;
use mediagen_core::{AccountId, JobKind, KeyId};

use crate::db::{Db, StoreError};
use crate::keys::{auth_key_from_row, AuthKey};

/// A freshly minted token: shown once, then only its hash is kept.
#[derive(Debug, Clone)]
pub struct MintedToken {
    pub token: String,
    pub kind: JobKind,
    pub expires_at: i64,
}

impl Db {
    /// Mints a token of `kind` for `key` of `account`, valid for
    /// `ttl_ms`, unless the account already holds `cap` unused live ones
    /// (`None` then: the count and the insert are one statement).
    pub async fn mint_token(
        &self,
        account: &AccountId,
        key: &KeyId,
        kind: JobKind,
        ttl_ms: i64,
        cap: i64,
    ) -> Result<Option<MintedToken>, StoreError> {
        let token = generate_token();
        let now = now_ms();
        let expires_at = now + ttl_ms;
        let mut tx = self.begin_for(account).await?;
        let inserted = sqlx::query(
            "INSERT INTO session_tokens (token_hash, account_id, key_id, kind, created_at, expires_at) \
             SELECT $1, $2, $3, $4, $5, $6 WHERE (SELECT COUNT(*) FROM session_tokens \
               WHERE account_id = $2 AND used_at IS NULL AND expires_at > $5) < $7",
        )
        .bind(hash_key(&token))
        .bind(account.as_str())
        .bind(key.as_str())
        .bind(kind.name())
        .bind(now)
        .bind(expires_at)
        .bind(cap)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        tx.commit().await?;
        Ok((inserted == 1).then_some(MintedToken {
            token,
            kind,
            expires_at,
        }))
    }

    /// Spends `token` on a session of `kind`: the key it acts for, or
    /// `None` when it is unknown, used, expired or of another kind. The
    /// claim is one statement, so a token opens one session however many
    /// try it at once. The key's own validity (revoked, expired) is the
    /// caller's to check, as for a key presented itself.
    pub async fn redeem_token(
        &self,
        token: &str,
        kind: JobKind,
    ) -> Result<Option<AuthKey>, StoreError> {
        let hash = hash_key(token);
        let now = now_ms();
        let claimed = sqlx::query(
            "UPDATE session_tokens SET used_at = $2 WHERE token_hash = $1 AND kind = $3 \
             AND used_at IS NULL AND expires_at > $2",
        )
        .bind(&hash)
        .bind(now)
        .bind(kind.name())
        .execute(&self.pool)
        .await?
        .rows_affected();
        if claimed != 1 {
            return Ok(None);
        }
        let row = sqlx::query(
            "SELECT k.id, k.account_id, k.level, k.expires_at, k.revoked_at, a.is_operator \
             FROM session_tokens t JOIN api_keys k ON k.id = t.key_id \
             JOIN accounts a ON a.id = k.account_id \
             WHERE t.token_hash = $1 AND k.account_id = t.account_id",
        )
        .bind(&hash)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(auth_key_from_row).transpose()
    }

    /// Gives back `token`, spent on a session that was then refused (it
    /// did not open): it can be tried again until it expires.
    pub async fn unspend_token(&self, token: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE session_tokens SET used_at = NULL WHERE token_hash = $1")
            .bind(hash_key(token))
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Deletes tokens that expired more than an hour ago.
    pub async fn sweep_tokens(&self) -> Result<u64, StoreError> {
        Ok(
            sqlx::query("DELETE FROM session_tokens WHERE expires_at < $1")
                .bind(now_ms() - 3600 * 1000)
                .execute(&self.pool)
                .await?
                .rows_affected(),
        )
    }
}
