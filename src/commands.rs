//! The CLI as an adapter over the front: each command reads its flags into the operation's
//! parameters ([`pond_front::params`]), calls one operation of [`Front`] and prints its
//! rendering (or its JSON). Long jobs show a progress bar on a terminal's stderr.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::time::Duration;

use anyhow::Result;
use pond_front::model::ModelSource;
use pond_front::params::{self, Caller, SearchPlan, SourceSetting};
use pond_front::{render, AutoSync, Front, ProgressSink};
use pond_protocol::job::ForgetRequest;
use pond_protocol::sync::SyncRequest;
use pond_protocol::Progress;
use pond_setup as setup;

use crate::config::Shown;
use crate::flags::{ForgetFlags, SyncFlags};
use crate::{Cli, Command, ConfigAction, ModelAction};

/// Standard output: what a command prints there goes through the masker
/// (`render::masked`), unless the user asked to see secrets.
#[derive(Clone, Copy)]
struct Out {
    reveal_secrets: bool,
}

impl Out {
    fn print(self, text: &str) {
        if self.reveal_secrets {
            write_stdout(text);
        } else {
            write_stdout(&render::masked(text));
        }
    }

    /// A result as JSON, or as its text rendering.
    fn emit<T: serde::Serialize>(self, json: bool, value: &T, text: impl Fn(&T) -> String) {
        if json {
            self.print(&format!("{}\n", render::json(value)));
        } else {
            self.print(&text(value));
        }
    }
}

/// Archived text as a terminal shows it: a control character other than a line end or a
/// tab (an escape sequence a fetched page or a tool's output left in a session, which could
/// set the terminal's title, write its clipboard or hide text) is shown as its symbol
/// (`␛`), not obeyed. Only on a terminal: a file or a pipe gets the bytes as stored.
fn for_terminal(text: &str) -> std::borrow::Cow<'_, str> {
    let control = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.contains(control) {
        return std::borrow::Cow::Borrowed(text);
    }
    let shown = text
        .chars()
        .map(|c| match c {
            c if !control(c) => c,
            // U+2400..U+241F picture C0 controls, U+2421 DEL; C1 controls as a replacement.
            c if (c as u32) < 0x20 => char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'),
            '\u{7f}' => '\u{2421}',
            _ => '\u{fffd}',
        })
        .collect();
    std::borrow::Cow::Owned(shown)
}

/// Write an answer to stdout. A reader that went away (`pond export ID | head`) ends pond
/// quietly with the status a shell gives a command killed by SIGPIPE, as any Unix tool ends
/// (the workers die with it); another write error is said, not panicked.
fn write_stdout(text: &str) {
    use std::io::{IsTerminal, Write};
    let mut out = std::io::stdout().lock();
    let text = match out.is_terminal() {
        true => for_terminal(text),
        false => std::borrow::Cow::Borrowed(text),
    };
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(141);
        }
        eprintln!("pond: cannot write the answer: {e}");
        std::process::exit(1);
    }
}

pub async fn run(cli: Cli) -> Result<()> {
    let front = crate::front(&cli)?;
    let out = Out {
        reveal_secrets: cli.settings.reveal_secrets,
    };
    let sync = SyncSettings {
        exclude_projects: cli.settings.exclude_projects,
        sources: source_settings(&cli.sources),
    };
    let result = command(&front, cli.command, out, sync).await;
    front.shutdown().await;
    result
}

/// One command: its flags read into the operation's parameters, the operation called, its
/// answer printed.
async fn command(front: &Front, command: Command, out: Out, sync: SyncSettings) -> Result<()> {
    match command {
        Command::Worker { .. }
        | Command::Config { .. }
        | Command::Completions { .. }
        | Command::Install { .. }
        | Command::Init { .. }
        | Command::Uninstall { .. }
        | Command::Skill => {
            unreachable!("handled before the store opens")
        }
        Command::Restore(flags) => {
            let json = flags.json;
            let report = front.restore(flags.params().request()?).await?;
            // The report names files and counts: nothing in it to mask.
            out.emit(json, &report, render::reports::restored);
        }
        Command::Export(flags) => {
            front
                .export(flags.params(), &mut |text| out.print(text))
                .await?
        }
        command @ (Command::Mcp { .. } | Command::Serve { .. }) => {
            serve(front, command, &sync).await?
        }
        Command::Embed { limit, json } => {
            let report =
                with_bar(BACKFILL_BAR, show_backfill, |p| front.backfill(limit, p)).await?;
            out.emit(json, &report, |r| {
                format!("{}\n", render::reports::embedded(r))
            });
        }
        Command::Forget(flags) => forget(front, flags, out).await?,
        Command::Model { action } => model(front, action, out).await?,
        Command::Rebuild(flags) => {
            let req = flags.params().request();
            let report = with_steps(|p| front.rebuild(req, p)).await?;
            out.emit(flags.json, &report, render::reports::rebuilt);
        }
        Command::Sync(flags) => self::sync(front, flags, out, sync).await?,
        command => read(front, command, out).await?,
    }
    Ok(())
}

