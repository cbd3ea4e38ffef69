use mediagen_core::time::now_ms;
use mediagen_core::{AccountId, VoiceId};
use sqlx::any::AnyRow;
use sqlx::Row;

use crate::db::{Db, StoreError};

/// A voice an account cloned from samples (`category: cloned`).
#[derive(Debug, Clone, PartialEq)]
pub struct VoiceRecord {
    pub id: VoiceId,
    pub account_id: AccountId,
    pub name: String,
    pub description: String,
    pub labels: Vec<String>,
    /// BCP-47.
    pub language: String,
    pub gender: String,
    /// The engines' voice profile, JSON.
    pub profile: serde_json::Value,
    pub preview_key: String,
    pub created_at: i64,
}

/// What `PATCH` may change.
#[derive(Debug, Clone, Default)]
pub struct VoiceChanges {
    pub name: Option<String>,
    pub description: Option<String>,
    pub labels: Option<Vec<String>>,
}

const COLS: &str =
    "id, account_id, name, description, labels, language, gender, profile, preview_key, created_at";

fn from_row(row: &AnyRow) -> Result<VoiceRecord, StoreError> {
    let labels: String = row.try_get("labels")?;
    let profile: String = row.try_get("profile")?;
    Ok(VoiceRecord {
        id: VoiceId::from_stored(row.try_get("id")?),
        account_id: AccountId::from_stored(row.try_get("account_id")?),
        name: row.try_get("name")?,
        description: row.try_get("description")?,
        labels: serde_json::from_str(&labels).unwrap_or_default(),
        language: row.try_get("language")?,
        gender: row.try_get("gender")?,
        profile: serde_json::from_str(&profile).unwrap_or_default(),
        preview_key: row.try_get("preview_key")?,
        created_at: row.try_get("created_at")?,
    })
}

fn json(v: &impl serde::Serialize) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".to_owned())
}

impl Db {
    pub async fn create_voice(&self, mut v: VoiceRecord) -> Result<VoiceRecord, StoreError> {
        v.created_at = now_ms();
        sqlx::query(&format!(
            "INSERT INTO voices ({COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
        ))
        .bind(v.id.as_str())
        .bind(v.account_id.as_str())
        .bind(&v.name)
        .bind(&v.description)
        .bind(json(&v.labels))
        .bind(&v.language)
        .bind(&v.gender)
        .bind(json(&v.profile))
        .bind(&v.preview_key)
        .bind(v.created_at)
        .execute(&self.pool)
        .await?;
        Ok(v)
    }

    /// A cloned voice of one account (another account's is `None`).
    pub async fn voice(
        &self,
        account_id: &AccountId,
        id: &VoiceId,
    ) -> Result<Option<VoiceRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {COLS} FROM voices WHERE id = $1 AND account_id = $2"
        ))
        .bind(id.as_str())
        .bind(account_id.as_str())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(from_row).transpose()
    }

    /// Every cloned voice of one account, newest first.
    pub async fn voices(&self, account_id: &AccountId) -> Result<Vec<VoiceRecord>, StoreError> {
        let rows = sqlx::query(&format!(
            "SELECT {COLS} FROM voices WHERE account_id = $1 ORDER BY created_at DESC, id DESC"
        ))
        .bind(account_id.as_str())
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(from_row).collect()
    }

    pub async fn update_voice(
        &self,
        account_id: &AccountId,
        id: &VoiceId,
        changes: VoiceChanges,
    ) -> Result<Option<VoiceRecord>, StoreError> {
        let Some(mut v) = self.voice(account_id, id).await? else {
            return Ok(None);
        };
        v.name = changes.name.unwrap_or(v.name);
        v.description = changes.description.unwrap_or(v.description);
        v.labels = changes.labels.unwrap_or(v.labels);
        sqlx::query(
            "UPDATE voices SET name = $1, description = $2, labels = $3 WHERE id = $4 AND account_id = $5",
        )
        .bind(&v.name)
        .bind(&v.description)
        .bind(json(&v.labels))
        .bind(id.as_str())
        .bind(account_id.as_str())
        .execute(&self.pool)
        .await?;
        Ok(Some(v))
    }

    pub async fn delete_voice(
        &self,
        account_id: &AccountId,
        id: &VoiceId,
    ) -> Result<Option<VoiceRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "DELETE FROM voices WHERE id = $1 AND account_id = $2 RETURNING {COLS}"
        ))
        .bind(id.as_str())
        .bind(account_id.as_str())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(from_row).transpose()
    }
}
