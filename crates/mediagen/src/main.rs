//! `mediagen`: parses the command line and configuration, sets up logging,
//! and hands over to the application.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand};
use mediagen::run_worker;
use mediagen_core::time::{iso8601, now_ms};
use mediagen_core::{AccountId, Level, TypedId};
use mediagen_server::app::{ensure_operator, Services};
use mediagen_server::config::{Config, Overrides};

/// Self-hostable voice, avatar, video and content generation API.
///
/// `serve`, `worker`, `migrate`, `models` and `admin` run the server or work
/// on its database and models directly; the other commands are a client of
/// a running server (docs/cli.md), reached at `MEDIAGEN_URL` with
/// `MEDIAGEN_API_KEY`.
#[derive(Parser)]
#[command(name = "mediagen", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The options of the commands that run the server or open its database
/// (global within each of them, so `admin keys create --data-dir D` reads).
#[derive(Args, Clone, Default)]
struct ServerArgs {
    /// Optional TOML configuration file (every setting: docs/configuration.md).
    #[arg(long, global = true, env = "MEDIAGEN_CONFIG")]
    config: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8080].
    #[arg(long, global = true, env = "MEDIAGEN_BIND")]
    bind: Option<SocketAddr>,
    /// Directory for the SQLite database and stored files [default: ./data].
    #[arg(long, global = true, env = "MEDIAGEN_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Directory with model files [default: ./models].
    #[arg(long, global = true, env = "MEDIAGEN_MODELS_DIR")]
    models_dir: Option<PathBuf>,
    /// `sqlite://…` or `postgres://…` [default: sqlite://<data-dir>/mediagen.db].
    #[arg(long, global = true, env = "MEDIAGEN_DATABASE_URL")]
    database_url: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the API with in-process workers.
    Serve(ServerArgs),
    /// Run workers only (scale-out: many of these beside API processes run
    /// with `workers = 0`, i.e. `MEDIAGEN_WORKERS=0 mediagen serve`).
    Worker {
        /// The job kinds to claim, comma-separated (`tts,stt`; setting
        /// `worker_kinds`) [default: every kind].
        #[arg(long)]
        kinds: Option<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Apply the database migrations, create the operator account when
    /// there is none (its admin key printed alone on stdout) and exit: the
    /// migration step of a deployment (every process also migrates at start).
    Migrate(ServerArgs),
    /// Keys and accounts, written straight to the server's database (on
    /// the machine that has it; `mediagen keys` does the same through the
    /// API from anywhere).
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Work with the models directory.
    Models {
        #[command(subcommand)]
        command: ModelsCommand,
        #[command(flatten)]
        server: ServerArgs,
    },
    #[command(flatten)]
    Client(mediagen_client::Command),
}

impl Command {
    /// A server command's options, taken out of it; `None` for the client.
    fn server_args(&mut self) -> Option<ServerArgs> {
        match self {
            Command::Serve(s)
            | Command::Migrate(s)
            | Command::Worker { server: s, .. }
            | Command::Admin { server: s, .. }
            | Command::Models { server: s, .. } => Some(std::mem::take(s)),
            Command::Client(_) => None,
        }
    }
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Create, list and revoke API keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Create accounts, grant credits, show balances.
    #[command(subcommand)]
    Accounts(AccountsCommand),
}