/// `pond mcp` (standalone: served in this process over stdio) or `pond serve` (the
/// store's resident server), each with its background sync.
async fn serve(front: &Front, command: Command, sync: &SyncSettings) -> Result<()> {
    let served = match command {
        Command::Mcp { auto_sync_mins, .. } => {
            let auto_sync = auto_sync_of(auto_sync_mins, sync);
            pond_front::mcp::serve_stdio(front.clone(), auto_sync).await
        }
        Command::Serve {
            auto_sync_mins,
            idle_exit_mins,
            idle_exit_secs,
            socket,
            http,
            http_token,
            allow_remote,
            allow_host,
            allow_origin,
        } => {
            if http_token.is_some() {
                anyhow::bail!(
                    "--http-token would show the token to every local user (in the process list): \
                     set POND_HTTP_TOKEN instead, or set none and read the one the server makes in `pond status`"
                );
            }
            let opts = pond_front::mcp::socket::ServeOptions {
                socket: socket
                    .unwrap_or_else(|| pond_front::rendezvous::socket_path(front.store().root())),
                idle_exit: Duration::from_secs(idle_exit_secs.unwrap_or(idle_exit_mins * 60)),
                auto_sync: auto_sync_of(auto_sync_mins, sync),
                http: http.map(|addr| pond_front::mcp::http::HttpOptions {
                    addr,
                    token: std::env::var("POND_HTTP_TOKEN")
                        .ok()
                        .filter(|t| !t.is_empty()),
                    allow_remote,
                    allow_hosts: allow_host,
                    allow_origins: allow_origin,
                }),
            };
            pond_front::mcp::socket::serve(front.clone(), opts).await
        }
        _ => unreachable!("only mcp and serve serve"),
    };
    served.map_err(anyhow::Error::msg)
}

/// The commands that read the store: search, get, sessions, SQL, usage, status.
async fn read(front: &Front, command: Command, out: Out) -> Result<()> {
    let person = Caller::Person {
        reveal_secrets: out.reveal_secrets,
    };
    match command {
        Command::Search(flags) => {
            let json = flags.json;
            match flags.params().plan(person)? {
                SearchPlan::Literal(job) => {
                    let results = front.grep(job).await?;
                    out.emit(json, &results, |r| {
                        render::grep::results(r, |n| format!("--offset {n}"))
                    });
                }
                SearchPlan::Ranked(req) => {
                    let results = front.search(&req).await?;
                    out.emit(json, &results, render::search);
                }
            }
        }
        Command::GetSession(flags) => {
            let json = flags.json;
            let (id, req) = flags.params().request(person);
            let page = front.get_session(&id, &req).await?;
            out.emit(json, &page, render::session_page);
        }
        Command::GetMessage(flags) => {
            let json = flags.json;
            let (id, before, after) = flags.params().request(person);
            let c = front.get_message(&id, before, after).await?;
            out.emit(json, &c, render::message_context);
        }
        Command::Sessions(flags) => {
            let json = flags.json;
            let list = front.sessions(&flags.params().request(person)?).await?;
            out.emit(json, &list, render::sessions::list);
        }
        Command::Sql(flags) => {
            // In the sql worker, like the MCP server's: its memory budget and its kill at
            // the deadline hold here too, and only the capped, rendered result comes back.
            let result = front.sql(flags.params().job(person)).await?;
            out.print(&format!("{}\n", result.text.trim_end()));
            eprintln!("{}", result.footer);
        }
        Command::Usage(flags) => {
            let params = flags.params()?;
            let format = params.format.unwrap_or_default();
            let report = front.usage(params.request(person)?).await?;
            out.print(&render::usage::answer(&report, format));
        }
        Command::Status { json } => {
            let status = front.status(false).await;
            if let Some(e) = &status.counts_error {
                anyhow::bail!("{e}");
            }
            out.emit(json, &status, render::status::status);
        }
        _ => unreachable!("every other command is dispatched by `command`"),
    }
    Ok(())
}

