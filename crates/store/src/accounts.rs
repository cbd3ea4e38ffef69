use mediagen_core::time::now_ms;
use mediagen_core::AccountId;
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use crate::db::{Db, StoreError};

/// An account: the owner of keys, jobs and files, and the holder of credits.
#[derive(Debug, Clone)]
pub struct Account {
    pub id: AccountId,
    pub name: String,
    /// The operator account may create accounts and grant credits.
    pub is_operator: bool,
    /// Credits available for new work.
    pub balance: i64,
    /// Credits held by queued or running jobs.
    pub reserved: i64,
    /// Credits charged for completed jobs, all time.
    pub used: i64,
    pub created_at: i64,
}

/// One row of the append-only credit ledger.
#[derive(Debug, Clone)]
pub struct LedgerEntry {
    pub id: i64,
    pub job_id: Option<String>,
    /// `grant`, `reserve`, `capture` or `refund`.
    pub entry: String,
    pub amount: i64,
    pub balance_after: i64,
    pub note: Option<String>,
    pub created_at: i64,
}

fn account_from_row(row: &AnyRow) -> Result<Account, StoreError> {
    Ok(Account {
        id: AccountId::from_stored(row.try_get("id")?),
        name: row.try_get("name")?,
        is_operator: row.try_get::<i64, _>("is_operator")? != 0,
        balance: row.try_get("balance")?,
        reserved: row.try_get("reserved")?,
        used: row.try_get("used")?,
        created_at: row.try_get("created_at")?,
    })
}

/// How a ledger entry moves credits between the three buckets.
pub(crate) struct Movement<'a> {
    pub entry: &'a str,
    pub amount: i64,
    pub balance: i64,
    pub reserved: i64,
    pub used: i64,
    pub job_id: Option<&'a str>,
    pub note: Option<&'a str>,
}

impl<'a> Movement<'a> {
    pub fn grant(amount: i64, note: Option<&'a str>) -> Self {
        Self {
            entry: "grant",
            amount,
            balance: amount,
            reserved: 0,
            used: 0,
            job_id: None,
            note,
        }
    }
    pub fn reserve(job_id: &'a str, cost: i64) -> Self {
        Self {
            entry: "reserve",
            amount: cost,
            balance: -cost,
            reserved: cost,
            used: 0,
            job_id: Some(job_id),
            note: None,
        }
    }
    pub fn capture(job_id: &'a str, cost: i64) -> Self {
        Self {
            entry: "capture",
            amount: cost,
            balance: 0,
            reserved: -cost,
            used: cost,
            job_id: Some(job_id),
            note: None,
        }
    }
    /// More than the hold, taken from the balance when a job measured
    /// more work than its estimate.
    pub fn top_up(job_id: &'a str, amount: i64) -> Self {
        Self {
            entry: "top_up",
            amount,
            balance: -amount,
            reserved: 0,
            used: amount,
            job_id: Some(job_id),
            note: None,
        }
    }
    pub fn refund(job_id: &'a str, cost: i64) -> Self {
        Self {
            entry: "refund",
            amount: cost,
            balance: cost,
            reserved: -cost,
            used: 0,
            job_id: Some(job_id),
            note: None,
        }
    }
}

