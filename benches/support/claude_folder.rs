//! A Claude Code project folder for the ccusage comparison: `copies` copies of the real 2.1.39
//! session of `tests/fixtures/claude-2.1.39/` (a parent transcript, a Task sub-agent and a
//! compaction side-chain), each re-stamped with fresh ids so that no tool can merge two copies:
//! session and line UUIDs, `message.id`, `requestId`, tool-use ids and agent ids.
//!
//! Every copy keeps the fixture's known figures: 12,976,160 tokens and $10.11369555.

use std::path::{Path, PathBuf};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/claude-2.1.39");
const SESSION: &str = "4d5611e5-241a-462a-8d15-5122611a9569";
/// Agent ids of the fixture's sub-agent files (`agent-<id>.jsonl`), as the transcripts name them.
const AGENTS: [&str; 2] = ["a2898e3", "acompact-e1f845"];
/// The project folder name Claude Code derives from the session's cwd.
const PROJECT: &str = "-home-USER-projects-spotter-worktrees-spotter-dov";

/// Tokens and cost of one copy, as the fixture's README and issue 7 give them.
pub const TOKENS_PER_SESSION: u64 = 12_976_160;
pub const COST_PER_SESSION: &str = "10.11369555";

/// Writes the folder as `<root>/projects/<project>/…` (the layout under `CLAUDE_CONFIG_DIR`);
/// returns the projects folder.
pub fn write(root: &Path, copies: u32) -> std::io::Result<PathBuf> {
    let projects = root.join("projects");
    let project = projects.join(PROJECT);
    let parent = std::fs::read(Path::new(FIXTURE).join(format!("{SESSION}.jsonl")))?;
    let agents: Vec<(&str, Vec<u8>)> = AGENTS
        .iter()
        .map(|a| {
            Ok((
                *a,
                std::fs::read(Path::new(FIXTURE).join(SESSION).join("subagents").join(format!("agent-{a}.jsonl")))?,
            ))
        })
        .collect::<std::io::Result<_>>()?;
    for copy in 1..=copies {
        let stamp = Stamp::new(copy);
        let session = String::from_utf8(stamp.apply(SESSION.as_bytes())).expect("ids stay ASCII");
        let subagents = project.join(&session).join("subagents");
        std::fs::create_dir_all(&subagents)?;
        std::fs::write(project.join(format!("{session}.jsonl")), stamp.apply(&parent))?;
        for (agent, text) in &agents {
            let name = String::from_utf8(stamp.apply(agent.as_bytes())).expect("ids stay ASCII");
            std::fs::write(subagents.join(format!("agent-{name}.jsonl")), stamp.apply(text))?;
        }
    }
    Ok(projects)
}

/// Bytes of every file below `dir`.
pub fn bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() { bytes(&p) } else { e.metadata().map_or(0, |m| m.len()) }
        })
        .sum()
}

/// One copy's id mapping: a bijection on each id shape, different for every copy.
struct Stamp {
    copy: u64,
}

const BASE62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

impl Stamp {
    fn new(copy: u32) -> Self {
        Self { copy: u64::from(copy) }
    }

    /// The text with every id re-stamped; everything else byte for byte.
    fn apply(&self, text: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len());
        let mut i = 0;
        while i < text.len() {
            if let Some(n) = uuid_at(text, i) {
                out.extend_from_slice(&text[i..i + 24]);
                self.hex(&text[i + 24..i + n], 0x9e37_79b9_7f4b, &mut out);
                i += n;
            } else if let Some(n) = base62_id_at(text, i) {
                // msg_…, req_…, toolu_…: the last four characters move by a per-copy offset.
                let body = &text[i..i + n];
                out.extend_from_slice(&body[..n - 4]);
                let value = body[n - 4..].iter().fold(0u64, |v, &c| v * 62 + base62_digit(c));
                let moved = (value + self.copy * 7_919) % 62u64.pow(4);
                for k in (0..4).rev() {
                    out.push(BASE62[(moved / 62u64.pow(k) % 62) as usize]);
                }
                i += n;
            } else if let Some((agent, n)) =
                AGENTS.iter().find_map(|a| text[i..].starts_with(a.as_bytes()).then_some((a, a.len())))
            {
                // The hex tail of an agent id (`a2898e3` → `a` + 6 hex digits).
                let tail = agent.len() - 6;
                out.extend_from_slice(&agent.as_bytes()[..tail]);
                self.hex(&agent.as_bytes()[tail..], 0x9e_3779, &mut out);
                i += n;
            } else {
                out.push(text[i]);
                i += 1;
            }
        }
        out
    }

    /// Lower-case hex digits moved by `copy × step`, same width.
    fn hex(&self, digits: &[u8], step: u64, out: &mut Vec<u8>) {
        let bits = 4 * digits.len() as u32;
        let value = digits.iter().fold(0u64, |v, &c| (v << 4) | u64::from(hex_digit(c)));
        let moved = value.wrapping_add(self.copy.wrapping_mul(step)) & ((1u64 << bits) - 1);
        let _ = std::io::Write::write_fmt(out, format_args!("{moved:0width$x}", width = digits.len()));
    }
}

fn hex_digit(c: u8) -> u8 {
    match c {
        b'0'..=b'9' => c - b'0',
        b'a'..=b'f' => c - b'a' + 10,
        _ => c - b'A' + 10,
    }
}

fn base62_digit(c: u8) -> u64 {
    BASE62.iter().position(|&b| b == c).unwrap_or(0) as u64
}

/// Length of a lower-case UUID starting at `i` (36), if there is one.
fn uuid_at(text: &[u8], i: usize) -> Option<usize> {
    let s = text.get(i..i + 36)?;
    let ok = s.iter().enumerate().all(|(k, &c)| {
        if matches!(k, 8 | 13 | 18 | 23) { c == b'-' } else { c.is_ascii_digit() || (b'a'..=b'f').contains(&c) }
    });
    (ok && (i == 0 || !text[i - 1].is_ascii_alphanumeric())).then_some(36)
}

/// Length of an Anthropic id (`msg_…`, `req_…`, `toolu_…`) starting at `i`, if there is one.
fn base62_id_at(text: &[u8], i: usize) -> Option<usize> {
    let rest = &text[i..];
    let prefix = [&b"msg_"[..], b"req_", b"toolu_"].into_iter().find(|p| rest.starts_with(p))?;
    if i > 0 && text[i - 1].is_ascii_alphanumeric() {
        return None;
    }
    let body = rest[prefix.len()..].iter().take_while(|c| c.is_ascii_alphanumeric()).count();
    (body >= 12).then_some(prefix.len() + body)
}