/// `pond sync`: the sync (and the embedding after it) with a progress bar, what it could
/// not find said on stderr, then its report.
async fn sync(front: &Front, flags: SyncFlags, out: Out, settings: SyncSettings) -> Result<()> {
    let params = flags.params();
    let req = params.request(&settings.sources, settings.exclude_projects.clone())?;
    let searched: Vec<String> = req
        .sources
        .iter()
        .map(|s| s.path.display().to_string())
        .collect();
    let embed = params.embed();
    let synced = with_bar(SYNC_BAR, show_sync, |p| front.sync(req, embed, p)).await?;
    if synced.report.files_seen == 0 {
        // Something found but unreadable (a database its client keeps locked, a folder
        // without permission) is not the same as nothing there.
        if synced.report.skipped > 0 {
            eprintln!(
                "pond: nothing under {} could be read (the reasons are under \"skipped\")",
                searched.join(", ")
            );
        } else {
            eprintln!(
                "pond: no session files found under {}; point --path at a folder of session files",
                searched.join(", ")
            );
        }
    }
    if let Some(Err(e)) = synced.embedded {
        return Err(e.into());
    }
    let r = &synced.report;
    if let Some(p) = flags
        .path
        .filter(|_| r.lines_read > 0 && r.sessions_touched == 0)
    {
        anyhow::bail!(
            "{} holds no session of a client pond reads ({} lines read, no session in them); \
             `pond sync --help` lists the clients",
            p.display(),
            r.lines_read
        );
    }
    // What the sync worker counted of the projects it excluded.
    for excluded in &r.excluded_stored {
        let (stored, project) = (excluded.sessions, &excluded.project);
        eprintln!(
            "pond: {stored} sessions stored before are in projects matching {project:?}; `pond forget --project {project:?}` removes them"
        );
    }
    let root = front.store().root();
    if flags.json {
        let report = render::reports::synced_json(&synced, root);
        out.print(&format!("{}\n", render::json(&report)));
    } else {
        let counts = front.store().counts().await?;
        out.print(&render::reports::synced(&synced, root, &counts));
    }
    Ok(())
}

/// `pond forget`: asked first on a terminal unless `--yes` (or a dry run).
async fn forget(front: &Front, flags: ForgetFlags, out: Out) -> Result<()> {
    let mut req = flags.params().request()?;
    if !flags.dry_run && !flags.yes && !consent_to_forget(front, &mut req, flags.json, out).await? {
        return Ok(());
    }
    let report = front.forget(req).await?;
    out.emit(flags.json, &report, render::reports::forgotten);
    Ok(())
}

/// Before a forget without `--yes`: what it would remove, then the user's consent, asked on
/// a terminal (and whether to forget the copies other sessions hold too); without a
/// terminal, an error: piped input is no answer. Answering no is an error too ("nothing
/// forgotten"), so a script can tell. `false` when nothing matches (said, and nothing to
/// ask).
async fn consent_to_forget(
    front: &Front,
    req: &mut ForgetRequest,
    json: bool,
    out: Out,
) -> Result<bool> {
    let preview = |req: &ForgetRequest| {
        front.forget(ForgetRequest {
            dry_run: true,
            ..req.clone()
        })
    };
    let mut plan = preview(req).await?;
    if plan.sessions.is_empty() {
        out.emit(json, &plan, render::reports::forget_plan);
        return Ok(false);
    }
    eprint!("{}", render::reports::forget_plan(&plan));
    if !std::io::stdin().is_terminal() {
        anyhow::bail!(
            "nothing forgotten: pond forget removes sessions for good and asks first, and stdin is not a terminal; add --yes to forget these {} sessions (--dry-run only lists them)",
            plan.sessions.len()
        );
    }
    if !plan.copies.is_empty()
        && !req.with_copies
        && confirm("also forget the sessions that copy them, with their own messages?")?
    {
        req.with_copies = true;
        plan = preview(req).await?;
        eprint!("{}", render::reports::forget_plan(&plan));
    }
    if !confirm(&format!(
        "forget these {} sessions for good?",
        plan.sessions.len()
    ))? {
        anyhow::bail!("nothing forgotten");
    }
    Ok(true)
}

