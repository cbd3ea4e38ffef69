use mediagen_core::time::now_ms;
use mediagen_core::{AccountId, AvatarId};
use sqlx::any::AnyRow;
use sqlx::Row;

use crate::db::{Db, StoreError};

/// An avatar an account uploaded (`category: custom`).
#[derive(Debug, Clone, PartialEq)]
pub struct AvatarRecord {
    pub id: AvatarId,
    pub account_id: AccountId,
    pub name: String,
    pub description: String,
    pub gender: String,
    pub labels: Vec<String>,
    /// Blob keys of the clip (as uploaded) and its poster (PNG).
    pub video_key: String,
    pub poster_key: String,
    pub content_type: String,
    pub width: i64,
    pub height: i64,
    /// Seconds.
    pub duration: f64,
    pub fps: f64,
    pub created_at: i64,
}

/// What `PATCH` may change.
#[derive(Debug, Clone, Default)]
pub struct AvatarChanges {
    pub name: Option<String>,
    pub description: Option<String>,
    pub gender: Option<String>,
    pub labels: Option<Vec<String>>,
}

const COLS: &str = "id, account_id, name, description, gender, labels, video_key, poster_key, \
                    content_type, width, height, duration, fps, created_at";

fn from_row(row: &AnyRow) -> Result<AvatarRecord, StoreError> {
    let labels: String = row.try_get("labels")?;
    Ok(AvatarRecord {
        id: AvatarId::from_stored(row.try_get("id")?),
        account_id: AccountId::from_stored(row.try_get("account_id")?),
        name: row.try_get("name")?,
        description: row.try_get("description")?,
        gender: row.try_get("gender")?,
        labels: serde_json::from_str(&labels).unwrap_or_default(),
        video_key: row.try_get("video_key")?,
        poster_key: row.try_get("poster_key")?,
        content_type: row.try_get("content_type")?,
        width: row.try_get("width")?,
        height: row.try_get("height")?,
        duration: row.try_get("duration")?,
        fps: row.try_get("fps")?,
        created_at: row.try_get("created_at")?,
    })
}

fn labels_json(labels: &[String]) -> String {
    serde_json::to_string(labels).unwrap_or_else(|_| "[]".to_owned())
}

impl Db {
    /// Records an avatar whose files are in the blob store already.
    pub async fn create_avatar(&self, mut a: AvatarRecord) -> Result<AvatarRecord, StoreError> {
        a.created_at = now_ms();
        sqlx::query(&format!(
            "INSERT INTO avatars ({COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)"
        ))
        .bind(a.id.as_str())
        .bind(a.account_id.as_str())
        .bind(&a.name)
        .bind(&a.description)
        .bind(&a.gender)
        .bind(labels_json(&a.labels))
        .bind(&a.video_key)
        .bind(&a.poster_key)
        .bind(&a.content_type)
        .bind(a.width)
        .bind(a.height)
        .bind(a.duration)
        .bind(a.fps)
        .bind(a.created_at)
        .execute(&self.pool)
        .await?;
        Ok(a)
    }

    /// An avatar of one account (another account's is `None`).
    pub async fn avatar(
        &self,
        account_id: &AccountId,
        id: &AvatarId,
    ) -> Result<Option<AvatarRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {COLS} FROM avatars WHERE id = $1 AND account_id = $2"
        ))
        .bind(id.as_str())
        .bind(account_id.as_str())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(from_row).transpose()
    }

    /// Every avatar of one account, newest first (the catalog filters and
    /// pages them together with the built-in ones).
    pub async fn avatars(&self, account_id: &AccountId) -> Result<Vec<AvatarRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLS} FROM avatars WHERE account_id = $1 ORDER BY created_at DESC, id DESC"
        ))
        .bind(account_id.as_str())
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(from_row).collect()
    }

    /// Applies `changes` to an avatar of the account; `None` when it has
    /// no such avatar.
    pub async fn update_avatar(
        &self,
        account_id: &AccountId,
        id: &AvatarId,
        changes: AvatarChanges,
    ) -> Result<Option<AvatarRecord>, StoreError> {
        let Some(mut a) = self.avatar(account_id, id).await? else {
            return Ok(None);
        };
        a.name = changes.name.unwrap_or(a.name);
        a.description = changes.description.unwrap_or(a.description);
        a.gender = changes.gender.unwrap_or(a.gender);
        a.labels = changes.labels.unwrap_or(a.labels);
        sqlx::query(
            "UPDATE avatars SET name = $1, description = $2, gender = $3, labels = $4 \
             WHERE id = $5 AND account_id = $6",
        )
        .bind(&a.name)
        .bind(&a.description)
        .bind(&a.gender)
        .bind(labels_json(&a.labels))
        .bind(id.as_str())
        .bind(account_id.as_str())
        .execute(&self.pool)
        .await?;
        Ok(Some(a))
    }

    /// Deletes an avatar of the account; returns it (to delete its blobs).
    pub async fn delete_avatar(
        &self,
        account_id: &AccountId,
        id: &AvatarId,
    ) -> Result<Option<AvatarRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "DELETE FROM avatars WHERE id = $1 AND account_id = $2 RETURNING {COLS}"
        ))
        .bind(id.as_str())
        .bind(account_id.as_str())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(from_row).transpose()
    }
}