#[derive(Subcommand)]
enum ModelsCommand {
    /// Write two tiny random-weight neural models (image/tiny-sd,
    /// sound/tiny-audioldm) to try the neural path without weights
    /// (docs/models.md). Their output is noise-like.
    Tiny {
        /// Models directory to write into [default: the configured one].
        dir: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum KeysCommand {
    /// Create a key and print it alone on stdout.
    Create(CreateKeyArgs),
    /// List the keys of an account.
    List {
        /// Account id [default: the operator account].
        #[arg(long)]
        account: Option<String>,
    },
    /// Revoke a key.
    Revoke {
        id: String,
        #[arg(long)]
        account: Option<String>,
    },
}

#[derive(Args)]
struct CreateKeyArgs {
    /// read, write or admin.
    #[arg(long, default_value = "admin")]
    level: String,
    #[arg(long, default_value = "")]
    name: String,
    /// Account id [default: the operator account].
    #[arg(long)]
    account: Option<String>,
    /// Days until the key expires [default: never].
    #[arg(long)]
    expires_in_days: Option<f64>,
}

#[derive(Subcommand)]
enum AccountsCommand {
    /// Create an account and print its id.
    Create {
        #[arg(long)]
        name: String,
        #[arg(long, default_value_t = 0)]
        credits: i64,
    },
    /// Add credits (negative to remove).
    Grant {
        id: String,
        amount: i64,
        #[arg(long)]
        note: Option<String>,
    },
    /// Show an account's balance and recent ledger.
    Show { id: String },
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let mut command = cli.command;
    // The client needs no server configuration, database or models.
    let server = match command.server_args() {
        Some(server) => server,
        None => match command {
            Command::Client(client) => std::process::exit(client.run().await),
            _ => unreachable!("every other command has server options"),
        },
    };
    let overrides = Overrides {
        bind: server.bind,
        data_dir: server.data_dir,
        models_dir: server.models_dir,
        database_url: server.database_url,
    };
    let config = Config::load(server.config.as_deref(), std::env::vars(), overrides)?;
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MEDIAGEN_LOG").unwrap_or_else(|_| {
                tracing_subscriber::EnvFilter::new("info,sqlx=warn,whisper_rs=warn")
            }),
        )
        .with_writer(std::io::stderr)
        // Colours only for a person at a terminal, never in files or pipes.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    for warning in &config.warnings {
        tracing::warn!("{warning}");
    }
    if matches!(command, Command::Serve(_) | Command::Worker { .. }) {
        claim_scratch(&config)?;
    }
    match command {
        Command::Serve(_) => serve(config).await,
        Command::Worker { kinds, .. } => {
            let mut config = config;
            if let Some(kinds) = kinds {
                config.worker_kinds = kinds;
            }
            run_worker(config, shutdown_signal()).await
        }
        Command::Migrate(_) => {
            let services = Services::open(&config).await?;
            match ensure_operator(&services.db, config.initial_credits).await? {
                Some(key) => {
                    eprintln!(
                        "migrated; created the operator account, its admin key (shown once):"
                    );
                    println!("{key}");
                }
                None => eprintln!("migrated; the operator account exists"),
            }
            services.db.close().await;
            Ok(())
        }
        Command::Admin {
            command: AdminCommand::Keys(cmd),
            ..
        } => keys(config, cmd).await,
        Command::Admin {
            command: AdminCommand::Accounts(cmd),
            ..
        } => accounts(config, cmd).await,
        Command::Models {
            command: ModelsCommand::Tiny { dir },
            ..
        } => {
            let dir = dir.unwrap_or(config.models_dir);
            mediagen_generate::diffusion::tiny::write_all(&dir)?;
            println!(
                "wrote {0}/image/tiny-sd and {0}/sound/tiny-audioldm",
                dir.display()
            );
            Ok(())
        }
        Command::Client(_) => unreachable!("client commands return above"),
    }
}

/// This process's own scratch directory under the data directory; those
/// of processes that died without cleaning up are removed.
fn claim_scratch(config: &Config) -> anyhow::Result<()> {
    let (dir, removed) = mediagen_server::scratch::claim(&config.data_dir).with_context(|| {
        format!(
            "making a scratch directory under {}",
            config.data_dir.display()
        )
    })?;
    if removed > 0 {
        tracing::info!(removed, "removed the scratch files of stopped processes");
    }
    tracing::debug!(dir = %dir.display(), "scratch directory");
    Ok(())
}

async fn serve(config: Config) -> anyhow::Result<()> {
    let app = mediagen::application(config).await?;
    if let Some(key) = app.bootstrap_key() {
        println!(
            "\nCreated the operator account. Its admin API key (shown once, store it now):\n\n    {key}\n\n\
             Try: curl -H 'Authorization: Bearer {key}' http://127.0.0.1:{port}/v1/account\n\
             or the client, in another shell:\n\n    export MEDIAGEN_URL=http://127.0.0.1:{port} MEDIAGEN_API_KEY={key}\n    \
             {bin} tts \"Hello there\" --voice Heart -o hello.mp3\n\n\
             The console: http://127.0.0.1:{port}/app\n",
            port = app.port(),
            bin = client_path()
        );
    }
    app.run_until_stopped(shutdown_signal()).await
}