/// Ask a yes/no question on the terminal; no is the default.
fn confirm(question: &str) -> Result<bool> {
    eprint!("pond: {question} [y/N] ");
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// What the sync settings say beyond one command's flags: exclusions, and the config
/// file's sources.
struct SyncSettings {
    exclude_projects: Vec<String>,
    sources: BTreeMap<String, SourceSetting>,
}

/// The config file's `[sources.NAME]` tables as the front reads them.
fn source_settings(
    configured: &BTreeMap<String, crate::config::Source>,
) -> BTreeMap<String, SourceSetting> {
    configured
        .iter()
        .map(|(name, s)| {
            let setting = SourceSetting {
                enabled: s.enabled,
                path: s.path.clone(),
            };
            (name.clone(), setting)
        })
        .collect()
}

const SYNC_BAR: &str = "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {msg}";
const BACKFILL_BAR: &str =
    "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} messages embedded ({eta})";

fn show_sync(b: &indicatif::ProgressBar, p: Progress) {
    match p {
        Progress::Sync(p) => {
            b.set_length(p.bytes_total);
            b.set_position(p.bytes_done);
            // Every file read: what is left is the last write, the indexes and the row map.
            let then = if p.files_done == p.files_total {
                "; indexing"
            } else {
                ""
            };
            b.set_message(format!(
                "{}/{} files, {} messages{then}",
                p.files_done, p.files_total, p.messages
            ));
        }
        // The embedding after the sync: the bar becomes the embedding's.
        Progress::Embed(_) => {
            b.set_style(style(BACKFILL_BAR));
            show_backfill(b, p);
        }
        Progress::Step(_) | Progress::Download(_) => {}
    }
}

fn show_backfill(b: &indicatif::ProgressBar, p: Progress) {
    if let Progress::Embed(p) = p {
        b.set_length(p.total);
        b.set_position(p.done);
    }
}

fn style(template: &str) -> indicatif::ProgressStyle {
    indicatif::ProgressStyle::with_template(template).expect("valid template")
}

/// Run an operation, handing each progress report it sends to `follow` (on a task of its
/// own, so the operation never waits for the terminal).
async fn with_progress<T, F: std::future::Future<Output = Result<T, pond_front::Error>>>(
    mut follow: impl FnMut(Progress) + Send + 'static,
    operation: impl FnOnce(ProgressSink) -> F,
) -> Result<T> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let followed = tokio::spawn(async move {
        while let Some(p) = rx.recv().await {
            follow(p);
        }
    });
    let outcome = operation(Some(tx)).await;
    let _ = followed.await;
    Ok(outcome?)
}

/// Run an operation, showing its progress with a bar of `template` on a terminal's stderr.
async fn with_bar<T, F: std::future::Future<Output = Result<T, pond_front::Error>>>(
    template: &str,
    show: fn(&indicatif::ProgressBar, Progress),
    operation: impl FnOnce(ProgressSink) -> F,
) -> Result<T> {
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(style(template));
        // Drawn on a clock, not only on updates: the last update shows, and the spinner
        // moves through a phase that sends none (a sync's indexing).
        b.enable_steady_tick(std::time::Duration::from_millis(200));
        b
    });
    let shown = bar.clone();
    let outcome = with_progress(
        move |p| {
            if let Some(b) = &shown {
                show(b, p);
            }
        },
        operation,
    )
    .await;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    outcome
}

/// Run an operation that reports named steps, printing each as it starts.
async fn with_steps<T, F: std::future::Future<Output = Result<T, pond_front::Error>>>(
    operation: impl FnOnce(ProgressSink) -> F,
) -> Result<T> {
    let print = |p| {
        if let Progress::Step(step) = p {
            eprintln!("pond: rebuilding {step}");
        }
    };
    with_progress(print, operation).await
}