/// Applies a credit movement and appends it to the ledger. Returns the new
/// balance, or `None` when the balance would go negative (nothing changes).
/// The UPDATE comes first so that a transaction starting here takes the
/// account's write lock before it reads anything.
pub(crate) async fn post(
    conn: &mut AnyConnection,
    account_id: &str,
    m: Movement<'_>,
) -> Result<Option<i64>, StoreError> {
    let row = sqlx::query(
        "UPDATE accounts SET balance = balance + $2, reserved = reserved + $3, used = used + $4 \
         WHERE id = $1 AND balance + $2 >= 0 RETURNING balance",
    )
    .bind(account_id)
    .bind(m.balance)
    .bind(m.reserved)
    .bind(m.used)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let balance: i64 = row.try_get("balance")?;
    sqlx::query(
        "INSERT INTO credit_ledger (account_id, job_id, entry, amount, balance_after, note, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(account_id)
    .bind(m.job_id)
    .bind(m.entry)
    .bind(m.amount)
    .bind(balance)
    .bind(m.note)
    .bind(now_ms())
    .execute(&mut *conn)
    .await?;
    Ok(Some(balance))
}

impl Db {
    /// Creates an account holding `credits` (recorded as a grant).
    pub async fn create_account(
        &self,
        name: &str,
        is_operator: bool,
        credits: i64,
    ) -> Result<Account, StoreError> {
        let id = AccountId::random();
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "INSERT INTO accounts (id, name, is_operator, balance, reserved, used, created_at) \
             VALUES ($1, $2, $3, 0, 0, 0, $4)",
        )
        .bind(id.as_str())
        .bind(name)
        .bind(i64::from(is_operator))
        .bind(now_ms())
        .execute(&mut *tx)
        .await?;
        if credits > 0 {
            post(
                &mut tx,
                &id,
                Movement::grant(credits, Some("initial credits")),
            )
            .await?;
        }
        tx.commit().await?;
        self.account(&id)
            .await?
            .ok_or_else(|| StoreError::Corrupt("account vanished".into()))
    }

    pub async fn account(&self, id: &AccountId) -> Result<Option<Account>, StoreError> {
        let row = sqlx::query("SELECT * FROM accounts WHERE id = $1")
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(account_from_row).transpose()
    }

    /// The operator account, if one has been created.
    pub async fn operator_account(&self) -> Result<Option<Account>, StoreError> {
        let row =
            sqlx::query("SELECT * FROM accounts WHERE is_operator = 1 ORDER BY created_at LIMIT 1")
                .fetch_optional(&self.pool)
                .await?;
        row.as_ref().map(account_from_row).transpose()
    }

    /// Accounts, oldest first, with the total count.
    pub async fn list_accounts(
        &self,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<Account>, u64), StoreError> {
        let rows = sqlx::query("SELECT * FROM accounts ORDER BY created_at, id LIMIT $1 OFFSET $2")
            .bind(limit)
            .bind(offset)
            .fetch_all(&self.pool)
            .await?;
        let total: i64 = sqlx::query("SELECT COUNT(*) AS n FROM accounts")
            .fetch_one(&self.pool)
            .await?
            .try_get("n")?;
        let accounts = rows
            .iter()
            .map(account_from_row)
            .collect::<Result<_, _>>()?;
        Ok((accounts, total as u64))
    }

    /// Adds (or, when negative, removes) credits. Returns the new balance, or
    /// `None` when the account does not exist or would go negative.
    pub async fn grant_credits(
        &self,
        account_id: &AccountId,
        amount: i64,
        note: Option<&str>,
    ) -> Result<Option<i64>, StoreError> {
        let mut tx = self.pool.begin().await?;
        let balance = post(&mut tx, account_id, Movement::grant(amount, note)).await?;
        tx.commit().await?;
        Ok(balance)
    }

    /// The newest ledger entries of an account.
    pub async fn ledger(
        &self,
        account_id: &AccountId,
        limit: i64,
    ) -> Result<Vec<LedgerEntry>, StoreError> {
        Ok(self.ledger_page(account_id, limit, 0).await?.0)
    }

    /// A page of an account's ledger, newest first, and how many entries it
    /// has in all.
    pub async fn ledger_page(
        &self,
        account_id: &AccountId,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<LedgerEntry>, u64), StoreError> {
        let rows = sqlx::query(
            "SELECT id, job_id, entry, amount, balance_after, note, created_at FROM credit_ledger \
             WHERE account_id = $1 ORDER BY id DESC LIMIT $2 OFFSET $3",
        )
        .bind(account_id.as_str())
        .bind(limit)
        .bind(offset)
        .fetch_all(&self.pool)
        .await?;
        let total: i64 =
            sqlx::query("SELECT COUNT(*) AS n FROM credit_ledger WHERE account_id = $1")
                .bind(account_id.as_str())
                .fetch_one(&self.pool)
                .await?
                .try_get("n")?;
        let entries = rows
            .iter()
            .map(|r| {
                Ok(LedgerEntry {
                    id: r.try_get("id")?,
                    job_id: r.try_get("job_id")?,
                    entry: r.try_get("entry")?,
                    amount: r.try_get("amount")?,
                    balance_after: r.try_get("balance_after")?,
                    note: r.try_get("note")?,
                    created_at: r.try_get("created_at")?,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        Ok((entries, total as u64))
    }
}