/// How to run this binary from the current directory: a relative path
/// where it is below it (`./target/release/mediagen`), else its name when
/// it is the one on `PATH`, else its full path.
fn client_path() -> String {
    let Ok(exe) = std::env::current_exe() else {
        return "mediagen".to_owned();
    };
    if let Some(below) = std::env::current_dir()
        .ok()
        .and_then(|cwd| exe.strip_prefix(cwd).ok().map(|p| p.to_owned()))
    {
        return format!("./{}", below.display());
    }
    let on_path = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join("mediagen") == exe));
    if on_path {
        "mediagen".to_owned()
    } else {
        exe.display().to_string()
    }
}

/// An id given on the command line.
fn cli_id<T: TypedId>(text: &str) -> anyhow::Result<T> {
    T::parse_text(text).with_context(|| format!("`{text}` is not a {} id", T::RESOURCE))
}

async fn account_or_operator(
    services: &Services,
    config: &Config,
    id: Option<String>,
) -> anyhow::Result<AccountId> {
    if let Some(id) = id {
        let id: AccountId = cli_id(&id)?;
        if services.db.account(&id).await?.is_none() {
            bail!("no account {id}");
        }
        return Ok(id);
    }
    if let Some(key) = ensure_operator(&services.db, config.initial_credits).await? {
        eprintln!("created the operator account; its first admin key is {key}");
    }
    Ok(services
        .db
        .operator_account()
        .await?
        .context("no operator account")?
        .id)
}

async fn keys(config: Config, cmd: KeysCommand) -> anyhow::Result<()> {
    let services = Services::open(&config).await?;
    match cmd {
        KeysCommand::Create(args) => {
            let level =
                Level::parse(&args.level).context("--level must be read, write or admin")?;
            let account = account_or_operator(&services, &config, args.account).await?;
            let expires = args
                .expires_in_days
                .map(|d| now_ms() + (d * 86_400_000.0) as i64);
            let (_, secret) = services
                .db
                .create_key(&account, &args.name, level, expires)
                .await?;
            println!("{}", secret.expose());
        }
        KeysCommand::List { account } => {
            let account = account_or_operator(&services, &config, account).await?;
            let (keys, _) = services.db.list_keys(&account, 1000, 0).await?;
            for k in keys {
                let state = match (k.revoked_at, k.expires_at) {
                    (Some(t), _) if t <= now_ms() => "revoked".to_owned(),
                    (_, Some(t)) if t <= now_ms() => "expired".to_owned(),
                    (_, Some(t)) => format!("expires {}", iso8601(t)),
                    _ => "active".to_owned(),
                };
                println!(
                    "{}\t{}…\t{}\t{}\t{}",
                    k.id,
                    k.prefix,
                    k.level.as_str(),
                    state,
                    k.name
                );
            }
        }
        KeysCommand::Revoke { id, account } => {
            let account = account_or_operator(&services, &config, account).await?;
            if services
                .db
                .revoke_key(&account, &cli_id(&id)?, now_ms())
                .await?
                .is_none()
            {
                bail!("no key {id} in account {account}");
            }
            eprintln!("revoked {id}");
        }
    }
    services.db.close().await;
    Ok(())
}

async fn accounts(config: Config, cmd: AccountsCommand) -> anyhow::Result<()> {
    let services = Services::open(&config).await?;
    match cmd {
        AccountsCommand::Create { name, credits } => {
            let a = services.db.create_account(&name, false, credits).await?;
            println!("{}", a.id);
        }
        AccountsCommand::Grant { id, amount, note } => match services
            .db
            .grant_credits(&cli_id(&id)?, amount, note.as_deref())
            .await?
        {
            Some(balance) => println!("{balance}"),
            None => bail!("no account {id}, or the balance would go negative"),
        },
        AccountsCommand::Show { id } => {
            let id: AccountId = cli_id(&id)?;
            let a = services
                .db
                .account(&id)
                .await?
                .with_context(|| format!("no account {id}"))?;
            println!(
                "id\t{}\nname\t{}\nbalance\t{}\nreserved\t{}\nused\t{}",
                a.id, a.name, a.balance, a.reserved, a.used
            );
            for e in services.db.ledger(&id, 20).await? {
                println!(
                    "{}\t{}\t{}\tbalance {}\t{}",
                    iso8601(e.created_at),
                    e.entry,
                    e.amount,
                    e.balance_after,
                    e.job_id.or(e.note).unwrap_or_default()
                );
            }
        }
    }
    services.db.close().await;
    Ok(())
}

/// Completes on Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutting down");
}