async fn model(front: &Front, action: ModelAction, out: Out) -> Result<()> {
    let source = match action {
        ModelAction::Show => {
            let info = front.model_show().await?;
            out.print(&render::reports::model(&info.manifest, &info.vectors));
            return Ok(());
        }
        ModelAction::Import {
            dir,
            name,
            query_prefix,
            passage_prefix,
        } => ModelSource::Folder {
            dir,
            name,
            prefixes: query_prefix.zip(passage_prefix),
        },
        ModelAction::Fetch { repo, revision } => ModelSource::Hub { repo, revision },
    };
    let hub = matches!(source, ModelSource::Hub { .. });
    let mut last = String::new();
    let show = move |p| {
        let Progress::Download(d) = p else { return };
        let line = format!(
            "{}: {} MiB of {}",
            d.file,
            d.bytes >> 20,
            d.total.map_or("?".into(), |t| format!("{} MiB", t >> 20))
        );
        if line != last {
            eprint!("\r{line}   ");
            last = line;
        }
    };
    let imported = with_progress(show, |p| front.model_import(source, p)).await;
    if hub {
        eprintln!();
    }
    out.print(&render::reports::imported(&imported?, &front.model_dir()));
    Ok(())
}

/// The commands that need no store: the config file and shell completions. `None` for
/// every other command.
pub fn offline(cli: &mut Cli, settings: &[Shown]) -> Option<std::process::ExitCode> {
    match &cli.command {
        Command::Mcp {
            standalone: false,
            auto_sync_mins,
        } => {
            let auto_sync_mins = *auto_sync_mins;
            return bridge(cli, auto_sync_mins);
        }
        Command::Init { yes, dry_run } => {
            let (yes, dry_run) = (*yes, *dry_run);
            match init(cli, yes, dry_run) {
                // The setup done, the first sync runs as `pond sync` does.
                Ok(()) if !dry_run => {
                    cli.command = Command::Sync(SyncFlags::default());
                    return None;
                }
                Ok(()) => {}
                Err(e) => return Some(failed(&format!("{e:#}"))),
            }
        }
        Command::Config {
            action: ConfigAction::Path,
        } => write_stdout(&format!("{}\n", crate::config::path(cli).display())),
        Command::Config {
            action: ConfigAction::Show { json },
        } => show_config(cli, settings, *json),
        Command::Install {
            client,
            print,
            dry_run,
            json,
        } => return Some(registration(client, true, *print, *dry_run, *json)),
        Command::Uninstall {
            client,
            dry_run,
            json,
        } => return Some(registration(client, false, false, *dry_run, *json)),
        Command::Skill => write_stdout(setup::SKILL),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(*shell, &mut cmd, "pond", &mut std::io::stdout());
        }
        _ => return None,
    }
    Some(std::process::ExitCode::SUCCESS)
}

/// `pond mcp`: a bridge to the shared server (the small binary beside this one in this
/// process's place, else here), or `None` to serve in this process when there is none.
fn bridge(cli: &mut Cli, auto_sync_mins: u64) -> Option<std::process::ExitCode> {
    let attached =
        crate::bridge_of(cli, auto_sync_mins).and_then(|b| b.connect().map(|first| (b, first)));
    match attached {
        Ok((bridge, first)) => {
            drop(first);
            // The small binary beside this one, in this process's place; else here.
            let e = bridge.exec();
            tracing::debug!("bridging in this process: {e}");
            let first = match bridge.connect() {
                Ok(s) => s,
                Err(e) => return Some(failed(&e)),
            };
            // Once stdin is being read, falling back is no longer possible.
            if let Err(e) = bridge.run(first) {
                return Some(failed(&e));
            }
            Some(std::process::ExitCode::SUCCESS)
        }
        Err(e) => {
            // No shared server: serve in this process, as before.
            eprintln!("pond: {e}; serving in this process instead");
            cli.command = Command::Mcp {
                auto_sync_mins,
                standalone: true,
            };
            None
        }
    }
}

