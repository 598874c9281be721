//! `swarmtop guard [--max-depth N] [--max-children N] [--max-cost USD]`: Claude Code's `PreToolUse`
//! hook that refuses a spawn that would pass a limit (`act::hook` says what the CLI sends and
//! honours); `--install [--user | --project]` and `--uninstall` edit settings.json.
//!
//! The caller's depth and children and the tree's spend come from the session's transcripts, read
//! through the pipeline `stats` uses. A call that spawns nothing, and every call when no limit is
//! set, passes without a word. Bad input is a one-line error (exit 1), which Claude Code reports
//! without blocking the call: a broken guard must not stop the user's work.

use std::io::Read as _;
use std::path::Path;
use std::process::ExitCode;

use color_eyre::eyre::{Result, WrapErr, bail, eyre};

use super::cli::{GlobalOpts, GuardArgs};
use super::ingest::{ingest, nothing};
use crate::act::hook::{self, Caller, HookInput};
use crate::act::record;
use crate::act::settings::{self, shell_quote};
use crate::act::{Breach, Limits, limits};
use crate::model::format_usd;
use crate::pipeline::Config;
use crate::wire::Clean;

pub fn run(args: &GuardArgs, global: &GlobalOpts, config: Config) -> Result<ExitCode> {
    if args.install || args.uninstall {
        return install(args, global);
    }
    let limits = args.limits.limits();
    if let Some(url) = &args.server {
        if limits.is_empty() {
            bail!("a guard needs a limit: --max-depth, --max-children or --max-cost");
        }
        let mut said = |line: String| {
            let _ = super::print(format!("{line}\n").as_bytes());
        };
        crate::act::served::guard(url, &config, &limits, &mut said).map_err(|e| eyre!(e))?;
        return Ok(ExitCode::SUCCESS);
    }
    let input = read_input()?;
    if !input.spawns() || limits.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    let transcripts = input.transcripts().map_err(|e| eyre!(e))?;
    let pipeline = ingest(&transcripts.inputs(), config.figures(), &mut nothing())
        .wrap_err_with(|| format!("reading the session's transcripts at {}", Clean::path(&transcripts.session_file)))?;
    let who = transcripts.caller.thread_id();
    let Some(caller) = pipeline.router.find(who) else {
        bail!("the calling agent {} is not in the session's transcripts", crate::wire::sanitize_line(who));
    };
    if let Some(breach) = limits::spawn_breach(&pipeline.model, caller, input.tool_use_id.as_deref(), &limits) {
        let why = reason(&breach, &transcripts.caller, &limits);
        super::print(hook::deny(&why).as_bytes())?;
        let mut act = record::act("deny", "guard", "hook", Some(&input.session_id), who);
        act.detail = format!("{} {}", input.tool_name, input.tool_use_id.as_deref().unwrap_or_default());
        act.outcome = format!("denied: {breach}");
        if let Err(e) = record::keep(&act) {
            // The refusal stands; Claude Code shows a hook's stderr in its transcript mode only.
            eprintln!("swarmtop guard: the refusal was not kept in the run store: {e}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The hook's JSON from stdin, bounded.
fn read_input() -> Result<HookInput> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(hook::MAX_INPUT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .wrap_err("reading the hook's input")?;
    if bytes.len() > hook::MAX_INPUT_BYTES {
        bail!("the hook's input is over {} MiB", hook::MAX_INPUT_BYTES >> 20);
    }
    HookInput::parse(&bytes).map_err(|e| eyre!(e))
}

/// What the refused model reads: which limit, and what to do instead.
fn reason(breach: &Breach, caller: &Caller, limits: &Limits) -> String {
    let (flag, advice) = match breach {
        Breach::Depth { .. } => (
            format!("--max-depth {}", limits.max_depth.unwrap_or_default()),
            "Sub-agents may not be nested deeper. Do this part of the work yourself.",
        ),
        Breach::Children { .. } => (
            format!("--max-children {}", limits.max_children.unwrap_or_default()),
            "This agent may not spawn more sub-agents. Do the rest of the work yourself.",
        ),
        Breach::Cost { max, .. } => (
            format!("--max-cost {}", format_usd(Some(*max))),
            "This session has spent its budget: spawn no more sub-agents, finish with what you have.",
        ),
    };
    let who = match caller {
        Caller::Session(_) => "the session".to_owned(),
        Caller::Agent(id) => format!("sub-agent {id}"),
    };
    format!("swarmtop guard refused this spawn by {who}: {breach} ({flag}). {advice}")
}

/// The hook command to install: this binary by absolute path, with the limits (and the price
/// table) it was given.
fn hook_command(limits: &Limits, global: &GlobalOpts) -> Result<String> {
    let exe = std::env::current_exe().wrap_err("finding the swarmtop binary")?;
    let mut words = vec![shell_quote(&exe.to_string_lossy()), "guard".to_owned()];
    if let Some(n) = limits.max_depth {
        words.push(format!("--max-depth {n}"));
    }
    if let Some(n) = limits.max_children {
        words.push(format!("--max-children {n}"));
    }
    if let Some(usd) = limits.max_cost {
        words.push(format!("--max-cost {usd}"));
    }
    if let Some(p) = &global.pricing {
        let p = std::path::absolute(p).wrap_err("finding the price table")?;
        words.push(format!("--pricing {}", shell_quote(&p.to_string_lossy())));
    }
    Ok(words.join(" "))
}

fn install(args: &GuardArgs, global: &GlobalOpts) -> Result<ExitCode> {
    let path = settings::path(args.scope.project).map_err(|e| eyre!(e))?;
    let shown = Clean::path(&path);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(eyre!(e).wrap_err(format!("reading {shown}"))),
    };
    let limits = args.limits.limits();
    let ours = if args.install {
        if limits.is_empty() {
            bail!("give the guard a limit to install: --max-depth N, --max-children N or --max-cost USD");
        }
        Some((settings::spawn_matcher(), hook_command(&limits, global)?))
    } else {
        None
    };
    let edited = settings::edit(text.as_deref(), ours.as_ref().map(|(m, c)| (m.as_str(), c.as_str())))
        .map_err(|e| eyre!("{shown}: {e}; left as it is"))?;
    let said = match (&edited, args.install) {
        (None, true) => format!("the guard is in {shown} already"),
        (None, false) => format!("no swarmtop guard in {shown}"),
        (Some(_), true) => format!("guard added to {shown}: {}", ours.map(|(_, c)| c).unwrap_or_default()),
        (Some(_), false) => format!("guard removed from {shown}"),
    };
    if let Some(new) = edited {
        write_atomically(&path, new.as_bytes()).wrap_err_with(|| format!("writing {shown}"))?;
    }
    super::print(format!("{said}\n").as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// Replaces the file whole or not at all (Claude Code may read it at any moment), keeping its mode.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().map_or_else(|| "settings.json".into(), |n| n.to_string_lossy().into_owned());
    let staging = dir.join(format!(".{name}.swarmtop-{}", std::process::id()));
    std::fs::write(&staging, bytes)?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(&staging, meta.permissions())?;
    }
    std::fs::rename(&staging, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&staging);
    })
}
