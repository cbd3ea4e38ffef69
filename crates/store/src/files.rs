use mediagen_core::time::now_ms;
use mediagen_core::{AccountId, FileId};
use sqlx::any::AnyRow;
use sqlx::Row;

use crate::db::{Db, StoreError};

/// An uploaded input file.
#[derive(Debug, Clone)]
pub struct FileRecord {
    pub id: FileId,
    pub account_id: AccountId,
    pub filename: String,
    pub content_type: String,
    pub size: i64,
    pub blob_key: String,
    /// Seconds, for media whose duration is known.
    pub duration: Option<f64>,
    pub created_at: i64,
}

fn file_from_row(row: &AnyRow) -> Result<FileRecord, StoreError> {
    Ok(FileRecord {
        id: FileId::from_stored(row.try_get("id")?),
        account_id: AccountId::from_stored(row.try_get("account_id")?),
        filename: row.try_get("filename")?,
        content_type: row.try_get("content_type")?,
        size: row.try_get("size")?,
        blob_key: row.try_get("blob_key")?,
        duration: row.try_get("duration")?,
        created_at: row.try_get("created_at")?,
    })
}

const FILE_COLS: &str =
    "id, account_id, filename, content_type, size, blob_key, duration, created_at";

impl Db {
    /// Records a file already written to the blob store.
    pub async fn create_file(&self, mut file: FileRecord) -> Result<FileRecord, StoreError> {
        file.created_at = now_ms();
        sqlx::query(&format!(
            "INSERT INTO files ({FILE_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
        ))
        .bind(file.id.as_str())
        .bind(file.account_id.as_str())
        .bind(&file.filename)
        .bind(&file.content_type)
        .bind(file.size)
        .bind(&file.blob_key)
        .bind(file.duration)
        .bind(file.created_at)
        .execute(&self.pool)
        .await?;
        Ok(file)
    }

    /// A file of one account (another account's file is `None`).
    pub async fn file(
        &self,
        account_id: &AccountId,
        id: &FileId,
    ) -> Result<Option<FileRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "SELECT {FILE_COLS} FROM files WHERE id = $1 AND account_id = $2"
        ))
        .bind(id.as_str())
        .bind(account_id.as_str())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(file_from_row).transpose()
    }

    /// Files of one account, newest first, with the total count.
    pub async fn list_files(
        &self,
        account_id: &AccountId,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<FileRecord>, u64), StoreError> {
        self.account_page("files", FILE_COLS, account_id, limit, offset, file_from_row)
            .await
    }

    /// Deletes a file record of the account; returns it (to delete its blob).
    pub async fn delete_file(
        &self,
        account_id: &AccountId,
        id: &FileId,
    ) -> Result<Option<FileRecord>, StoreError> {
        let row = sqlx::query(&format!(
            "DELETE FROM files WHERE id = $1 AND account_id = $2 RETURNING {FILE_COLS}"
        ))
        .bind(id.as_str())
        .bind(account_id.as_str())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(file_from_row).transpose()
    }
}