/// `pond config show`: every setting, its value and where it came from.
fn show_config(cli: &Cli, settings: &[Shown], json: bool) {
    if json {
        let all: serde_json::Map<String, serde_json::Value> = settings
            .iter()
            .map(|s| {
                let v = serde_json::json!({"value": s.value, "from": s.origin.as_str()});
                (s.key.to_owned(), v)
            })
            .collect();
        write_stdout(&format!("{}\n", render::json(&all)));
    } else {
        let mut text = format!("# {}\n", crate::config::path(cli).display());
        let width = settings.iter().map(|s| s.key.len()).max().unwrap_or(0);
        for s in settings {
            text += &format!("{:width$}  {}  ({})\n", s.key, s.value, s.origin.as_str());
        }
        write_stdout(&text);
    }
}

/// `pond install` (`add`, or `--print` its entry) or `pond uninstall`, reported.
fn registration(
    client: &str,
    add: bool,
    print: bool,
    dry_run: bool,
    json: bool,
) -> std::process::ExitCode {
    let client = setup::Client::named(client).expect("clap checked the name");
    let (home, exe) = match setup::context() {
        Ok(c) => c,
        Err(e) => return failed(&e),
    };
    if print {
        write_stdout(&setup::install::snippet(client, &home, &exe));
        return std::process::ExitCode::SUCCESS;
    }
    match setup::register(client, &home, &exe, add, dry_run) {
        Ok(r) => {
            print_installed(&r, json);
            std::process::ExitCode::SUCCESS
        }
        Err(e) => failed(&e),
    }
}

fn failed(message: &str) -> std::process::ExitCode {
    eprintln!("pond: {message}");
    std::process::ExitCode::FAILURE
}

fn print_installed(r: &setup::Installed, json: bool) {
    if json {
        write_stdout(&format!("{}\n", render::json(r)));
        return;
    }
    let mut text = String::new();
    for c in &r.changes {
        let backup = c
            .backup
            .as_deref()
            .map(|b| format!(" (backup: {b})"))
            .unwrap_or_default();
        text += &format!("{}: {}{backup}\n", c.path, c.action);
    }
    write_stdout(&text);
}

/// `pond init` before its first sync ([`setup::init`]): its questions asked on the
/// terminal (none with `--yes` or `--dry-run`), what it does printed.
fn init(cli: &Cli, yes: bool, dry_run: bool) -> Result<()> {
    let interactive = std::io::stdin().is_terminal();
    if !yes && !dry_run && !interactive {
        anyhow::bail!("pond init asks before each change: run it on a terminal, or with --yes (or --dry-run to see them)");
    }
    let mut ask = |question: &str| -> Result<bool, String> {
        if yes || dry_run {
            return Ok(true);
        }
        confirm(question).map_err(|e| format!("{e:#}"))
    };
    let mut say = |said: setup::init::Said| match said {
        setup::init::Said::Line(line) => println!("{line}"),
        setup::init::Said::Installed(done) => print_installed(&done, false),
    };
    let (home, exe) = setup::context().map_err(anyhow::Error::msg)?;
    let steps = setup::init::Init {
        home: &home,
        exe: &exe,
        dry_run,
        config: &crate::config::path(cli),
        template: &crate::config::template(),
    };
    setup::init::run(&steps, &mut ask, &mut say).map_err(anyhow::Error::msg)?;
    if dry_run {
        println!(
            "then: pond sync (every client's sessions into {})",
            cli.settings
                .store
                .clone()
                .unwrap_or_else(crate::default_store)
                .display()
        );
    }
    Ok(())
}

/// The background sync of a serving front: every `mins` minutes (0: none), of every
/// client's homes.
fn auto_sync_of(mins: u64, sync: &SyncSettings) -> Option<AutoSync> {
    (mins > 0).then(|| AutoSync {
        every: Duration::from_secs(mins * 60),
        request: SyncRequest {
            sources: params::sources(None, None, &sync.sources),
            skip_index: false,
            exclude_projects: sync.exclude_projects.clone(),
        },
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_terminal_is_shown_control_characters_not_sent_them() {
        assert_eq!(
            super::for_terminal("red \x1b[31mtext\x1b]0;title\x07\n\tnext\r"),
            "red ␛[31mtext␛]0;title␇\n\tnext␍"
        );
        assert_eq!(super::for_terminal("plain\n"), "plain\n");
        assert_eq!(
            super::for_terminal("del\x7f c1\u{9b}"),
            "del\u{2421} c1\u{fffd}"
        );
    }
}
